"""Answers a script can trust, checked on a real `kvplan` process (`python -m kvplan`):
0 = an answer that fits, 1 = a valid answer that says no (printed, with the reason), 2 = bad input (one
line on stderr, nothing on stdout, no traceback). Plus the basics: help, version, completion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LLAMA8 = "meta-llama/Llama-3.1-8B"


def kvplan(*args: str, env: dict[str, str] | None = None, code: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "kvplan", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def assert_bad_input(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("kvplan: error: "), proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


BAD_INPUT = [
    pytest.param(["fit", LLAMA8, "--gpu", "H900", "--context", "32k", "--concurrency", "4"],
                 ["unknown GPU 'H900'", "H200"], id="fit-unknown-gpu"),
    pytest.param(["capacity", LLAMA8, "--gpu", "A100"], ["ambiguous", "A100-40G, A100-80G"], id="ambiguous-gpu"),
    pytest.param(["fit", LLAMA8, "--gpu", "V100", "--context", "4k", "--concurrency", "1"],
                 ["ambiguous", "V100-16G, V100-32G"], id="fit-ambiguous-gpu"),
    pytest.param(["capacity", LLAMA8, "--gpu-mem", "80"], ["--gpu-mem '80'", "did you mean 80GiB?"], id="gpu-mem-80"),
    pytest.param(["capacity", LLAMA8, "--kv-budget", "20"], ["--kv-budget '20'", "did you mean 20GiB?"],
                 id="kv-budget-20"),
    pytest.param(["capacity", LLAMA8, "--kv-budget", "20GiB,20"], ["--kv-budget '20'", "20GiB?"],
                 id="kv-budget-stage-20"),
    pytest.param(["capacity", LLAMA8, "--overhead", "512"], ["--overhead '512'", "did you mean 512GiB?"],
                 id="overhead-512"),
    pytest.param(["fit", LLAMA8, "--context", "4k", "--concurrency", "1", "--gpu-mem", "80"], ["80GiB?"],
                 id="fit-gpu-mem-80"),
    pytest.param(["sweep", LLAMA8, "--seq-len", "4k", "--engine", "vllm", "--kv-budget", "20"], ["20GiB?"],
                 id="sweep-kv-budget-20"),
    pytest.param(["size", LLAMA8, "--seq-len", "99999999999999999999"], ["--max-model-len", "beyond any model's length",
                                                                          "2,147,483,648"], id="seq-len-huge"),
    pytest.param(["size", LLAMA8, "--batch", "1.5"], ["--batch must be a whole number, got '1.5'"], id="batch-1.5"),
    pytest.param(["compare", LLAMA8, "Qwen/Qwen3-8B", "--batch", "2.5"], ["--batch must be a whole number"],
                 id="compare-batch-2.5"),
    pytest.param(["sweep", LLAMA8, "--seq-len", "4k", "--tp", "1,1.5"], ["--tensor-parallel-size must be a whole number"],
                 id="sweep-tp-1.5"),
    pytest.param(["compare", LLAMA8], ["compare takes two or more models, got 1", "kvplan size"], id="compare-one"),
    pytest.param(["sweep", LLAMA8, "--seq-len", "4k", "--csv", "/nonexistent/dir/x.csv"],
                 ["--csv", "does not exist"], id="csv-missing-folder"),
    pytest.param(["sweep", LLAMA8, "--seq-len", "4k", "--csv", "/"], ["--csv", "is a folder"], id="csv-a-folder"),
    pytest.param(["sweep", LLAMA8, "--seq-len", "4k", "--plot", "/nonexistent/dir/x.png"], ["does not exist"],
                 id="sweep-plot-missing-folder"),
    pytest.param(["compare", LLAMA8, "Qwen/Qwen3-8B", "--plot", "/nonexistent/x.png"], ["does not exist"],
                 id="compare-plot-missing-folder"),
    pytest.param(["capacity", LLAMA8, "--plot", "/nonexistent/x.png"], ["does not exist"],
                 id="capacity-plot-missing-folder"),
    pytest.param(["sweep", LLAMA8, "--seq-len", "4k", "--engine", "vllm", "--gpu", "H900"], ["unknown GPU"],
                 id="sweep-engine-unknown-gpu"),
    pytest.param(["compare", LLAMA8, "Qwen/Qwen3-8B", "--engine", "vlm"], ["unknown engine 'vlm'"],
                 id="compare-unknown-engine"),
    pytest.param(["fit", LLAMA8, "--context", "4k", "--concurrency", "1", "--price", "H100=cheap"],
                 ["--price", "'cheap'"], id="fit-bad-price"),
    pytest.param(["fit", LLAMA8, "--context", "4k", "--concurrency", "1", "--price", "/nonexistent/prices.csv"],
                 ["cannot read the price file"], id="fit-missing-price-file"),
]


@pytest.mark.parametrize(("argv", "needles"), BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], needles: list[str]) -> None:
    assert_bad_input(kvplan(*argv), *needles)


def test_sweep_csv_into_a_read_only_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    assert_bad_input(kvplan("sweep", LLAMA8, "--seq-len", "4k", "--csv", str(folder / "x.csv")), "cannot write --csv")


def test_a_missing_matplotlib_fails_before_any_work() -> None:
    # matplotlib hidden from this process: `capacity --plot` says so in one line, before printing a table
    code = ("import sys; sys.modules['matplotlib'] = None; from kvplan.cli import main; sys.argv[0] = 'kvplan'; "
            "sys.exit(main())")
    for argv in (["capacity", LLAMA8, "--plot", "x.png"], ["sweep", LLAMA8, "--seq-len", "4k", "--plot", "x.svg"],
                 ["compare", LLAMA8, "Qwen/Qwen3-8B", "--plot", "x.png"]):
        assert_bad_input(kvplan(*argv, code=code), "plots need matplotlib", "kvplan[plot]")


def test_fit_answers_0_when_a_setup_serves_the_load() -> None:
    proc = kvplan("fit", LLAMA8, "--context", "8k", "--concurrency", "16", "--gpu", "H100")
    assert proc.returncode == 0, proc.stderr
    assert "-> 1 × (tp 1 pp 1) on H100-SXM" in proc.stdout and "ranked by GPUs" in proc.stdout


def test_fit_answers_1_with_the_table_when_nothing_fits() -> None:
    proc = kvplan("fit", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--context", "128k", "--concurrency", "1000",
                  "--max-gpus", "16")
    assert proc.returncode == 1, proc.stderr
    assert "nothing fits" in proc.stdout and "why not" in proc.stdout and "more than the 16 allowed" in proc.stdout
    assert "nothing up to 16 GPUs serves 1,000 × 131,072 tokens" in proc.stderr and "Traceback" not in proc.stderr


def test_bare_kvplan_prints_the_help_and_exits_0() -> None:
    proc = kvplan()
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "Usage: kvplan" in proc.stdout and "capacity" in proc.stdout and "error" not in proc.stdout


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    proc = kvplan(flag)
    assert proc.returncode == 0 and proc.stdout.startswith("kvplan "), proc.stdout + proc.stderr


@pytest.mark.parametrize("argv", [["-h"], ["size", "-h"], ["fit", "-h"], ["capacity", "-h"]])
def test_short_help(argv: list[str]) -> None:
    proc = kvplan(*argv)
    assert proc.returncode == 0 and "Usage: kvplan" in proc.stdout, proc.stderr


def test_shell_completion() -> None:
    script = kvplan("--show-completion", env={"SHELL": "/bin/bash"})
    assert script.returncode == 0 and "_KVPLAN_COMPLETE" in script.stdout, script.stderr
    help_text = kvplan("--help").stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text
    # what the installed script runs on <TAB>: click's protocol through the environment
    words = kvplan(env={"_KVPLAN_COMPLETE": "complete_bash", "COMP_WORDS": "kvplan si", "COMP_CWORD": "1"})
    assert words.returncode == 0 and words.stdout.split() == ["size"], words.stdout + words.stderr
    flags = kvplan(env={"_KVPLAN_COMPLETE": "complete_bash", "COMP_WORDS": "kvplan fit --max-r", "COMP_CWORD": "2"})
    assert flags.stdout.split() == ["--max-replicas"], flags.stdout + flags.stderr


@pytest.mark.parametrize(("words", "expected"), [
    pytest.param("kvplan size meta-llama/Llama-3.1-8", {"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct"},
                 id="model-ids"),
    pytest.param("kvplan capacity m --gpu H2", {"H200"}, id="gpu-types"),
    pytest.param("kvplan capacity m --engine sgl", {"sglang", "sglang@0.5", "sglang@0.5.23", "sglang@0.5.2",
                                                    "sglang@0.4"}, id="engines"),
    pytest.param("kvplan size m --kv-cache-dtype fp8_", {"fp8_e4m3", "fp8_e5m2", "fp8_per_token_head", "fp8_ds_mla"},
                 id="kv-dtypes"),
])
def test_completion_of_values(words: str, expected: set[str]) -> None:
    """<TAB> completes model ids, GPU types, engines and KV dtypes, not only commands and flags."""
    done = kvplan(env={"_KVPLAN_COMPLETE": "complete_bash", "COMP_WORDS": words,
                       "COMP_CWORD": str(len(words.split()) - 1)})
    assert done.returncode == 0 and expected <= set(done.stdout.split()), done.stdout + done.stderr
