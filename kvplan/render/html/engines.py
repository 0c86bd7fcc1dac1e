"""Section 3: where each GPU's memory goes under each engine: bars on one scale and the
term-by-term table (GPU memory, the engine's fraction, weights, each overhead term, the KV budget)."""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.engines.base import BudgetTerm
from kvplan.render import human_bytes
from kvplan.render.capacity import CapacityPayload
from kvplan.render.html.bars import Bar, Segment, bar_chart, legend
from kvplan.render.html.markup import Cell, Html, badge, esc, join, num, section, size, table, tag
from kvplan.render.html.style import OVERHEAD_COLORS, TERM_COLORS
from kvplan.render.report import ReportPayload

OUTSIDE = "outside the engine's memory fraction"
UNACCOUNTED = "not accounted for (KV budget given)"
KV = "KV budget"
Terms = tuple[BudgetTerm, ...]


def first_dtype(payload: ReportPayload) -> list[tuple[CapacityPayload, Terms]]:
    """One (answer, budget terms) per engine: those of the first KV dtype (the budget does not depend on it)."""
    engines = len(payload.inputs.engines)
    return [(p, b.terms) for p, b in zip(payload.capacity[:engines], payload.budgets[:engines], strict=True)]


def remainder(p: CapacityPayload, terms: Terms) -> tuple[str, int] | None:
    """GPU memory the engine leaves outside its fraction (or, with a given budget, what is unaccounted)."""
    if p.gpu_memory_bytes is None or p.error:
        return None
    rest = p.gpu_memory_bytes - sum(t.bytes for t in terms) - max(p.kv_budget_bytes_per_gpu, 0)
    return (UNACCOUNTED if p.overhead is None else OUTSIDE, rest) if rest > 0 else None


def _term_color(name: str, names: list[str]) -> str:
    if name.startswith("weights"):
        return TERM_COLORS["weights"]
    return OVERHEAD_COLORS[names.index(name) % len(OVERHEAD_COLORS)]


def _bar(p: CapacityPayload, terms: Terms, rest: tuple[str, int] | None, names: list[str]) -> Bar:
    kv = p.kv_budget_bytes_per_gpu
    segments = [Segment(rest[0], rest[1], TERM_COLORS["fraction"])] if rest else []
    segments += [Segment(t.name, t.bytes, _term_color(t.name, names), not t.exact) for t in terms]
    segments.append(Segment(KV, kv, TERM_COLORS["kv"]))
    state = f"KV budget {human_bytes(kv)}" if kv > 0 else f"KV budget {num(kv)} B: nothing left for the KV cache"
    gpu = p.gpu_memory_bytes
    return Bar(title=f"{p.engine_version}: {state}", segments=tuple(segments), marker=gpu,
               marker_label=f"GPU {human_bytes(gpu)}" if gpu else "")


def _overhead_rows(caps: Sequence[CapacityPayload]) -> list[list[Cell]]:
    """The overhead's total and four of its parts (the budget terms above are the same bytes, by source)."""
    rows: list[list[Cell]] = [["(overhead, all terms but the weights)", "",
                               *(size(p.overhead_bytes_per_gpu) for p in caps)]]
    parts = [None if (o := p.overhead) is None else
             (o.non_torch_bytes, o.activation_bytes, o.cuda_graph_bytes, o.weights_extra_bytes) for p in caps]
    for i, label in enumerate(("non-torch", "activations", "CUDA graphs",
                               "load-time weight extras: rotary caches, kernel layouts")):
        rows.append([f"(of which {label})", "", *("-" if v is None else size(v[i]) for v in parts)])
    return rows


def _waterfall(answered: Sequence[tuple[CapacityPayload, Terms]], rests: Sequence[tuple[str, int] | None],
               names: list[str]) -> Html:
    caps = [p for p, _ in answered]
    terms = [{t.name: t for t in ts} for _, ts in answered]
    first = {n: next(t[n] for t in terms if n in t) for n in names}
    rows: list[list[Cell]] = [["GPU memory", "the GPU catalog, or --gpu-mem", *(size(p.gpu_memory_bytes) for p in caps)],
                              ["− left outside the engine's memory fraction", "the engine's rule",
                               *(size(r[1]) if r else "-" for r in rests)]]
    rows += [[f"− {n}", Html(f"{badge(first[n].exact)} {esc(first[n].source)}"),
              *(size(t[n].bytes) if n in t else "-" for t in terms)] for n in names]
    rows.append(["(weights, all weight terms)", "", *(size(p.weights_bytes_per_gpu) for p in caps)])
    rows += _overhead_rows(caps)
    rows.append(["= KV budget per GPU", "given" if caps[0].overhead is None and caps[0].gpu_memory_bytes is None
                 else "what is left", *(size(p.kv_budget_bytes_per_gpu) for p in caps)])
    return table(("", "how it is known", *(p.engine_version for p in caps)), rows, numeric=range(2, 2 + len(caps)),
                 row_classes=[""] * (len(rows) - 7) + ["sub"] * 6 + ["total"])


def memory_section(payload: ReportPayload) -> Html:
    both = first_dtype(payload)
    answered = [(p, terms) for p, terms in both if not p.error]
    names = list(dict.fromkeys(t.name for _, terms in answered for t in terms))
    body: list[str] = []
    if answered:
        rests = [remainder(p, terms) for p, terms in answered]
        bars = [_bar(p, terms, rest, names) for (p, terms), rest in zip(answered, rests, strict=True)]
        entries = dict.fromkeys((s.name, s.color, s.estimate) for bar in bars for s in bar.segments)
        body += [tag("figure", join([tag("figcaption", "GPU memory per GPU, by engine (hatched: kvplan's estimates)"),
                                     bar_chart(bars, human_bytes),
                                     legend(sorted(entries, key=_legend_order))]), "wide"),
                 _waterfall(answered, rests, names)]
    body += [tag("p", f"{p.engine_version}: {p.error}", "warn") for p, _ in both if p.error]
    return section("memory", 3, "Where each GPU's memory goes", "The GPU's memory, what the engine keeps outside "
                   "its memory fraction, the weights and each overhead term, and the KV budget that is left. "
                   "Terms marked estimate are kvplan's model; pass --kv-budget with the engine's logged KV memory "
                   "to make every number downstream exact.", body)


def _legend_order(entry: tuple[str, str, bool]) -> int:
    """As in the bars: what is left outside the fraction, the weights, the overhead terms, the KV budget."""
    name = entry[0]
    return 0 if name in (OUTSIDE, UNACCOUNTED) else 1 if name.startswith("weights") else 3 if name == KV else 2
