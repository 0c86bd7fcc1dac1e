"""The library in a loop (issue 33): calls per second of `kv_cache` and `capacity`, in one process.

1. `kvplan.kv_cache(model, tp=2, max_model_len=L, batch=8)` with a loaded config, L cycling over 128 lengths
   (target: >= 200k/s);
2. the same with the model id, `kvplan.kv_cache("meta-llama/Llama-2-70b", ...)` (target: >= 100k/s): the id is
   resolved on every call (a local folder of that name would win), a bundled config read again only when its file
   changed;
3. `kvplan.capacity("meta-llama/Llama-3.1-8B", gpu="H100", max_model_len=32768)` asked again (target: >= 2,000/s),
   and with the length cycling over 8 values.

Each figure is the best of --repeats timed runs of --seconds each, after one warm-up call. The machine's load
average is printed beside them: a loaded 2-core machine gives a fraction of these rates.

Run: python benchmarks/bench_library.py [--seconds 1.0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

import kvplan

LENGTHS = [1024 * (i % 128 + 1) for i in range(1024)]


def rate(call: Callable[[int], object], seconds: float, repeats: int, batch: int = len(LENGTHS)) -> float:
    """Calls per second: the best of `repeats` runs of about `seconds` each (call(i), i cycling over `batch`)."""
    call(0)
    best = 0.0
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for i in range(batch):
                call(i)
            count += batch
        best = max(best, count / (time.perf_counter() - start))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = kvplan.load_model("meta-llama/Llama-2-70b")
    s, r = args.seconds, args.repeats
    report = {
        "load_average_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        "kv_cache_loaded_per_s": rate(lambda i: kvplan.kv_cache(model, tp=2, max_model_len=LENGTHS[i], batch=8), s, r),
        "kv_cache_model_id_per_s": rate(lambda i: kvplan.kv_cache("meta-llama/Llama-2-70b", tp=2,
                                                                  max_model_len=LENGTHS[i], batch=8), s, r),
        "capacity_repeated_per_s": rate(lambda i: kvplan.capacity("meta-llama/Llama-3.1-8B", gpu="H100",
                                                                  max_model_len=32768), s, 1, 8),
        "capacity_8_lengths_per_s": rate(lambda i: kvplan.capacity("meta-llama/Llama-3.1-8B", gpu="H100",
                                                                   max_model_len=LENGTHS[i]), s, 1, 8),
    }
    print(json.dumps({k: round(v) if isinstance(v, float) and v > 100 else v for k, v in report.items()}, indent=2))
    targets = {"kv_cache with a loaded config >= 200k/s": report["kv_cache_loaded_per_s"] >= 200_000,
               "kv_cache with a model id >= 100k/s": report["kv_cache_model_id_per_s"] >= 100_000,
               "capacity of a repeated question >= 2,000/s": report["capacity_repeated_per_s"] >= 2_000}
    for target, met in targets.items():
        print(f"{'met' if met else 'NOT met'}: {target}")
    return 0 if all(targets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
