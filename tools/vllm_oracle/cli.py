"""python -m vllm_oracle --configs DIR_OR_FILES... --out DIR [--grid small|full]"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from . import fakes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m vllm_oracle",
        description="Run vLLM 0.33.0's own KV cache planning on CPU, as an H100 "
                    "would, and write fixture records.")
    parser.add_argument("--configs", nargs="+", required=True,
                        help="config.json files, folders holding one, or trees of them")
    parser.add_argument("--out", required=True, type=Path, help="records folder")
    parser.add_argument("--grid", choices=("small", "full"), default="small")
    parser.add_argument("--points", type=Path,
                        help="recompute the build points and budgets of this record "
                             "file (e.g. the sample) instead of a grid")
    parser.add_argument("--jobs", type=int, default=2, help="build points run at once")
    parser.add_argument("--no-layers", action="store_true",
                        help="skip the per-layer spec file of each model")
    parser.add_argument("--verbose", action="store_true", help="print vLLM's log")
    return parser.parse_args(argv)


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1) + "\n")


def output_path(out: Path, model: str, suffix: str = ".json") -> Path:
    return out / (model.replace("/", "__") + suffix)


def run_model(args: argparse.Namespace, model: str, model_dir: Path,
              points_file: list | None) -> dict[str, Any]:
    """Write one model's records; returns a status summary."""
    from . import forking, grid, probe

    start = time.time()
    model_max, probe_error = probe.model_max_len(str(model_dir))
    if points_file is not None:
        points, limit = [p for p in points_file if p.model == model], None
    else:
        points = grid.product_points(model, str(model_dir), model_max)
        if args.grid == "small":
            points, limit = grid.order_small(points), grid.SMALL_CAP
        else:
            limit = None
    kept: list[dict[str, Any]] = []
    runs = forking.run_in_order(points, args.jobs, args.verbose)
    for _, recs in runs:
        kept += grid.keep_small(kept, recs) if limit else recs
        if limit and len(kept) >= limit:
            runs.close()
            break
    for rec in kept:  # the length vLLM would have used, where the build failed
        if rec["max_model_len"] is None:
            rec["max_model_len"] = model_max
    write_json(output_path(args.out, model), kept)
    if not args.no_layers:
        write_json(output_path(args.out, model, ".layers.json"),
                   probe.layer_specs(model, str(model_dir)))
    return summarize(model, kept, probe_error, time.time() - start)


def summarize(model: str, kept: list[dict[str, Any]], probe_error: str | None,
              seconds: float) -> dict[str, Any]:
    stages: dict[str, int] = {}
    for rec in kept:
        stage = rec["error_stage"] or "ok"
        stages[stage] = stages.get(stage, 0) + 1
    return {"model": model, "records": len(kept), "by_outcome": stages,
            "probe_error": probe_error, "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fakes.install()
    from . import grid

    dirs = grid.find_config_dirs(args.configs)
    names = {grid.model_name(d): d for d in dirs}
    points_file = None
    if args.points is not None:
        points_file = grid.points_from_file(args.points, {m: str(d) for m, d in names.items()})
        names = {m: d for m, d in names.items() if any(p.model == m for p in points_file)}
    summaries = []
    for model, model_dir in names.items():
        summary = run_model(args, model, model_dir, points_file)
        print(json.dumps(summary), flush=True)
        summaries.append(summary)
    write_json(args.out / "_summary.json", summaries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
