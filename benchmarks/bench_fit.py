"""`kvplan fit` over every GPU type in the catalog against one `kvplan capacity`, run by run (issue 22: at most 2x).

fit tries every GPU type x TP x PP x KV dtype; the weights depend on the layout and the format, not on the GPU,
and a model's decoder layers repeat their shapes, so the count is shared across the candidates.

Run: python benchmarks/bench_fit.py [--runs 9] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

MODELS = ("deepseek-ai/DeepSeek-V3", "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-Next-80B-A3B-Thinking")


def wall_s(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def paired(model: str, runs: int) -> dict[str, float]:
    kvplan = [sys.executable, "-m", "kvplan"]
    capacity = [*kvplan, "capacity", model, "--gpu", "H200", "--tp", "8", "--max-model-len", "32k"]
    fit = [*kvplan, "fit", model, "--max-model-len", "32k", "--concurrency", "64"]
    pairs = [(wall_s(capacity), wall_s(fit)) for _ in range(runs)]
    return {"capacity_median_s": statistics.median(c for c, _ in pairs),
            "fit_median_s": statistics.median(f for _, f in pairs),
            "paired_ratio": statistics.median(f / c for c, f in pairs)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    results = {model: paired(model, args.runs) for model in args.models}
    print(json.dumps(results, indent=2))
    worst = max(r["paired_ratio"] for r in results.values())
    print(f"{'met' if worst <= 2 else 'NOT met'}: fit over every GPU type <= 2x one capacity (worst {worst:.2f}x)")


if __name__ == "__main__":
    main()
