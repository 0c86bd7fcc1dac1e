"""The rough edges a new user hit (issue 25), each through the command line: bad input that was accepted with
exit 0 and a nonsense answer, messages that misled, and values taken silently from class defaults."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

LLAMA = "meta-llama/Llama-3.1-8B"


def one_error_line(code: int, out: str, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and lines[0].startswith("kvplan: error: "), (code, out, err)
    return lines[0]


@pytest.mark.parametrize(("args", "needles"), [
    # a 1,000,000,000-token block: a 122,070 GiB sequence, exit 0
    pytest.param(["size", LLAMA, "--block-size", "1000000000"], ["--block-size must be 0 (no paging) or 1 to 65,536"],
                 id="block-size-1e9"),
    pytest.param(["fit", LLAMA, "--max-model-len", "8k", "--batch", "4", "--max-gpus", "0"],
                 ["--max-gpus must be positive, got 0"], id="fit-max-gpus-0"),  # was ignored
    pytest.param(["capacity", LLAMA, "--gpu-mem", "10TiB"], ["--gpu-mem 10.00 TiB: no GPU has more than 1 TiB"],
                 id="gpu-mem-10tib"),  # 587x concurrency on an "H100"
    pytest.param(["capacity", LLAMA, "--kv-budget", "0GiB"], ["--kv-budget 0: give the KV memory"],
                 id="kv-budget-0"),  # was exit 1; the README says a size under 1 MiB is exit 2
    pytest.param(["capacity", LLAMA, "--engine", "vllm,"], ["--engine 'vllm,' has an empty item"],
                 id="engine-trailing-comma"),  # suggested "a range like 1k..128k"
    # found by running 106 bad inputs through every command (the messages did not name the flag, or misled)
    pytest.param(["capacity", LLAMA, "--cpu-offload-gb", "-5"], ["--cpu-offload-gb: invalid size"],
                 id="cpu-offload-negative"),
    pytest.param(["capacity", LLAMA, "--kv-offloading-size", "abc"], ["--kv-offloading-size: invalid size"],
                 id="kv-offloading-garbage"),
    pytest.param(["size", LLAMA, "--beam-width", "0"], ["--beam-width must be positive, got 0"], id="beam-width-0"),
    pytest.param(["fit", LLAMA, "--max-model-len", "32k", "--kv-cache-dtype", "any,fp9"],
                 ["any (auto, then fp8) stands alone"], id="fit-any-in-a-list"),
    pytest.param(["waste", LLAMA, "--max-model-len", "4k", "--lengths", "normal:1,2"],
                 ["it needs a count, KIND:PARAMS:N"], id="waste-spec-without-count"),
    # a second round at 80 columns (issue 25's "look for more"): accepted with exit 0, or a message that misled
    pytest.param(["size", "tiiuae/falcon-mamba-7b", "--mamba-ssm-cache-dtype", "int4"],
                 ["--mamba-ssm-cache-dtype 'int4'", "auto, fp32, bf16 or fp16"], id="ssm-state-int4"),  # was exit 0
    pytest.param(["size", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--mamba-cache-dtype", "fp8"],
                 ["--mamba-cache-dtype 'fp8'"], id="conv-state-fp8"),  # was exit 0; vLLM's MambaDType has no fp8
    pytest.param(["capacity", LLAMA, "--kv-budget", "100TiB"], ["--kv-budget 100.00 TiB: more than any GPU's memory"],
                 id="kv-budget-100tib"),  # was exit 0, while --gpu-mem 10TiB is refused
])
def test_bad_input_is_refused_in_one_line(run_cli: Any, args: list[str], needles: list[str]) -> None:
    line = one_error_line(*run_cli(*args))
    assert all(n in line for n in needles), line


def test_head_dim_0_is_named_not_silently_read_as_128(run_cli: Any, tmp_path: Path) -> None:
    config = json.loads((Path(__file__).parents[2] / "configs/meta-llama/Llama-3.1-8B/config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "head_dim": 0}))
    code, out, err = run_cli("size", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["layer_groups"][0]["head_dim"] == 128, err
    notes = json.loads(out)["notes"]
    assert any(n.startswith("head_dim is 0 in the config: read as hidden_size // num_attention_heads = 128")
               for n in notes), notes


def test_class_defaults_are_named_in_a_note(run_cli: Any, tmp_path: Path) -> None:
    """A config without num_hidden_layers took LlamaConfig's 32 without a word."""
    config = json.loads((Path(__file__).parents[2] / "configs/meta-llama/Llama-3.1-8B/config.json").read_text())
    del config["num_hidden_layers"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out, err = run_cli("size", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["layer_groups"][0]["num_layers"] == 32, err
    notes = json.loads(out)["notes"]
    assert any(n.startswith("num_hidden_layers = 32 is not in the config: the default of model_type llama") for n in
               notes), notes


def test_a_fifo_is_not_a_config(run_cli: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "is not a regular file or a folder" in one_error_line(*run_cli("size", str(fifo)))  # "holds no config"


def test_bytes_that_are_not_utf8(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b'{"a": "\xb5"}')
    line = one_error_line(*run_cli("size", str(tmp_path / "config.json")))
    assert "is not UTF-8 text (byte 0xb5 at offset 7)" in line and "codec" not in line


def test_a_revision_of_a_bundled_id_says_it_is_bundled(run_cli: Any) -> None:
    line = one_error_line(*run_cli("size", LLAMA, "--revision", "main"))
    assert "neither bundled" not in line and f"{LLAMA} is bundled: without revision kvplan reads the bundled" in line


def test_waste_takes_a_comma_list_of_lengths(run_cli: Any) -> None:
    code, out, err = run_cli("waste", LLAMA, "--max-model-len", "32k", "--lengths", "100,100,2000,30000", "--json")
    assert code == 0, err
    assert json.loads(out)["num_sequences"] == 4  # each length one request, repeats included


def test_help_sentences_are_not_broken_where_the_source_wrapped() -> None:
    """`kvplan --help` at 80 columns broke the capacity line after "concurrency," (the docstring's own line
    break), and showed <bool> beside --version and the completion switches."""
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    done = subprocess.run([sys.executable, "-m", "kvplan", "--help"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0 and "<bool>" not in done.stdout, done.stdout
    from typer.main import get_command

    from kvplan.cli import app, unwrapped

    group = get_command(app)
    assert group.help is not None and "\n" not in group.help.split("\n\n")[1]
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert all("\n" not in part for part in (command.help or "").split("\n\n")), name
    assert unwrapped("a\n  b\n\nc\nd") == "a b\n\nc d"
