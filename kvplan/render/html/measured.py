"""Section 6: `kvplan probe --json` files beside the prediction (allocated vs predicted bytes per
model and layer group, this model's measured bytes per token against kvplan's, the kernel check,
bandwidth against the GPU's peak); section 7: warnings, notes, and how to read the JSON back.

A probe file is external JSON (kvplan.workflows.probe_file checked the keys it needs; a file from another
kvplan release may lack the others): it is read here with typed accessors, a key it lacks shows as "-"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kvplan.render.html.bars import Bar, Segment, bar_chart
from kvplan.render.html.markup import Cell, Html, esc, items, join, num, section, size, table, tag
from kvplan.render.report import ProbeCheckRow, ProbeFile, ReportPayload

DECODE_COLOR = "#0891b2"
Row = Mapping[str, object]


def _int(row: Row, key: str) -> int | None:
    value = row.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(row: Row, key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(row: Row, key: str, default: str = "-") -> str:
    value = row.get(key)
    return value if isinstance(value, str) else default


def _list(row: Row, key: str) -> list[Row]:
    value = row.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _texts(row: Row, key: str) -> list[str]:
    value = row.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.2f} ms"


def _gbps(value: float | None, fraction: float | None) -> Html:
    if value is None:
        return Html("-")
    return Html(f"{value:,.0f}" + (f'<span class="u">{_pct(fraction)} of peak</span>' if fraction else ""))


def _memory_row(r: Row) -> list[Cell]:
    return [_text(r, "model"), f"{_int(r, 'tp_rank')} of {_int(r, 'tp')}", _text(r, "kv_dtype"),
            f"{num(_int(r, 'num_blocks'))} × {_int(r, 'block_size')}", num(_int(r, "num_seqs")),
            size(_int(r, "predicted_bytes")), size(_int(r, "measured_bytes")), size(_int(r, "reserved_bytes")),
            size(_int(r, "driver_bytes")), _pct(_float(r, "error")),
            tag("span", "yes", "ok") if r.get("ok") else tag("span", "NO", "bad")]


def _kernel_row(r: Row) -> list[Cell]:
    return [_text(r, "model"), _text(r, "kv_dtype"), _text(r, "kernel_check"),
            _gbps(_float(r, "write_gbps"), _float(r, "write_fraction_of_peak")),
            _gbps(_float(r, "decode_gbps"), _float(r, "decode_fraction_of_peak")), _ms(_float(r, "decode_step_s")),
            size(_int(r, "decode_step_bytes")), _ms(_float(r, "decode_floor_s")), _ms(_float(r, "decode_floor_peak_s")),
            size(_int(r, "kv_bytes"))]


def _group_rows(results: Sequence[Row]) -> list[list[Cell]]:
    return [[_text(r, "model"), _text(r, "kv_dtype"), _text(g, "kind"), num(_int(g, "num_layers")),
             size(_int(g, "predicted_bytes")), size(_int(g, "measured_bytes")), size(_int(g, "reserved_bytes")),
             size(_int(g, "driver_bytes")), _pct(_float(g, "error"))] for r in results for g in _list(r, "groups")]


def _check_rows(checks: Sequence[ProbeCheckRow]) -> list[list[Cell]]:
    def verdict(c: ProbeCheckRow) -> Cell:
        if c.match is None:
            return c.compared_with
        word = tag("span", "equal" if c.match else "DIFFERENT", "ok" if c.match else "bad")
        return Html(f"{word} <span class=\"u\">{esc(c.compared_with)}</span>")
    same = {True: "yes", False: "no", None: "unknown"}
    return [[c.model, c.kv_dtype, num(c.tp), same[c.same_model], num(c.measured_bytes_per_token),
             num(c.kvplan_bytes_per_token), verdict(c)] for c in checks]


def _bandwidth(results: Sequence[Row], peak: float | None) -> Html:
    rows = [(r, gbps) for r in results if (gbps := _float(r, "decode_gbps"))]
    if not rows:
        return Html("")
    bars = [Bar(f"{_text(r, 'model')} · {_text(r, 'kv_dtype')}: decode {gbps:,.0f} GB/s",
                (Segment("decode", gbps, DECODE_COLOR),), peak, f"peak {peak:,.0f} GB/s" if peak else "")
            for r, gbps in rows]
    return tag("figure", join([tag("figcaption", "Paged decode bandwidth against the GPU's peak"),
                               bar_chart(bars, lambda v: f"{v:,.0f} GB/s")]), "wide")


def _title(i: int, probe: ProbeFile) -> str:
    peak = _float(probe, "peak_gbps")
    return (f"Probe {i + 1}: {_text(probe, 'device', '?')}, tolerance {probe.get('tolerance', 0)}"
            + (f", peak {peak:,.0f} GB/s" if peak else "") + (", every row passes" if probe.get("ok") else ""))


def _notes(probe: ProbeFile, results: Sequence[Row]) -> list[str]:
    notes = [*_texts(probe, "skipped"), *(f"{_text(r, 'model')} ({_text(r, 'kv_dtype')}): {n}" for r in results
                                          for n in _texts(r, "kernel_notes"))]
    return notes + ([note] if (note := _text(probe, "bandwidth_note", "")) else [])


def _one_probe(i: int, probe: ProbeFile, checks: Sequence[ProbeCheckRow]) -> Html:
    results = _list(probe, "results")
    mine = {c.result for c in checks if c.same_model}
    marks = ["mine" if j in mine else "" for j in range(len(results))]
    return join([tag("h3", _title(i, probe)),
                 table(("model", "rank", "KV", "blocks × block", "seqs", "predicted (B)", "allocated (B)",
                        "reserved (B)", "driver (B)", "error", "ok"), [_memory_row(r) for r in results],
                       (4, 5, 6, 7, 8, 9), "", marks),
                 table(("model", "KV", "tp", "this model?", "measured B / token", "kvplan B / token", "check"),
                       _check_rows(checks), (2, 4, 5)),
                 table(("model", "KV", "kernels", "write GB/s", "decode GB/s", "decode step (measured)", "bytes it read",
                        "all KV at decode GB/s", "all KV at peak GB/s", "KV bytes"), [_kernel_row(r) for r in results],
                       range(3, 10)),
                 tag("details", join([tag("summary", "per layer group"), table(
                     ("model", "KV", "kind", "layers", "predicted (B)", "allocated (B)", "reserved (B)", "driver (B)",
                      "error"), _group_rows(results), range(3, 9))])),
                 _bandwidth(results, _float(probe, "peak_gbps")), items(_notes(probe, results))])


def measured_section(payload: ReportPayload) -> Html:
    if not payload.probe:
        body = [tag("p", "No probe file given. `kvplan probe --gpu 0 --json > probe.json` allocates real caches in "
                         "the engines' layouts and measures them; `--probe probe.json` puts the measurement here.")]
    else:
        body = [_one_probe(i, p, [c for c in payload.probe_checks if c.probe == i]) for i, p in enumerate(payload.probe)]
    return section("measured", 6, "Measured", "Predicted vs allocated bytes from `kvplan probe --json`. A probe "
                   "row of this model (highlighted) must hold exactly kvplan's bytes per token: allocated bytes of "
                   "its paged layers ÷ (blocks × block size).", body)


def notes_section(payload: ReportPayload) -> Html:
    reader = ("python3 -c \"import json,re,sys; d=json.loads(re.search(r'<script type=.application/json. "
              "id=.kvplan-report.>(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1)); "
              "print(d['capacity'][0]['kv_tokens'])\" page.html")
    body = [tag("div", items(payload.warnings), "warn") if payload.warnings else tag("p", "No warnings."),
            tag("h3", "Notes"), items(payload.notes), tag("h3", "The numbers, as JSON"),
            tag("p", "This page embeds the whole answer (what `kvplan report --json` prints: the `kvplan size "
                     "--json` and `kvplan capacity --json` objects under size and capacity) in a "
                     "<script type=\"application/json\" id=\"kvplan-report\"> element. To read it back:"),
            tag("pre", reader, "plain")]
    return section("notes", 7, "Warnings and notes", "What the engines refused, what kvplan assumed or estimated, "
                   "and where to read the numbers back.", body)
