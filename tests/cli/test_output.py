"""What the commands print besides their numbers: notes once and on stderr, summaries instead of floods,
the columns that were asked for, words instead of unexplained marks, plurals, separators and help text."""

from __future__ import annotations

import inspect
import itertools
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvplan.cli import COMMANDS, app, build_app


def test_capacity_all_engines_says_each_note_once_on_stderr(run_cli: Any) -> None:
    code, out, err = run_cli("capacity", "openai/gpt-oss-120b", "--gpu", "H100", "--engine", "all")
    assert code == 0, err
    assert "torch_dtype" not in out and "budget terms estimated" not in out  # stdout: the answer only
    assert err.count("config has no torch_dtype; assuming bf16") == 1  # all four engines: said once, unlabelled
    assert err.count("--kv-budget") == 1  # how to get exact numbers: said once for all engines
    # each engine estimates other terms: one line each, labelled
    assert all(f"kvplan: {e}: budget terms estimated: " in err for e in ("vllm", "sglang", "trtllm", "hf"))
    assert "kvplan: sglang: page size 1" in err  # a note of one engine keeps its name
    _, out, _ = run_cli("capacity", "openai/gpt-oss-120b", "--gpu", "H100", "--engine", "all", "--json")
    assert all("config has no torch_dtype; assuming bf16" in p["notes"] for p in json.loads(out))  # JSON keeps all


def test_a_config_without_a_max_length_says_so_on_screen(tmp_path: Path, run_cli: Any) -> None:
    config = tmp_path / "config.json"
    # a model type transformers does not know: no class default fills max_position_embeddings (llama's would: 2048)
    config.write_text(json.dumps({"model_type": "acme", "architectures": ["LlamaForCausalLM"],
                                  "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "hidden_size": 1024, "torch_dtype": "bfloat16"}))
    code, out, err = run_cli("size", str(config))
    assert code == 0, err
    assert "config names no max length; using 2048 tokens" in err and "1 × 2,048 tokens" in out


def test_sweep_summarizes_skipped_combinations(run_cli: Any) -> None:
    # tp 3, 5, 6, 7 do not divide Llama-3.1-8B's 32 heads: 4 × 2 dtypes = 8 combinations skipped
    code, _, err = run_cli("sweep", "meta-llama/Llama-3.1-8B", "--seq-len", "4k", "--tp", "1,3,5,6,7",
                             "--kv-dtype", "bf16,fp8")
    assert code == 0, err
    assert err.count("skipped") == 1 and "skipped 8 combinations that cannot run, e.g." in err
    assert "and 5 more" in err


def test_sweep_with_engines_shows_the_capacity_columns(run_cli: Any) -> None:
    code, out, err = run_cli("sweep", "meta-llama/Llama-3.1-70B", "--seq-len", "32k", "--tp", "4", "--engine",
                             "vllm", "--gpu", "H100")
    assert code == 0, err
    for header in ("engine", "KV GiB/GPU", "KV tokens", "concurrency", "requests", "fits"):
        assert header in out
    # the same max concurrency `kvplan capacity` reports for 32k tokens at tp 4 on an H100
    _, cap, _ = run_cli("capacity", "meta-llama/Llama-3.1-70B", "--max-model-len", "32k", "--tp", "4", "--gpu",
                        "H100", "--json")
    assert f"{json.loads(cap)['max_concurrency']:,.2f}x" in out


def test_size_workload_says_what_is_reported_in_words(run_cli: Any) -> None:
    code, out, err = run_cli("size", "meta-llama/Llama-3.1-8B", "--batch", "32", "--shared-prefix", "1000",
                             "--seq-len", "1200")
    assert code == 0, err
    assert " * " not in out and "paged *" not in out
    # 7,648 tokens paged × 131,072 B = 0.93 GiB; without sharing 38,400 tokens (+ a block each) = 4.69 GiB
    assert "reported: paged (--allocator; JSON workload.bytes_per_gpu), 0.93 GiB per GPU" in out
    assert "without sharing the 1,000-token prefix 4.69 GiB: prefix sharing saves 3.75 GiB (80.1%)" in out
    assert "paged: whole blocks of 16 tokens" in out and "exact: the tokens held" in out
    assert "32 requests × 1 beam," in out


def test_plurals_and_separators(run_cli: Any) -> None:
    _, out, _ = run_cli("size", "meta-llama/Llama-3.1-8B")
    assert "total, 1 GPU " in out and "all 1 GPUs" not in out
    _, out, _ = run_cli("size", "meta-llama/Llama-3.1-8B", "--tp", "2")
    assert "total, all 2 GPUs" in out
    _, out, _ = run_cli("sweep", "meta-llama/Llama-3.1-8B", "--seq-len", "4k")
    assert "sweep: 1 point\n" in out  # "1 point", not "1 points" (the title is a line of its own)
    _, out, _ = run_cli("capacity", "Qwen/Qwen3-8B", "--kv-budget", "20GiB", "--max-model-len", "40960")
    assert "65,536" in out and "2,560" in out and " 65536 " not in out  # page/layer and blocks/request
    _, out, _ = run_cli("compare", "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B", "--seq-len", "4k")
    assert out.startswith("1 sequence, tp 1")


def test_capacity_help_has_room_for_descriptions() -> None:
    result = CliRunner().invoke(app, ["capacity", "--help"], terminal_width=100, env={"COLUMNS": "100"})
    text = result.stdout
    assert "--no-no-" not in text and "--no-disable" not in text
    assert "--no-async-scheduling" in text and "--disable-hybrid-kv-cache-manager" in text
    # descriptions keep at least 40 of the 100 columns (they were squeezed to ~27); the name column holds vLLM's
    # longest flag (--decode-context-parallel-size,--dcp); the engines' other spellings stay out of it
    line = next(line for line in text.splitlines() if "--kv-budget" in line)
    assert len(line) - line.index("KV memory") >= 40, line
    assert "--tp-size" not in text and "--context-length," not in text


def _help_strings() -> list[tuple[str, str]]:
    """(command, help text) of every option whose help holds a bracket."""
    out = []
    for name in COMMANDS:
        callback = inspect.unwrap(build_app((name,), completion=False).registered_commands[0].callback)
        for hint in typing.get_type_hints(callback, include_extras=True).values():
            for meta in getattr(hint, "__metadata__", ()):
                if getattr(meta, "help", None) and "[" in meta.help:
                    out.append((name, meta.help))
    return out


@pytest.mark.parametrize(("command", "help_text"), _help_strings())
def test_brackets_in_help_survive_rich_markup(command: str, help_text: str) -> None:
    """`kvplan[plot]` in a help string must print as written (rich reads [plot] as a style tag and drops it)."""
    words = re.findall(r"\\?\[[^\]]*\]", help_text)
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200, env={"COLUMNS": "200"})
    flat = " ".join(result.stdout.replace("│", " ").split())
    for word in words:
        assert word.lstrip("\\") in flat, (word, command)


def test_help_brackets_are_checked() -> None:
    assert any("kvplan\\[plot]" in text for _, text in _help_strings())  # the test above is not empty


def test_progress_is_silent_without_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from kvplan.cli.progress import Step, progress

    with progress("working") as step:
        step(1, 2)
    assert type(step) is Step and capsys.readouterr().err == ""


def test_progress_draws_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from kvplan.cli.progress import BarStep, progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with progress("working") as step:
        step.describe("model (bf16)")
        step(1, 2)
        step(2, 2)
    assert isinstance(step, BarStep)


def test_long_commands_report_progress() -> None:
    from kvplan.planning.fit import fit
    from kvplan.planning.request import Memory
    from kvplan.workflows.sweep import EngineAxis, sweep

    calls: list[tuple[int, int]] = []
    sweep(["Qwen/Qwen3-8B"], max_model_lens=(4096, 8192), tps=(1, 3),
          engines=EngineAxis(engines=("vllm",), memory=Memory(gpu="H100")),
          progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]  # 2 tp × 2 lengths capacity points; tp 3 counted as done
    calls.clear()
    result = fit("Qwen/Qwen3-8B", gpu=["H100", "L40S"], max_model_len=8192, concurrency=4,
                 progress=lambda done, total: calls.append((done, total)))
    total = result.num_evaluated + result.num_skipped  # a setup the bound skips is done without being planned
    assert calls[-1] == (total, total) and len(calls) == result.num_evaluated + 1
    assert all(a[0] <= b[0] and a[1] == total for a, b in itertools.pairwise(calls))


@pytest.mark.parametrize("command", ["size", "models", "capacity", "fit", "compare", "sweep", "waste", "probe",
                                     "reconcile", "report"])
def test_help_reads_at_80_columns(command: str) -> None:
    """No flag name cut ("--decode-context-parallel-si…"), no <bool> beside a switch, options in panels."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    done = subprocess.run([sys.executable, "-m", "kvplan", command, "--help"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text and "<bool>" not in text, text
    if command == "capacity":
        panels = [line.split(" ─")[0] for line in text.splitlines() if line.endswith("───")]
        assert panels[:2] == ["Arguments", "Options"] and {"Parallelism", "Cache", "Engine", "GPU memory",
                                                            "Beside the cache", "Output"} <= set(panels)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_fits_120_lines_at_80_columns(command: str) -> None:
    """`kvplan capacity --help` was 216 lines at 80 columns (typer's table: a 37-column help column holding other
    commands' notes); each option is now one row of its first clause and this command's own notes."""
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= 120 and max(len(line) for line in lines) <= 80, (len(lines), result.stdout)


def test_help_keeps_this_commands_notes_and_drops_the_others() -> None:
    from kvplan.cli.help import first_clause

    text = "GPU type (default H100); a comma list; fit: every GPU (of the catalog; priced); probe: the index."
    assert first_clause(text, "fit") == "GPU type (default H100); fit: every GPU (of the catalog; priced)."
    assert first_clause(text, "capacity") == "GPU type (default H100)."
    assert first_clause("Tokens (4096, 32k; also --seq-len); default: the model's.") == \
        "Tokens (4096, 32k; also --seq-len)."
    probe = CliRunner().invoke(app, ["probe", "--help"], terminal_width=80, env={"COLUMNS": "80"}).stdout
    capacity = CliRunner().invoke(app, ["capacity", "--help"], terminal_width=80, env={"COLUMNS": "80"}).stdout
    assert "probe: the local CUDA device's index" in " ".join(probe.split())
    assert "probe:" not in capacity and "sweep:" not in capacity


def test_the_docs_keep_every_options_whole_help() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import docs_hooks

    table = docs_hooks.options_table("capacity")
    assert "| `--gpu` | GPU type: H100, H200, A100-80G, L40S, ... (default H100); a comma list where a command ranks " \
           "them; fit: default every GPU of the catalog; probe: the local CUDA device's index. |" in table
