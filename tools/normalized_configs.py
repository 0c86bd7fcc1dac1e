"""Write kvplan/config/normalized/: every bundled config normalized ahead of time (kvplan.config.index).

    python tools/normalized_configs.py            # rewrite the folder
    python tools/normalized_configs.py --check    # exit 1 naming each file that is missing or out of date

Run it after changing a bundled config or the loaders; tests/config/test_normalized_index.py fails until
then. A config kvplan refuses gets no file (loading it still refuses, in the loader's words).
"""

from __future__ import annotations

import argparse
import json
import sys

from kvplan.config import bundled_index
from kvplan.config.hf import load_file
from kvplan.config.index import INDEX_DIR, encode, index_file
from kvplan.errors import KvplanError


def documents() -> dict[str, str]:
    """{file name: its text} for every bundled config kvplan can load."""
    out = {}
    for model_id, path in bundled_index().items():
        try:
            model = load_file(path, model_id=model_id)
        except KvplanError:
            continue
        out[index_file(model_id).name] = json.dumps(encode(model, path.read_bytes()), separators=(",", ":")) + "\n"
    return out


def stale() -> list[str]:
    want = documents()
    have = {p.name: p.read_text(encoding="utf-8") for p in INDEX_DIR.glob("*.json")}
    return sorted(n for n in want.keys() | have.keys() if want.get(n) != have.get(n))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is missing or out of date")
    if parser.parse_args().check:
        names = stale()
        for name in names:
            print(f"out of date: {INDEX_DIR / name}", file=sys.stderr)
        return 1 if names else 0
    INDEX_DIR.mkdir(exist_ok=True)
    for old in INDEX_DIR.glob("*.json"):
        old.unlink()
    for name, text in documents().items():
        (INDEX_DIR / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
