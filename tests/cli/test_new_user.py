"""What a new user still tripped on (issue 34), each through the command line: tracebacks where bad input
should be one line and exit 2, conflicts settled silently, and hints that misled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

LLAMA = "meta-llama/Llama-3.1-8B"


def one_error_line(code: int, out: str, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and lines[0].startswith("kvplan: error: "), (code, out, err)
    return lines[0]


WASTE = ["waste", LLAMA, "--max-model-len", "4k", "--lengths"]


@pytest.mark.parametrize(("args", "needles"), [
    # each was a ValueError/OverflowError traceback from round() or math.exp, exit 1
    pytest.param([*WASTE, "normal:nan,50:100"], ["'nan' is not a finite number"], id="waste-normal-nan"),
    pytest.param([*WASTE, "normal:inf,50:100"], ["'inf' is not a finite number"], id="waste-normal-inf"),
    pytest.param([*WASTE, "normal:1000,inf:100"], ["'inf' is not a finite number"], id="waste-std-inf"),
])
def test_bad_input_is_one_line(run_cli: Any, args: list[str], needles: list[str]) -> None:
    line = one_error_line(*run_cli(*args))
    assert all(n in line for n in needles), line


def test_lognormal_with_a_huge_sigma_is_clamped_not_an_overflow(run_cli: Any) -> None:
    # exp(inv_cdf) of a 1e308 sigma overflowed; every length is clamped to [1, 4096] as the docs say
    code, out, err = run_cli(*WASTE, "lognormal:1000,1e308:100", "--json")
    assert code == 0, err
    data = json.loads(out)  # half the quantiles below 1 token, half past 4096: clamped to the two ends
    assert (data["num_sequences"], data["min_tokens"], data["max_tokens"]) == (100, 1, 4096)


def test_a_binary_lengths_file_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    binary = tmp_path / "lengths.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe")  # was a UnicodeDecodeError traceback
    assert "not a text file" in one_error_line(*run_cli(*WASTE, str(binary)))


@pytest.mark.parametrize(("args", "needles"), [
    # overlapping ranges: the later kind was taken silently for layers 10-15
    pytest.param(["size", LLAMA, "--layer-types", "0-15:full,10-31:sliding", "--window", "4k"],
                 ["0-15:full and 10-31 overlap (layers 10-15)"], id="layer-types-overlap"),
    # another engine's flag in a pasted command: "the closest is --mm-tensor-ipc", "--mamba-full-memory-ratio",
    # "--ubatch-size" (difflib over this release's flags)
    pytest.param(["capacity", "--gpu", "H100", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--mem-fraction-static", "0.8"],
                 ["that is SGLang's flag; vLLM's is --gpu-memory-utilization"], id="vllm-given-sglang-fraction"),
    pytest.param(["capacity", "--gpu", "H100", "--", "python", "-m", "sglang.launch_server", "--model-path",
                  "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.8"],
                 ["that is vLLM's flag; SGLang's is --mem-fraction-static"], id="sglang-given-vllm-fraction"),
    pytest.param(["capacity", "--gpu", "H100", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--tp-size", "2"],
                 ["that is SGLang's flag; vLLM's is --tensor-parallel-size"], id="vllm-given-sglang-tp"),
    pytest.param(["capacity", "--gpu", "H100", "--", "trtllm-serve", "Qwen/Qwen3-8B", "--max-num-seqs", "2"],
                 ["that is vLLM's flag; trtllm-serve's is --max_batch_size"], id="trtllm-given-vllm-seqs"),
])
def test_conflicts_and_hints(run_cli: Any, args: list[str], needles: list[str]) -> None:
    line = one_error_line(*run_cli(*args))
    assert all(n in line for n in needles) and "closest" not in line, line


@pytest.mark.parametrize(("flag", "hint"), [
    ("--max-running-requests", "that is SGLang's flag: kvplan capacity takes --max-num-seqs"),
    ("--kv-cache-memory-bytes", "that is vLLM's flag: kvplan capacity takes --kv-budget"),
    ("--max_batch_size", "that is trtllm-serve's flag: kvplan capacity takes --max-num-seqs"),
    ("--nnodes", "give it inside the launch command, after --"),
])
def test_an_engine_flag_kvplan_lacks_gets_a_hint(capsys: pytest.CaptureFixture[str], flag: str, hint: str) -> None:
    from kvplan.cli import main

    assert main(["capacity", LLAMA, flag, "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"kvplan: error: No such option: {flag}") and hint in err, err
    assert "Possible options" not in err and len(err.splitlines()) == 1


def test_nodes_hold_an_equal_share_of_the_ranks(run_cli: Any) -> None:
    # TP 8 at 3 GPUs a node: --nnodes 3 does not divide 8 ranks (vLLM's executor asserts world_size % nnodes);
    # 4 nodes of 2 is the fewest that does
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "8",
                             "--gpus-per-node", "3", "--json")
    assert code == 0, err
    assert "--nnodes 4" in json.loads(out)["command"]


def test_vllm_config_file_is_read_as_vllm_reads_it(run_cli: Any, tmp_path: Path) -> None:
    # was "no effect on memory": --config FILE; vLLM 0.25.0 utils/argparse_utils.py:443-590 puts each key in as
    # --KEY before the command's own flags (a flag on the command line wins), true a switch, a mapping JSON
    config = tmp_path / "serve.yaml"
    config.write_text("tensor-parallel-size: 2\nmax-model-len: 8192\nenforce-eager: true\n"
                      "speculative-config:\n  method: ngram\n  num_speculative_tokens: 3\n  prompt_lookup_max: 4\n")
    code, out, err = run_cli("capacity", "--gpu", "H100", "--json", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                             "--config", str(config), "--max-model-len", "4096")
    assert code == 0, err
    command = json.loads(out)["command"]
    assert "--tensor-parallel-size 2 --max-model-len 4096" in command and "--enforce-eager" in command, command


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("serve.json", "{}", "vLLM reads only a .yaml or .yml config file"),
    ("serve.yaml", "a: [\n", "not YAML"),
    ("serve.yaml", "- 1\n", "expected a mapping of option names"),
    ("missing.yaml", None, "cannot read it"),
])
def test_a_bad_vllm_config_file_is_one_line(run_cli: Any, tmp_path: Path, name: str, text: str | None,
                                            needle: str) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    line = one_error_line(*run_cli("capacity", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--config", str(path)))
    assert needle in line, line


@pytest.mark.parametrize(("args", "needles"), [
    # was "invalid token count '1k-128k'", never naming the range syntax
    pytest.param(["sweep", LLAMA, "--max-model-len", "1k-128k"], ["a range is written 1k..128k"], id="sweep-dash"),
    pytest.param(["sweep", LLAMA, "--max-model-len", "4k", "--tp", "1-4"], ["a range is written 1..4"],
                 id="sweep-tp-dash"),
    # a typo in the target modules gave "0 modules per layer", 0 bytes, exit 0
    pytest.param(["capacity", LLAMA, "--max-loras", "2", "--lora-target-modules", "banana"],
                 ["--lora-target-modules banana", "has no such module", "q_proj"], id="lora-target-typo"),
    # nan passed `tolerance < 0`; checked before torch is needed
    pytest.param(["probe", "--model", LLAMA, "--device", "cpu", "--tolerance", "nan"],
                 ["--tolerance must be a number >= 0"], id="probe-tolerance-nan"),
])
def test_more_bad_input_is_one_line(run_cli: Any, args: list[str], needles: list[str]) -> None:
    line = one_error_line(*run_cli(*args))
    assert all(n in line for n in needles), line


def test_a_decimal_suffix_in_a_vllm_command_is_noted(run_cli: Any) -> None:
    # vLLM's human_readable_int reads 32k as 32,000 (k = 1,000); kvplan's own --max-model-len 32k is 32,768
    code, out, err = run_cli("capacity", "--gpu", "H100", "--json", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                             "--max-model-len", "32k")
    assert code == 0, err
    data = json.loads(out)
    assert data["max_model_len"] == 32_000
    assert any("--max-model-len 32k is 32,000 as vLLM reads it" in n and "as 32,768" in n for n in data["notes"])


def test_a_refused_kv_dtype_column_is_named_and_shows_no_numbers(run_cli: Any) -> None:
    # was headed "vllm -" with "0.00x" and "0.00 GiB": read as an answer
    code, out, err = run_cli("capacity", LLAMA, "--gpu", "H100", "--max-model-len", "8k",
                             "--kv-cache-dtype", "bf16,int4")
    assert code == 0, err
    header = next(line for line in out.splitlines() if "vllm bf16" in line)
    assert "vllm int4" in header, header
    concurrency = next(line for line in out.splitlines() if "concurrency @" in line)
    assert concurrency.count("x") == 1 and concurrency.rstrip("│ ").endswith("-"), concurrency
