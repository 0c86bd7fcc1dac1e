"""`kvplan fit` against one `kvplan capacity`, run by run (issue 33): fit over every GPU type of the catalog (no
--gpu) at most 2x one capacity, fit over one GPU type at most 1.3x.

fit's space is every GPU type x TP x PP x DCP/EP/DP layout x KV dtype (3,720 setups for Llama-3.1-70B over the
catalog); a bound skips the setups that cannot be shown (kvplan/planning/search.py) and the model's weights, layouts
and GPU lookups are computed once and reused, so most of a fit is the same start-up as a capacity.

The three commands run interleaved, run by run; a target is read on the paired ratio (the median of run-by-run
ratios), which a busy machine moves far less than the ratio of two medians. Wall time is the target; CPU time
(user + sys of the child) is printed beside it, as a shared machine moves it less. kvplan's .pyc files are written
first, as every install has them.

Run: python benchmarks/bench_fit.py [--runs 21] [MODEL ...]  (a run of each command is ~0.1-0.2 s: 21 keeps the paired
median steady on a shared machine, where 9 moved a ratio by ~0.1)
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODELS = ("meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-Next-80B-A3B-Thinking")
TARGETS = {"fit_catalog": 2.0, "fit_one_gpu": 1.3}
ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def commands(model: str) -> dict[str, list[str]]:
    kvplan = [sys.executable, "-m", "kvplan"]
    load = ["--max-model-len", "32k", "--concurrency", "64"]
    return {"capacity": [*kvplan, "capacity", model, "--gpu", "H100", "--tp", "4", "--max-model-len", "32k"],
            "fit_catalog": [*kvplan, "fit", model, *load],
            "fit_one_gpu": [*kvplan, "fit", model, *load, "--gpu", "H100"]}


def paired(model: str, runs: int) -> dict[str, dict[str, float]]:
    cmds = commands(model)
    rows = [{name: timed(cmd) for name, cmd in cmds.items()} for _ in range(runs)]
    out = {"capacity": {"wall_median_s": statistics.median(r["capacity"][0] for r in rows),
                        "cpu_median_s": statistics.median(r["capacity"][1] for r in rows)}}
    for name in TARGETS:
        out[name] = {"wall_median_s": statistics.median(r[name][0] for r in rows),
                     "cpu_median_s": statistics.median(r[name][1] for r in rows),
                     "paired_ratio": statistics.median(r[name][0] / r["capacity"][0] for r in rows),
                     "paired_cpu_ratio": statistics.median(r[name][1] / max(r["capacity"][1], 1e-9) for r in rows)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "kvplan"), quiet=1)
    results = {model: paired(model, args.runs) for model in args.models}
    print(json.dumps(results, indent=2))
    for name, target in TARGETS.items():
        worst = max(r[name]["paired_ratio"] for r in results.values())
        cpu = max(r[name]["paired_cpu_ratio"] for r in results.values())
        print(f"{'met' if worst <= target else 'NOT met'}: {name} <= {target}x one capacity "
              f"(worst paired ratio {worst:.2f}x wall, {cpu:.2f}x CPU)")


if __name__ == "__main__":
    main()
