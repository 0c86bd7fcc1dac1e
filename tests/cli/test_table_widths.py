"""Every command's tables at 60, 80, 100 and 160 columns: every number of the JSON answer that the table
shows is printed whole, at every width (a rich table while it fits, a stacked layout below; never `…`).

The reference is the same tables drawn 1,000 columns wide; the numbers are the JSON answer's integers
(as the tables print them, with separators) found there, plus every numeric token of that drawing.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from rich.console import Console
from terminal import drain
from typer.testing import CliRunner

from kvplan.cli import app, common
from kvplan.planning.request import Memory
from kvplan.render.capacity_tables import capacity_tables
from kvplan.render.fit import fit_tables
from kvplan.render.models import compact_table, full_table, models_tables
from kvplan.render.payload import plain
from kvplan.render.probe import probe_tables
from kvplan.render.reconcile import reconcile_tables
from kvplan.render.size import size_tables
from kvplan.render.workflows import compare_tables, size_and_workload_tables, sweep_tables, waste_tables
from kvplan.workflows.sweep import EngineAxis, sweep

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (60, 80, 100, 160)
NUMBER = re.compile(r"\d[\d,.]*\d|\d")
LOG = "tests/data/logs/vllm-v066-internvl3-78b-tp8-l40s.log"


def draw(tables: Callable[[Any], list[Any]], payload: Any, width: int) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, highlight=False)
    for table in tables(payload):
        console.print(table)
    return buf.getvalue()


def ints(value: Any) -> Iterator[int]:
    """Every integer of a JSON answer (booleans are not numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from ints(v)
    elif isinstance(value, list):
        for v in value:
            yield from ints(v)


def whole(number: str, text: str) -> bool:
    return re.search(rf"(?<![\d,.]){re.escape(number)}(?![\d,])", text) is not None


def cli_json(*args: str, code: int = 0) -> tuple[Any, Any]:
    """(the typed payload the command's tables are drawn from, the JSON answer it prints with --json)."""
    seen: list[Any] = []

    def spy(payload: Any) -> Any:
        seen.append(payload)
        return plain(payload)

    with mock.patch.object(common, "plain", spy):
        result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == code, result.stderr
    answer = json.loads(result.stdout)
    assert len(seen) == 1 and plain(seen[0]) == answer  # the tables' payload is what the JSON says
    return seen[0], answer


def sweep_rows() -> tuple[Any, list[dict[str, Any]]]:
    result = sweep(["meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B"], max_model_lens=(4096, 32768), tps=(1, 4),
                   kv_dtypes=("bf16", "fp8"), batches=(1, 64),
                   engines=EngineAxis(engines=("vllm", "sglang"), memory=Memory(gpu="H100")))
    return result, list(result.dicts())


# id -> (tables, () -> (what the tables draw, the JSON answer), numbers the table must show)
CASES: dict[str, tuple[Callable[[Any], list[Any]], Callable[[], tuple[Any, Any]], list[str]]] = {
    "size": (size_tables, lambda: cli_json("size", "openai/gpt-oss-20b", "--tp", "2"),
             ["bytes_per_token", "total_bytes_per_gpu", "total_bytes_all_gpus"]),
    "size-workload": (size_and_workload_tables, lambda: cli_json(
        "size", "meta-llama/Llama-3.1-8B", "--batch", "32", "--shared-prefix", "1000", "--seq-len", "1200"),
        ["total_bytes", "workload.bytes_per_gpu", "workload.unshared_bytes_per_gpu"]),
    "models": (lambda rows: [full_table(rows)], lambda: cli_json("models"),
               ["0.bytes_per_token", "-1.bytes_per_token", "0.num_layers", "-1.max_model_len"]),
    "models-compact": (lambda rows: [compact_table(rows)], lambda: cli_json("models"),
                       ["0.bytes_per_token", "-1.bytes_per_token", "-1.max_model_len"]),
    "capacity": (capacity_tables, lambda: cli_json("capacity", "Qwen/Qwen3-8B", "--kv-budget", "20GiB",
                                                   "--max-model-len", "40960"),
                 ["kv_tokens", "num_blocks", "page_bytes", "weights_bytes_per_gpu"]),
    "capacity-all": (capacity_tables, lambda: cli_json("capacity", "openai/gpt-oss-120b", "--gpu", "H100",
                                                       "--engine", "all"),
                     ["0.kv_tokens", "1.kv_tokens", "2.num_blocks", "3.kv_tokens"]),
    "fit": (fit_tables, lambda: cli_json("fit", "deepseek-ai/DeepSeek-V3", "--context", "128k",
                                         "--concurrency", "16", "--gpu", "H100,H200", "--price",
                                         "H100=2.49,H200=3.5"), ["context", "concurrency", "num_evaluated"]),
    "compare": (compare_tables, lambda: cli_json(
        "compare", "meta-llama/Llama-3.1-70B", "Qwen/Qwen2.5-72B", "deepseek-ai/DeepSeek-V3", "--seq-len", "32k",
        "--tp", "8", "--engine", "vllm", "--gpu", "H100"),
        ["0.bytes_per_token", "2.bytes_per_token_per_gpu", "0.capacity.0.kv_tokens"]),
    "sweep": (sweep_tables, sweep_rows, ["0.bytes_per_token_per_gpu", "-1.kv_tokens", "0.seq_len"]),
    "waste": (waste_tables, lambda: cli_json("waste", "meta-llama/Llama-3.1-8B", "--max-seq-len", "4096",
                                             "--lengths", "lognormal:800,1.0:1000"),
              ["allocators.0.total_bytes_per_gpu", "allocators.1.kv_tokens", "max_seq_len"]),
    "probe": (probe_tables, lambda: cli_json("probe", "--device", "cpu", "--model", "meta-llama/Llama-3.1-8B",
                                             "--blocks", "4", "--no-kernel-check"),
              ["results.0.predicted_bytes", "results.0.measured_bytes"]),
    "reconcile": (reconcile_tables, lambda: cli_json("reconcile", str(ROOT / LOG), "--model",
                                                     "Qwen/Qwen2.5-72B"), ["checks.3.logged"]),
}


def at(payload: Any, path: str) -> int:
    for key in path.split("."):
        payload = payload[int(key)] if isinstance(payload, list) else payload[key]
    assert isinstance(payload, int), path
    return payload


@pytest.mark.parametrize("case", list(CASES))
def test_every_number_is_whole_at_every_width(case: str) -> None:
    tables, answer, required = CASES[case]
    if case == "probe":
        pytest.importorskip("torch")
    drawn, payload = answer()
    reference = draw(tables, drawn, 1000)
    shown = {f"{n:,}" for n in ints(payload) if n >= 10 and whole(f"{n:,}", reference)}
    for path in required:  # the test is not vacuous: these JSON numbers are in the table
        assert f"{at(payload, path):,}" in shown, (path, at(payload, path))
    tokens = Counter(NUMBER.findall(reference))
    for width in WIDTHS:
        out = draw(tables, drawn, width)
        assert "…" not in out, (width, out)
        assert max(len(line.rstrip()) for line in out.splitlines()) <= width
        missing = [n for n in shown if not whole(n, out)]
        assert not missing, (width, missing, out)
        assert not tokens - Counter(NUMBER.findall(out)), (width, tokens - Counter(NUMBER.findall(out)), out)


def test_a_terminal_of_80_columns_gets_whole_numbers() -> None:
    """The real thing: `kvplan compare` on a terminal (a pty) of 80 columns; the table stacks."""
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "80", "LINES": "50", "TERM": "xterm"}
    proc = subprocess.run([sys.executable, "-m", "kvplan", "compare", "meta-llama/Llama-3.1-70B", "Qwen/Qwen2.5-72B",
                           "--seq-len", "32k", "--tp", "8"], stdout=follower, stderr=subprocess.PIPE, cwd=ROOT,
                          env=env, timeout=60)
    os.close(follower)
    out = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drain(leader).decode())  # colours and styles off
    assert proc.returncode == 0, proc.stderr
    assert "…" not in out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    assert "B/token: 327,680" in out and "B/token/GPU: 40,960" in out and "seq len: 32,768" in out


def test_piped_output_keeps_whole_rows() -> None:
    """Not a terminal: the fixed wide width, so files and `| head` get the table, rows whole."""
    proc = subprocess.run([sys.executable, "-m", "kvplan", "compare", "meta-llama/Llama-3.1-70B", "Qwen/Qwen2.5-72B",
                           "--seq-len", "32k", "--tp", "8"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "80"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "┃ model" in proc.stdout and "│ meta-llama/Llama-3.1-70B │ GQA" in proc.stdout and "…" not in proc.stdout


def test_models_at_80_columns_is_one_line_per_model() -> None:
    """`kvplan models` stacked at 80 and 100 columns (3 lines a model, 310 lines); the compact listing keeps
    each model on one line of at most 80 columns, and the full table (every column) where it fits."""
    rows, _ = cli_json("models")
    narrow, wide = draw(models_tables, rows, 80), draw(models_tables, rows, 200)
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80 and len(lines) < 2 * len(rows), narrow
    for row in rows:
        name = row.id.rpartition("/")[2]
        line = next(line for line in lines if line.startswith(f"│ {name} "))
        assert f" {row.bytes_per_token:,} " in line and f" {row.attention} " in line, line
    assert "state bytes/seq" in wide and "head dim" in wide and "model " not in wide.splitlines()[2]

