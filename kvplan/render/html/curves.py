"""Section 5: max concurrency vs context (per engine and KV dtype), KV memory of one sequence vs
context with each engine's KV budget, and capacity vs TP; each chart with the numbers behind it."""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.render.html.markup import Cell, Html, esc, join, num, section, size, table, tag
from kvplan.render.html.style import DASHES, engine_color
from kvplan.render.html.svg import Axis, Series, line_chart
from kvplan.render.report import ReportPayload
from kvplan.render.report_curves import ContextCurve, TpCurve

LINE_STYLES = ("solid", "dashed", "dotted", "double")
NEUTRAL = "#334155"
Key = tuple[str | None, str, str]  # (engine, or None for a line of no engine; KV dtype; label)


def tokens(value: float) -> str:
    """4096 -> 4k, 131072 -> 128k (k = 1,024, as on the command line)."""
    n = int(value)
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def _versions(payload: ReportPayload) -> dict[str, str]:
    return {e.engine: e.version for e in payload.inputs.engines}


def _style(payload: ReportPayload, engine: str | None, kv_dtype: str) -> tuple[str, int]:
    engines = [e.engine for e in payload.inputs.engines]
    color = NEUTRAL if engine is None else engine_color(engine, engines.index(engine))
    return color, payload.inputs.kv_dtypes.index(kv_dtype) % len(DASHES)


def short_bytes(value: float) -> str:
    """64 MiB, 2.5 GiB: three digits at most (chart labels; the tables hold the exact bytes)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} B"


def _legend(payload: ReportPayload, keys: list[Key],
            extra: Sequence[tuple[str, str, str]] = ()) -> Html:
    """Line swatches: (engine, KV dtype, label) keys, then (colour, CSS border style, label) extras."""
    entries = [(*_swatch(payload, engine, kv_dtype), label) for engine, kv_dtype, label in keys] + list(extra)
    spans = [f'<span><span class="sw line" style="border-top-color: {color}; border-top-style: {style}"></span>'
             f"{esc(label)}</span>" for color, style, label in entries]
    return Html('<div class="legend">' + "".join(spans) + "</div>")


def _swatch(payload: ReportPayload, engine: str | None, kv_dtype: str) -> tuple[str, str]:
    color, dash = _style(payload, engine, kv_dtype)
    return color, LINE_STYLES[dash]


def _figure(caption: str, chart: Html, legend: Html, numbers: Html) -> Html:
    return tag("figure", join([tag("figcaption", caption), chart, legend,
                               tag("details", join([tag("summary", "the numbers behind this chart"), numbers]))]))


def _series(payload: ReportPayload, curves: Sequence[ContextCurve | TpCurve]) -> tuple[list[Series], list[Key]]:
    """One line per (engine, KV dtype): requests that fit, against the context or the TP size."""
    versions, out = _versions(payload), []
    keys: list[Key] = []
    for c in curves:
        label = f"{versions[c.engine]} · {c.kv_dtype}"
        color, dash = _style(payload, c.engine, c.kv_dtype)
        xy = [(p.max_model_len, p.requests_at_max_model_len) for p in c.points] if isinstance(c, ContextCurve) else \
            [(p.tp, p.requests_at_max_model_len) for p in c.points]
        points = tuple((float(x), None if y is None else float(y)) for x, y in xy)
        out.append(Series(label, points, color, DASHES[dash]))
        keys.append((c.engine, c.kv_dtype, label))
    return out, keys


def _concurrency(payload: ReportPayload) -> Html:
    curves = payload.curves.concurrency_vs_context
    series, keys = _series(payload, curves)
    lengths = [p.max_model_len for p in curves[0].points]
    rows = [[num(n), *(_cell(c, i) for c in curves)] for i, n in enumerate(lengths)]
    numbers = table(("max_model_len", *(k[2] for k in keys)), rows, numeric=range(len(keys) + 1))
    chart = line_chart(series, Axis("max_model_len (tokens)", tokens), Axis("max concurrency (requests)", num),
                       "Max concurrency vs context")
    return _figure("Max concurrency vs context", chart, _legend(payload, keys), numbers)


def _cell(curve: ContextCurve, i: int) -> Html:
    p = curve.points[i]
    if p.requests_at_max_model_len is None:
        return Html("-")
    return Html(f"{num(p.requests_at_max_model_len)}<span class=\"u\">{num(p.kv_tokens)} tokens</span>")


def _memory(payload: ReportPayload) -> Html:
    curves, versions = payload.curves.kv_memory_vs_context, _versions(payload)
    series = [Series(f"one sequence, {c.kv_dtype}", tuple((float(p.seq_len), float(p.bytes_per_sequence_paged_per_gpu))
                                                         for p in c.points), NEUTRAL,
                     DASHES[_style(payload, None, c.kv_dtype)[1]]) for c in curves]
    refs = [(f"{versions[b.engine]} KV budget", float(b.kv_budget_bytes_per_gpu),
             _style(payload, b.engine, payload.inputs.kv_dtypes[0])[0]) for b in payload.curves.kv_budgets]
    keys: list[Key] = [(None, c.kv_dtype, f"one sequence per GPU, paged, {c.kv_dtype}") for c in curves]
    extra = [(color, "dashed", f"{label} {short_bytes(v)}") for label, v, color in refs]
    rows = [[num(p.seq_len), *(size(v) for c in curves for v in (c.points[i].bytes_per_sequence_per_gpu,
                                                                  c.points[i].bytes_per_sequence_paged_per_gpu))]
            for i, p in enumerate(curves[0].points)]
    numbers = table(("tokens", *(f"{c.kv_dtype} {k} (B)" for c in curves for k in ("exact", "paged"))), rows,
                    numeric=range(1 + 2 * len(curves)))
    chart = line_chart(series, Axis("tokens in the sequence", tokens), Axis("KV bytes per GPU", short_bytes, 4),
                       "KV memory vs context", refs)
    return _figure("KV memory of one sequence vs the KV budget", chart, _legend(payload, keys, extra), numbers)


def _tp(payload: ReportPayload) -> Html:
    curves = payload.curves.capacity_vs_tp
    series, keys = _series(payload, curves)
    rows: list[list[Cell]] = [[k[2], num(p.tp), size(p.kv_budget_bytes_per_gpu), num(p.kv_tokens),
                               num(p.requests_at_max_model_len), p.note or ""]
                              for c, k in zip(curves, keys, strict=True) for p in c.points]
    numbers = table(("engine · KV", "tp", "KV budget / GPU (B)", "KV tokens", "requests that fit", "note"), rows,
                    numeric=(1, 2, 3, 4))
    length = tokens(curves[0].max_model_len) if curves else "-"
    chart = line_chart(series, Axis("tensor-parallel size", lambda v: f"{int(v)}"),
                       Axis(f"{length}-token requests that fit", num, may_log=False), "Capacity vs TP")
    return _figure(f"Capacity vs TP ({length}-token requests)", chart, _legend(payload, keys), numbers)


def curves_section(payload: ReportPayload) -> Html:
    body = ['<div class="charts">', _concurrency(payload), _memory(payload), _tp(payload), "</div>"]
    return section("curves", 5, "Curves", "The same planning at other lengths and TP sizes (everything else as "
                   "above). vLLM logs its max concurrency; for the other engines the curve is the number of "
                   "max_model_len requests that fit at once. The y axis turns logarithmic when values span more "
                   "than 64×.", body)
