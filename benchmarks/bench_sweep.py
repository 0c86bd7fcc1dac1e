"""Sweep throughput: `kvplan sweep ... --csv` with about 10,000 points, whole command, start-up included.

1. Wall time of the CLI in a fresh process (target: median < 1 s for >= 10,000 points), with the
   start-up alone (`kvplan --help` would not load configs, so the floor is `kvplan sweep` of 1 point).
2. In-process sweep() points per second, and CSV writing, for the record.
3. That a sweep without --plot imports neither matplotlib nor numpy.
4. Flat memory: the peak resident memory of a 10,000-row and a 1,000,000-row `--csv` sweep (rows are
   written as they are made; target: the 1M-row peak within 1.5x of the 10k-row one).
5. Issue 33: an 8,448-row `--csv` sweep against one `kvplan size`, interleaved run by run (target: paired ratio
   <= 2), and rows per second of the CSV beyond start-up, in-process, rows made and written (target: >= 500k/s).

Run: python benchmarks/bench_sweep.py [--runs 7]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ["meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-72B",
          "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b"]
# 6 models × 18 lengths (1..128k) × 4 tp × 2 dtypes × 12 batches (1..2048) = 10,368 points
AXES = ["--max-model-len", "1..128k", "--tp", "1,2,4,8", "--kv-dtype", "bf16,fp8", "--batch", "1..2048"]
POINTS = 6 * 18 * 4 * 2 * 12
CLI = [sys.executable, "-c", "import sys; from kvplan.cli import main; sys.exit(main())"]


def wall_s(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(CLI + args, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def cli_timing(runs: int, out: Path) -> dict[str, float]:
    big = ["sweep", *MODELS, *AXES, "--csv", str(out)]
    one = ["sweep", MODELS[0], "--max-model-len", "1k", "--csv", str(out.with_suffix(".one.csv"))]
    wall_s(big), wall_s(one)  # warm the page cache and .pyc files
    big_s, one_s = [], []
    for _ in range(runs):  # interleaved, so load on the machine hits both alike
        big_s.append(wall_s(big))
        one_s.append(wall_s(one))
    rows = sum(1 for _ in out.open()) - 1
    assert rows == POINTS, rows
    return {"points": rows, "median_s": statistics.median(big_s), "min_s": min(big_s),
            "one_point_median_s": statistics.median(one_s)}


def in_process() -> dict[str, float]:
    from kvplan.render.workflows import write_csv
    from kvplan.workflows import sweep
    from kvplan.workflows.ranges import parse_int_axis

    kwargs = dict(max_model_lens=parse_int_axis("1..128k", "s"), batches=parse_int_axis("1..2048", "b"),
                  tps=(1, 2, 4, 8), kv_dtypes=("bf16", "fp8"))
    sweep(MODELS, **kwargs)  # load configs, build layouts
    start = time.perf_counter()
    result = sweep(MODELS, **kwargs)
    rows = sum(1 for _ in result.iter_rows())  # rows are made as they are read
    compute = time.perf_counter() - start
    start = time.perf_counter()
    write_csv(result, io.StringIO())
    return {"points_per_s": rows / compute, "csv_s": time.perf_counter() - start}


# 6 models × 4 tp × 2 dtypes × 11 lengths (1..1k) × 16 batches (1..32k) = 8,448 rows
SWEEP_8K = ["sweep", *MODELS, "--max-model-len", "1..1k", "--tp", "1,2,4,8", "--kv-dtype", "bf16,fp8", "--batch",
            "1..32k"]
SIZE = ["size", MODELS[0]]


def against_size(runs: int, out: Path) -> dict[str, float]:
    """The 8,448-row sweep and one `kvplan size`, interleaved; the median of run-by-run ratios."""
    sweep_args = [*SWEEP_8K, "--csv", str(out)]
    wall_s(sweep_args), wall_s(SIZE)
    pairs = [(wall_s(sweep_args), wall_s(SIZE)) for _ in range(runs)]
    assert sum(1 for _ in out.open()) - 1 == 8448
    return {"sweep_8k_median_s": statistics.median(p[0] for p in pairs),
            "size_median_s": statistics.median(p[1] for p in pairs),
            "paired_ratio": statistics.median(a / b for a, b in pairs)}


def csv_rows_per_s() -> float:
    """Rows made and written as CSV per second, in-process, configs loaded and layouts built (a 165,888-row sweep:
    6 models × 4 tp × 2 dtypes × 18 lengths × 192 batches)."""
    from kvplan.render.workflows import write_csv
    from kvplan.workflows import sweep
    from kvplan.workflows.ranges import parse_int_axis

    kwargs = dict(max_model_lens=parse_int_axis("1..128k", "s"), batches=tuple(range(1, 193)), tps=(1, 2, 4, 8),
                  kv_dtypes=("bf16", "fp8"))
    result = sweep(MODELS, **kwargs)  # type: ignore[arg-type]
    sink = io.StringIO()
    start = time.perf_counter()
    write_csv(result, sink)
    return result.num_rows / (time.perf_counter() - start)


def peak_rss_mib(rows: int, out: Path) -> float:
    """Peak resident memory of a CLI sweep of `rows` rows (1,000 lengths × rows/1,000 batches) written as CSV."""
    lengths = ",".join(str(1000 + i) for i in range(1000))
    batches = ",".join(str(1 + i) for i in range(rows // 1000))
    code = ("import resource, sys; from kvplan.cli import main; code = main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, "sweep", MODELS[2], "--max-model-len", lengths, "--batch",
                           batches, "--csv", str(out)], check=True, capture_output=True, text=True)
    assert sum(1 for _ in out.open()) == rows + 1
    return int(done.stderr.strip().splitlines()[-1]) / 1024  # ru_maxrss is KiB on Linux


def heavy_imports() -> list[str]:
    code = ("import sys; from kvplan.cli import main; main(['sweep', 'Qwen/Qwen3-32B', '--max-model-len', '1k..8k', "
            "'--csv', '-']); print([m for m in ('matplotlib', 'numpy', 'torch') if m in sys.modules], file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(done.stderr.strip().splitlines()[-1].replace("'", '"'))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = {"cli": cli_timing(args.runs, Path(tmp) / "sweep.csv"), "in_process": in_process(),
                  "heavy_imports": heavy_imports(),
                  "peak_rss_mib": {"10k_rows": peak_rss_mib(10_000, Path(tmp) / "m10k.csv"),
                                   "1M_rows": peak_rss_mib(1_000_000, Path(tmp) / "m1m.csv")},
                  "against_size": against_size(args.runs, Path(tmp) / "s8k.csv"), "csv_rows_per_s": csv_rows_per_s()}
    print(json.dumps(report, indent=2))
    rss = report["peak_rss_mib"]
    ok = report["cli"]["median_s"] < 1.0 and not report["heavy_imports"] and rss["1M_rows"] <= 1.5 * rss["10k_rows"]
    print("PASS" if ok else "FAIL: targets are < 1 s for 10,000+ points, no heavy imports and flat memory",
          file=sys.stderr)
    issue33 = {"8,448-row sweep <= 2x one size (paired ratio)": report["against_size"]["paired_ratio"] <= 2,
               "CSV rows >= 500k/s beyond start-up": report["csv_rows_per_s"] >= 500_000}
    for target, met in issue33.items():
        print(f"{'met' if met else 'NOT met'}: {target}", file=sys.stderr)
    return 0 if ok and all(issue33.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
