"""Markdown summary of a bench_decode.py JSON: GB/s, % of copy, and which targets each row meets.

    python benchmarks/summarize_decode.py benchmarks/results/h100-run3/bench.json > summary.md

Targets (issue 12): decode >= 80% of copy when batch × context >= 64k tokens; >= 50% at batch 1 × 32k;
write >= 80% of copy when >= 64k tokens are written. A row outside a target's scope shows "".
"""

from __future__ import annotations

import json
import sys
from typing import Any


def target(row: dict[str, Any]) -> str:
    """'ok' / 'MISS' for the decode target that applies to the row, '' when none does."""
    ratio = row.get("decode_vs_copy")
    tokens = row["batch"] * row["context"]
    if ratio is None:
        return ""
    if tokens >= 65536:
        return "ok" if ratio >= 0.8 else "MISS"
    if row["batch"] == 1 and row["context"] == 32768:
        return "ok" if ratio >= 0.5 else "MISS"
    return ""


def write_target(row: dict[str, Any]) -> str:
    ratio = row.get("write_vs_copy")
    if ratio is None or row.get("write_tokens", 0) < 65536:
        return ""
    return "ok" if ratio >= 0.8 else "MISS"


def pct(v: float | None) -> str:
    return f"{v:.0%}" if v is not None else "-"


def num(v: float | None) -> str:
    return f"{v:,.0f}" if v is not None else "-"


def summary(payload: dict[str, Any]) -> str:
    rows = payload["rows"]
    lines = [f"Device: {payload['device']}, torch {payload['torch']}. GB/s = 10^9 B/s; copy counts read + written "
             "bytes, decode the cache once, write the rows read + written.", "",
             "| shape | B | ctx | dtype | copy | SDPA | % copy | kvplan decode | % copy | target | write | % copy | "
             "target |", "|" + "---|" * 13]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['batch']} | {r['context']} | {r['dtype']} | {num(r.get('copy_gbps'))} | "
                     f"{num(r.get('sdpa_gbps'))} | {pct(r.get('sdpa_vs_copy'))} | {num(r.get('decode_gbps'))} | "
                     f"{pct(r.get('decode_vs_copy'))} | {target(r)} | {num(r.get('write_gbps'))} | "
                     f"{pct(r.get('write_vs_copy'))} | {write_target(r)} |")
    met = [target(r) for r in rows if target(r)]
    wmet = [write_target(r) for r in rows if write_target(r)]
    lines += ["", f"Decode targets met: {met.count('ok')} of {len(met)}; write targets met: {wmet.count('ok')} of "
              f"{len(wmet)}."]
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        data = json.load(fh)
    order = ["Llama-3.1-8B", "Llama-3.1-70B TP8", "Falcon-7B", "gpt-oss-20b", "Qwen3-32B", "DeepSeek-V3 MLA h16",
             "DeepSeek-V3 MLA h128"]
    data["rows"].sort(key=lambda r: (order.index(r["shape"]) if r["shape"] in order else 99, r["dtype"],
                                     r["batch"], r["context"]))
    print(summary(data))
