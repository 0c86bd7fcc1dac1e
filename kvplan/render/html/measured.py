"""Section 6: `kvplan probe --json` files beside the prediction (allocated vs predicted bytes per
model and layer group, this model's measured bytes per token against kvplan's, the kernel check,
bandwidth against the GPU's peak); section 7: warnings, notes, and how to read the JSON back."""

from __future__ import annotations

from typing import Any

from kvplan.render.html.bars import Bar, Segment, bar_chart
from kvplan.render.html.markup import Html, esc, items, join, num, section, size, table, tag

DECODE_COLOR = "#0891b2"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.2f} ms"


def _gbps(value: float | None, fraction: float | None) -> Html:
    if value is None:
        return Html("-")
    return Html(f"{value:,.0f}" + (f'<span class="u">{_pct(fraction)} of peak</span>' if fraction else ""))


def _memory_rows(probe: dict[str, Any]) -> list[list[Any]]:
    return [[r["model"], f"{r['tp_rank']} of {r['tp']}", r["kv_dtype"], f"{num(r['num_blocks'])} × {r['block_size']}",
             num(r.get("num_seqs")), size(r["predicted_bytes"]), size(r["measured_bytes"]), size(r.get("reserved_bytes")),
             size(r.get("driver_bytes")), _pct(r.get("error")), tag("span", "yes", "ok") if r.get("ok") else
             tag("span", "NO", "bad")] for r in probe["results"]]


def _kernel_rows(probe: dict[str, Any]) -> list[list[Any]]:
    return [[r["model"], r["kv_dtype"], r.get("kernel_check", "-"), _gbps(r.get("write_gbps"), r.get("write_fraction_of_peak")),
             _gbps(r.get("decode_gbps"), r.get("decode_fraction_of_peak")), _ms(r.get("decode_step_s")),
             size(r.get("decode_step_bytes")), _ms(r.get("decode_floor_s")), _ms(r.get("decode_floor_peak_s")),
             size(r.get("kv_bytes"))] for r in probe["results"]]


def _group_rows(probe: dict[str, Any]) -> list[list[Any]]:
    return [[r["model"], r["kv_dtype"], g["kind"], num(g.get("num_layers")), size(g["predicted_bytes"]),
             size(g["measured_bytes"]), size(g.get("reserved_bytes")), size(g.get("driver_bytes")), _pct(g.get("error"))]
            for r in probe["results"] for g in r["groups"]]


def _check_rows(checks: list[dict[str, Any]]) -> list[list[Any]]:
    def verdict(c: dict[str, Any]) -> Any:
        if c["match"] is None:
            return c["compared_with"]
        word = tag("span", "equal" if c["match"] else "DIFFERENT", "ok" if c["match"] else "bad")
        return Html(f"{word} <span class=\"u\">{esc(c['compared_with'])}</span>")
    same = {True: "yes", False: "no", None: "unknown"}
    return [[c["model"], c["kv_dtype"], num(c["tp"]), same[c["same_model"]], num(c["measured_bytes_per_token"]),
             num(c["kvplan_bytes_per_token"]), verdict(c)] for c in checks]


def _bandwidth(probe: dict[str, Any]) -> Html:
    peak = probe.get("peak_gbps")
    rows = [r for r in probe["results"] if r.get("decode_gbps")]
    if not rows:
        return Html("")
    bars = [Bar(f"{r['model']} · {r['kv_dtype']}: decode {r['decode_gbps']:,.0f} GB/s",
                (Segment("decode", r["decode_gbps"], DECODE_COLOR),), peak, f"peak {peak:,.0f} GB/s" if peak else "")
            for r in rows]
    return tag("figure", join([tag("figcaption", "Paged decode bandwidth against the GPU's peak"),
                               bar_chart(bars, lambda v: f"{v:,.0f} GB/s")]), "wide")


def _one_probe(i: int, probe: dict[str, Any], checks: list[dict[str, Any]]) -> Html:
    mine = {c["result"] for c in checks if c["same_model"]}
    marks = ["mine" if j in mine else "" for j in range(len(probe["results"]))]
    peak = probe.get("peak_gbps")
    title = (f"Probe {i + 1}: {probe.get('device', '?')}, tolerance {probe.get('tolerance', 0)}"
             + (f", peak {peak:,.0f} GB/s" if peak else "") + (", every row passes" if probe.get("ok") else ""))
    notes = [*probe.get("skipped", []), *(f"{r['model']} ({r['kv_dtype']}): {n}" for r in probe["results"]
                                          for n in r.get("kernel_notes", []))]
    notes += [probe["bandwidth_note"]] if probe.get("bandwidth_note") else []
    return join([tag("h3", title),
                 table(("model", "rank", "KV", "blocks × block", "seqs", "predicted (B)", "allocated (B)",
                        "reserved (B)", "driver (B)", "error", "ok"), _memory_rows(probe), (4, 5, 6, 7, 8, 9), "",
                       marks),
                 table(("model", "KV", "tp", "this model?", "measured B / token", "kvplan B / token", "check"),
                       _check_rows(checks), (2, 4, 5)),
                 table(("model", "KV", "kernels", "write GB/s", "decode GB/s", "decode step (measured)", "bytes it read",
                        "all KV at decode GB/s", "all KV at peak GB/s", "KV bytes"), _kernel_rows(probe), range(3, 10)),
                 tag("details", join([tag("summary", "per layer group"), table(
                     ("model", "KV", "kind", "layers", "predicted (B)", "allocated (B)", "reserved (B)", "driver (B)",
                      "error"), _group_rows(probe), range(3, 9))])),
                 _bandwidth(probe), items(notes)])


def measured_section(payload: dict[str, Any]) -> Html:
    probes = payload["probe"]
    if not probes:
        body = [tag("p", "No probe file given. `kvplan probe --gpu 0 --json > probe.json` allocates real caches in "
                         "the engines' layouts and measures them; `--probe probe.json` puts the measurement here.")]
    else:
        body = [_one_probe(i, p, [c for c in payload["probe_checks"] if c["probe"] == i]) for i, p in enumerate(probes)]
    return section("measured", 6, "Measured", "Predicted vs allocated bytes from `kvplan probe --json`. A probe "
                   "row of this model (highlighted) must hold exactly kvplan's bytes per token: allocated bytes of "
                   "its paged layers ÷ (blocks × block size).", body)


def notes_section(payload: dict[str, Any]) -> Html:
    warnings = payload["warnings"]
    reader = ("python3 -c \"import json,re,sys; d=json.loads(re.search(r'<script type=.application/json. "
              "id=.kvplan-report.>(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1)); "
              "print(d['capacity'][0]['kv_tokens'])\" page.html")
    body = [tag("div", items(warnings), "warn") if warnings else tag("p", "No warnings."),
            tag("h3", "Notes"), items(payload["notes"]), tag("h3", "The numbers, as JSON"),
            tag("p", "This page embeds the whole answer (what `kvplan report --json` prints: the `kvplan size "
                     "--json` and `kvplan capacity --json` objects under size and capacity) in a "
                     "<script type=\"application/json\" id=\"kvplan-report\"> element. To read it back:"),
            tag("pre", reader, "plain")]
    return section("notes", 7, "Warnings and notes", "What the engines refused, what kvplan assumed or estimated, "
                   "and where to read the numbers back.", body)
