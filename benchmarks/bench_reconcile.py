"""`kvplan reconcile` on a server's log: throughput and memory on a synthetic 100 MB and 1 GB log (issue 33).

The log: request lines in vLLM's shapes (the "Received request" line of vllm/entrypoints/logger.py, uvicorn's access
line, the periodic stats line of vllm/v1/metrics/loggers.py), then a real start-up log from tests/data/logs, then more
request lines: an earlier run's requests, a restart, its requests (what `kubectl logs` of a long-lived server holds).
Each command runs in a fresh process, start-up included:

1. MB/s of `kvplan reconcile big.log --json` (target: >= 50 MB/s on the 1 GB log);
2. the same through standard input, `cat big.log | kvplan reconcile - --json` (target: the same answer, >= 50 MB/s);
3. peak resident memory of the 1 GB run against the 100 MB run (target: within 1.2x: memory does not grow with the
   log);
4. the answer against the start-up log alone: the same checks, lines shifted by the request lines before it.

Run: python benchmarks/bench_reconcile.py [--gb 1.0] [--log NAME]  (the log is written to a temporary folder)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "logs"
CLI = [sys.executable, "-m", "kvplan", "reconcile"]


def request_lines(count: int = 3000) -> str:
    lines = []
    for i in range(count):
        lines += [f"INFO 08-07 12:{i % 60:02d}:{i % 57:02d} [logger.py:43] Received request cmpl-{i:032x}-0: prompt: "
                  f"'Summarize ticket {i} for the on-call engineer in two sentences.', params: SamplingParams(n=1, "
                  "presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.7, top_p=1.0, "
                  "top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], max_tokens=256, min_tokens=0, "
                  "logprobs=None, skip_special_tokens=True), prompt_token_ids: None, lora_request: None.",
                  f"INFO 08-07 12:{i % 60:02d}:{i % 57:02d} [async_llm.py:270] Added request cmpl-{i:032x}-0.",
                  f'INFO:     10.0.{i % 7}.{i % 250}:{40000 + i} - "POST /v1/completions HTTP/1.1" 200 OK']
        if i % 25 == 0:
            lines.append(f"INFO 08-07 12:{i % 60:02d}:{i % 57:02d} [loggers.py:123] Engine 000: Avg prompt throughput: "
                         f"{1000 + i % 900}.4 tokens/s, Avg generation throughput: {300 + i % 200}.1 tokens/s, Running: "
                         f"{i % 40} reqs, Waiting: 0 reqs, GPU KV cache usage: {i % 97}.2%, Prefix cache hit rate: 41.0%")
    return "\n".join(lines) + "\n"


def write_log(path: Path, startup: str, megabytes: float) -> int:
    """An earlier run's requests (a third), the start-up, its requests; returns the lines before the start-up."""
    block = request_lines().encode()
    blocks = max(2, int(megabytes * 1e6 / len(block)))
    before = blocks // 3
    with path.open("wb") as out:
        for _ in range(before):
            out.write(block)
        out.write(startup.encode())
        for _ in range(blocks - before):
            out.write(block)
    return before * block.count(b"\n")


def run(args: list[str], stdin: Path | None = None) -> tuple[dict[str, object], float, float]:
    """(the JSON answer, wall seconds, peak resident MiB) of one fresh process."""
    start = time.perf_counter()
    with (stdin.open("rb") if stdin else open(os.devnull, "rb")) as feed:
        proc = subprocess.Popen(CLI + args, stdin=feed, stdout=subprocess.PIPE)
        out = proc.stdout.read() if proc.stdout else b""
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) in (0, 1), status
    return json.loads(out), wall, usage.ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0, help="size of the big log in GB (default 1)")
    parser.add_argument("--log", default="vllm-v0102-qwen3-8b-fp8-lora-l4", help="the start-up log in tests/data/logs")
    args = parser.parse_args()
    startup = (LOGS / f"{args.log}.log").read_text()
    startup += "" if startup.endswith("\n") else "\n"
    alone, _, _ = run([str(LOGS / f"{args.log}.log"), "--json"])
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "100mb.log", Path(tmp) / "big.log"
        write_log(small, startup, 100)
        shift = write_log(big, startup, args.gb * 1000)
        small_answer, small_s, small_mib = run([str(small), "--json"])
        big_answer, big_s, big_mib = run([str(big), "--json"])
        piped, piped_s, _ = run(["-", "--json"], stdin=big)
        size_mb = big.stat().st_size / 1e6
        report = {"log": args.log, "big_log_mb": round(size_mb), "lines_before_startup": shift,
                  "mb_per_s_file": round(size_mb / big_s, 1), "mb_per_s_stdin": round(size_mb / piped_s, 1),
                  "mb_per_s_100mb": round(small.stat().st_size / 1e6 / small_s, 1),
                  "peak_rss_mib_100mb": round(small_mib, 1), "peak_rss_mib_big": round(big_mib, 1),
                  "rss_ratio": round(big_mib / small_mib, 3)}
    checks = [(c["quantity"], c["logged"], [n + shift for n in c["lines"]]) for c in alone["checks"]]  # type: ignore[attr-defined]
    targets = {
        ">= 50 MB/s reading the big log (file)": report["mb_per_s_file"] >= 50,
        ">= 50 MB/s reading the big log (stdin)": report["mb_per_s_stdin"] >= 50,
        "stdin gives the file's answer": piped == big_answer,
        "the start-up's checks, lines shifted": checks == [(c["quantity"], c["logged"], c["lines"])
                                                            for c in big_answer["checks"]],  # type: ignore[attr-defined]
        "peak memory of the big log <= 1.2x the 100 MB log's": report["rss_ratio"] <= 1.2,
        "the 100 MB log's logged numbers are the big log's": [c["logged"] for c in small_answer["checks"]]  # type: ignore[attr-defined]
        == [c["logged"] for c in big_answer["checks"]],  # type: ignore[attr-defined]
    }
    print(json.dumps(report, indent=2))
    for target, met in targets.items():
        print(f"{'met' if met else 'NOT met'}: {target}")
    return 0 if all(targets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
