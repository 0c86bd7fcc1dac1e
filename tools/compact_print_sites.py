"""Compact vLLM's print sites per release into kvplan/reconcile/print_sites.json (package data).

Input: the research table ``print_sites.json`` (per vLLM release 0.8.0 ... 0.33.0, read from each release's
extracted Python: "file.py:line" -> label of every KV/memory logger call, and ``_index``: "file.py:line|label" ->
the releases that have it). Output: for the labels reconcile recognizes in a log line (kvplan/reconcile/sites.py
LABELS), label -> "file.py:line" -> the releases as index ranges into ``releases`` ("3-5,9").

    python tools/compact_print_sites.py /path/to/print_sites.json kvplan/reconcile/print_sites.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kvplan.reconcile.sites import LABELS


def ranges(indices: list[int]) -> str:
    out: list[str] = []
    for i in sorted(indices):
        if out and int(out[-1].rpartition("-")[2]) == i - 1:
            out[-1] = f"{out[-1].partition('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


def compact(source: dict[str, object]) -> dict[str, object]:
    releases = [k for k in source if not k.startswith("_")]
    index = source["_index"]
    assert isinstance(index, dict)
    sites: dict[str, dict[str, str]] = {}
    for key, found in sorted(index.items()):
        site, _, label = key.partition("|")
        if label in LABELS:
            sites.setdefault(label, {})[site] = ranges([releases.index(r) for r in found])
    return {"_about": "vLLM print sites (file.py:line of each logger call) per release, read from each release's "
                      "Python (0.8.0, 0.8.5, 0.9.0, 0.9.2, 0.10.0, 0.10.1.1, 0.10.2, 0.11.0, every x.y.0 to 0.33.0); "
                      "values index `releases`. Built by tools/compact_print_sites.py.",
            "releases": releases, "sites": sites}


if __name__ == "__main__":
    data = compact(json.loads(Path(sys.argv[1]).read_text()))
    Path(sys.argv[2]).write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
