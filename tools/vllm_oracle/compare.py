"""python -m vllm_oracle.compare REFERENCE.json RECORDS(DIR|FILE)...

Field-for-field check of generated records against a reference record file
(e.g. tests/data/vllm-oracle-sample.json), on the reference's fields only.
Exit status 1 if any reference record is missing or differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

KEY_FIELDS = ("model", "tp", "pp", "kv_cache_dtype", "block_size", "max_model_len",
              "available_bytes")


def record_key(rec: dict[str, Any]) -> tuple:
    return tuple(rec[f] for f in KEY_FIELDS)


def load_records(paths: list[str]) -> dict[tuple, dict[str, Any]]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    out: dict[tuple, dict[str, Any]] = {}
    for file in files:
        data = json.loads(file.read_text())
        if isinstance(data, list):
            out.update((record_key(r), r) for r in data if "available_bytes" in r)
    return out


def diff(ref: Any, got: Any, where: str) -> list[str]:
    """Differences on the reference's keys (lists compared element-wise)."""
    if isinstance(ref, dict) and isinstance(got, dict):
        return [d for k in ref for d in diff(ref[k], got.get(k, "<missing>"), f"{where}.{k}")]
    if isinstance(ref, list) and isinstance(got, list):
        if len(ref) != len(got):
            return [f"{where}: {len(ref)} items vs {len(got)}"]
        return [d for i, (r, g) in enumerate(zip(ref, got, strict=True)) for d in diff(r, g, f"{where}[{i}]")]
    return [] if ref == got and type(ref) is type(got) else [f"{where}: {ref!r} vs {got!r}"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    reference = json.loads(Path(argv[0]).read_text())
    mine = load_records(argv[1:])
    bad = 0
    for ref in reference:
        got = mine.get(record_key(ref))
        problems = ["missing"] if got is None else diff(ref, got, "")
        if problems:
            bad += 1
            print(record_key(ref), *problems[:5], sep="\n  ")
    print(f"{len(reference) - bad} of {len(reference)} reference records match exactly")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
