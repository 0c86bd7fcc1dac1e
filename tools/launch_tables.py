"""Build kvplan/launch/tables/{vllm,sglang,trtllm}.json from the per-release flag dumps.

The dumps (``flags/<engine>-<release>.json``) are each release's own argparse parser, built by running
vLLM's ``make_arg_parser`` / SGLang's ``ServerArgs.add_cli_args`` from that release's sources (TRT-LLM's
click options transcribed from the 0.18.2 docs page and one ``serve.py`` snapshot); ``memory_flags.json``
classifies every dest (layout, budget, kv_format, ..., none). This tool keeps, per engine, every option
string with the release ranges that have it and what parsing needs (dest, nargs, type, choices, the value a
switch stores, the parse function's name, a scalar default), and each dest's memory category.

    python tools/launch_tables.py /path/to/research/launch          # writes kvplan/launch/tables/
    python tools/launch_tables.py /path/to/research/launch --check  # exit 1 when the files differ
    python tools/launch_tables.py --rewrite                         # the package's tables again, in this format

The file is JSON written a top-level key a line, and the ``flags`` and ``categories`` objects an entry a line
(indented one space): kvplan.launch.tables parses the one flag a launch line asks for, not the whole file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kvplan.launch.tables import table_text

OUT = Path(__file__).resolve().parent.parent / "kvplan" / "launch" / "tables"
KEEP = ("dest", "nargs", "type", "choices", "choice_type", "value", "const", "positional")
SCALARS = (bool, int, float, str, type(None))
SOURCE = {
    "vllm": "each release's own argparse parser (vLLM make_arg_parser + `vllm serve` extras, run from that "
            "release's sources), 0.8.0-0.33.0",
    "sglang": "each release's own argparse parser (SGLang ServerArgs.add_cli_args, run from that release's "
              "wheel), 0.4.0.post2-0.5.23",
    "trtllm": "trtllm-serve's click options: 0.18.2 from its docs page; 'snapshot-00209af' from "
              "tensorrt_llm/commands/serve.py at commit 00209af1 (a 1.2/1.3-era main, release not pinned)",
}


def _variant(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: spec[k] for k in KEEP if spec.get(k) is not None}
    if spec.get("parse_fn"):
        out["parse"] = spec["parse_fn"]
    if spec.get("accepts_str"):
        out["accepts_str"] = True
    default = spec.get("default")
    if isinstance(default, SCALARS) and default is not None and not (isinstance(default, str) and len(default) > 40):
        out["default"] = default
    return out


def _ranges(indices: list[int]) -> list[list[int]]:
    """[0, 1, 2, 5] -> [[0, 2], [5, 5]] (release indices, inclusive)."""
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def build(dumps: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """{flag: [variant with its release ranges, ...]} over releases in the order given."""
    seen: dict[str, dict[str, list[int]]] = {}
    for index, table in enumerate(dumps.values()):
        for flag, spec in table.items():
            key = json.dumps(_variant(spec), sort_keys=True)
            seen.setdefault(flag, {}).setdefault(key, []).append(index)
    return {flag: [{**json.loads(key), "in": _ranges(idx)} for key, idx in variants.items()]
            for flag, variants in sorted(seen.items())}


def _order(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.replace(".post", ".").split(".") if p.isdigit())


def engine_table(root: Path, engine: str) -> dict[str, Any]:
    flags = root / "flags"
    memory = json.loads((root / "memory_flags.json").read_text())
    if engine == "trtllm":
        releases = ["0.18.2", "snapshot-00209af"]
        dests = {d: v["category"] for d, v in memory["trtllm"]["serve_dests"].items()}
    else:
        releases = sorted((p.stem.split("-", 1)[1] for p in flags.glob(f"{engine}-*.json")), key=_order)
        dests = {d: v["category"] for d, v in memory[engine]["by_dest"].items()}
    dumps = {r: json.loads((flags / f"{engine}-{r}.json").read_text()) for r in releases}
    out: dict[str, Any] = {"source": SOURCE[engine], "releases": releases, "flags": build(dumps),
                           "categories": dict(sorted(dests.items()))}
    if engine == "vllm":  # options `vllm serve` has and `python -m vllm.entrypoints.openai.api_server` lacks
        index = json.loads((flags / "index.json").read_text())["vllm"]["releases"]
        out["serve_only"] = {r: index[r]["serve_minus_api_server"] for r in releases if
                             index[r]["serve_minus_api_server"]}
    return out


def _tables(research: Path | None) -> dict[str, dict[str, Any]]:
    """Each engine's table: built from the research dumps, or (None) the package's own, read whole."""
    engines = ("vllm", "sglang", "trtllm")
    if research is None:
        return {e: json.loads((OUT / f"{e}.json").read_text(encoding="utf-8")) for e in engines}
    return {e: engine_table(research, e) for e in engines}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("research", type=Path, nargs="?", help="the research folder holding flags/ and "
                        "memory_flags.json")
    parser.add_argument("--check", action="store_true", help="compare with the files in the package; write nothing")
    parser.add_argument("--rewrite", action="store_true", help="write the package's own tables again (no research "
                        "folder: a change of this tool's format)")
    args = parser.parse_args()
    if (args.research is None) != args.rewrite:
        parser.error("give the research folder, or --rewrite")
    differ = []
    for engine, table in _tables(args.research).items():
        text = table_text(table)
        path = OUT / f"{engine}.json"
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(str(path))
            continue
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path} ({len(text):,} bytes)")
    if differ:
        print("out of date: " + ", ".join(differ), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
