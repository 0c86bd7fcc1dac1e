"""Summarize `kvplan probe --json` lines (benchmarks/gpu_probe_all.sh) as a markdown table.

    python benchmarks/summarize_probe.py OUT/probe-auto.jsonl OUT/probe-fp8.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def rows(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        payload = json.loads(line)
        out += [{**r, "device": payload["device"]} for r in payload["results"]]
    return out


def table(results: list[dict[str, Any]]) -> list[str]:
    head = ["model", "KV", "predicted B", "measured B", "exact", "kernels", "write GB/s", "decode GB/s",
            "decode step ms", "ok"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r["model"], r["kv_dtype"], f"{r['predicted_bytes']:,}", f"{r['measured_bytes']:,}",
                 "yes" if r["measured_bytes"] == r["predicted_bytes"] else "NO", r["kernel_check"],
                 _cell(r["write_gbps"], "{:,.0f}"), _cell(r["decode_gbps"], "{:,.0f}"),
                 _cell(r.get("decode_step_s") and r["decode_step_s"] * 1e3, "{:,.3f}"), "yes" if r["ok"] else "NO"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(paths: list[str]) -> None:
    results = [r for p in paths for r in rows(Path(p))]
    exact = sum(r["measured_bytes"] == r["predicted_bytes"] for r in results)
    checked = sum(r["kernel_check"] == "pass" for r in results)
    print("\n".join(table(results)))
    print(f"\n{len(results)} model × dtype runs: measured == predicted in {exact}, kernel check passed in {checked}, "
          f"ok in {sum(bool(r['ok']) for r in results)}")


if __name__ == "__main__":
    main(sys.argv[1:])
