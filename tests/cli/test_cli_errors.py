"""Every class of bad command-line input: exit code 2, exactly one line on stderr, nothing on
stdout, no traceback. Checked three ways: typer's CliRunner (the command itself), kvplan.cli.main
in-process (the console script, which also turns click's usage errors into one line), and a real
`python -m kvplan` subprocess for one case of each class.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app, main

ROOT = Path(__file__).resolve().parents[2]
LLAMA = "meta-llama/Llama-2-70b-hf"  # 80 layers, 64 heads, 8 KV heads


def _bad_config_files(tmp: Path) -> dict[str, Path]:
    """Malformed and incomplete config files, by name."""
    bodies: dict[str, bytes] = {
        "empty": b"",
        "truncated": b'{"num_hidden_layers": 32, "num_attention_heads": ',
        "not-an-object": b"[1, 2, 3]",
        "latin1": '{"model_type": "llamaé", "num_hidden_layers": 2}'.encode("latin-1"),
        "no-layers": json.dumps({"num_attention_heads": 32, "hidden_size": 4096}).encode(),
        "no-heads": json.dumps({"num_hidden_layers": 32, "hidden_size": 4096}).encode(),
        "no-head-dim": json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32}).encode(),
        "zero-layers": json.dumps({"num_hidden_layers": 0, "num_attention_heads": 32, "hidden_size": 4096}).encode(),
        "negative-heads": json.dumps({"num_hidden_layers": 2, "num_attention_heads": -8, "hidden_size": 4096}).encode(),
        "string-layers": json.dumps({"num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096}).encode(),
        "kv-gt-heads": json.dumps({"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 16,
                                   "hidden_size": 1024}).encode(),
        "mla-without-rope": json.dumps({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 1024,
                                        "kv_lora_rank": 512}).encode(),
        "layer-types-length": json.dumps({"num_hidden_layers": 3, "num_attention_heads": 8, "hidden_size": 1024,
                                          "layer_types": ["full_attention"]}).encode(),
    }
    paths = {}
    for name, body in bodies.items():
        paths[name] = tmp / f"{name}.json"
        paths[name].write_bytes(body)
    (tmp / "empty-folder").mkdir()
    paths["folder-without-config"] = tmp / "empty-folder"
    paths["missing-file"] = tmp / "nope" / "config.json"
    return paths


# (id, argv after "size"), every class of bad value a `size` command can get. "{cfg:NAME}" is a file above.
SIZE_CASES = [
    ("unknown-model", ["lama-2-70b-hf"], "closest bundled ids: meta-llama/Llama-2-70b-hf"),
    ("unknown-model-no-close-match", ["zzzzzzzzzzzzzzzzzzzzzz"], "kvplan models"),
    ("seq-len-negative", [LLAMA, "--seq-len", "-4k"], "--max-model-len"),
    ("seq-len-bad-suffix", [LLAMA, "--seq-len", "12XB"], "12XB"),
    ("seq-len-zero", [LLAMA, "--seq-len", "0"], "--max-model-len must be positive"),
    ("seq-len-fraction", [LLAMA, "--seq-len", "0.3k"], "not a whole number"),
    ("seq-len-400-digits", [LLAMA, "--seq-len", "9" * 400], "--max-model-len"),
    ("batch-zero", [LLAMA, "--batch", "0"], "--batch must be positive"),
    ("batch-fraction", [LLAMA, "--batch", "1.5"], "--batch"),
    ("batch-negative", [LLAMA, "--batch", "-3"], "--batch"),
    ("window-zero", [LLAMA, "--layer-types", "0-79:sliding", "--window", "0"], "--window"),
    ("unknown-kv-dtype", [LLAMA, "--kv-dtype", "fp7"], "unknown KV dtype 'fp7'"),
    ("quant-group-zero", [LLAMA, "--kv-dtype", "int8", "--quant-group", "0"], "--quant-group"),
    ("per-token-head-on-mla", ["deepseek-ai/DeepSeek-V3", "--kv-dtype", "fp8_per_token_head"], "MLA"),
    ("ds-mla-on-gqa", [LLAMA, "--kv-dtype", "fp8_ds_mla"], "fp8_ds_mla"),
    ("tp-not-dividing-heads", [LLAMA, "--tp", "3"], "tp 3 does not divide"),
    ("tp-zero", [LLAMA, "--tp", "0"], "--tensor-parallel-size must be at least 1"),
    ("tp-negative", [LLAMA, "--tp", "-2"], "--tensor-parallel-size must be at least 1"),
    ("pp-zero", [LLAMA, "--pp", "0"], "--pipeline-parallel-size must be at least 1"),
    ("pp-more-than-layers", ["meta-llama/Llama-3.2-1B", "--pp", "17"], "pp 17 is larger than the 16 layers"),
    ("dcp-zero", [LLAMA, "--dcp", "0"], "--decode-context-parallel-size must be at least 1"),
    ("dcp-not-dividing-tp", [LLAMA, "--tp", "16", "--dcp", "3"], "dcp 3 must divide tp 16"),
    ("dcp-with-sliding-window", ["google/gemma-2-9b-it", "--tp", "2", "--dcp", "2"], "sliding"),
    ("dcp-without-replication", [LLAMA, "--tp", "8", "--dcp", "2"], "replicated"),
    ("block-size-negative", [LLAMA, "--block-size", "-16"], "--block-size"),
    ("kv-heads-zero", [LLAMA, "--kv-heads", "0"], "--kv-heads must be positive"),
    ("kv-heads-not-dividing", [LLAMA, "--kv-heads", "7"], "7 KV heads do not divide 64"),
    ("unknown-attention", [LLAMA, "--attention", "xyz"], "--attention"),
    ("mla-on-gqa-model", [LLAMA, "--attention", "mla"], "--attention mla"),
    ("layer-types-out-of-range", [LLAMA, "--layer-types", "0-99:full"], "outside layers 0-79"),
    ("layer-types-bad-kind", [LLAMA, "--layer-types", "0-3:fancy"], "--layer-types"),
    ("sliding-without-window", [LLAMA, "--layer-types", "0-3:sliding"], "--window"),
    ("beam-width-zero", [LLAMA, "--beam-width", "0"], "beam"),
    ("shared-prefix-negative", [LLAMA, "--shared-prefix", "-1"], "'-1'"),
    ("shared-prefix-longer-than-prompt", [LLAMA, "--seq-len", "4k", "--shared-prefix", "8k"], "--shared-prefix"),
    ("prompt-len-longer-than-seq-len", [LLAMA, "--seq-len", "4k", "--prompt-len", "8k"], "--prompt-len"),
    ("unknown-allocator", [LLAMA, "--allocator", "foo"], "--allocator"),
    *[(f"config-{name}", ["{cfg:" + name + "}"], "") for name in (
        "empty", "truncated", "not-an-object", "latin1", "no-layers", "no-heads", "no-head-dim", "zero-layers",
        "negative-heads", "string-layers", "kv-gt-heads", "mla-without-rope", "layer-types-length",
        "folder-without-config", "missing-file")],
]
# `kvplan capacity`: the GPU and engine classes, budgets and memory sizes.
CAPACITY_CASES = [
    ("unknown-gpu", ["meta-llama/Llama-3.1-8B", "--gpu", "H1000"], "unknown GPU 'H1000'"),
    ("unknown-gpu-names-the-flag", ["meta-llama/Llama-3.1-8B", "--gpu", "H1000"], "give its memory with --gpu-mem"),
    ("unknown-engine", ["meta-llama/Llama-3.1-8B", "--engine", "foo"], "unknown engine 'foo'"),
    ("kv-budget-bad-suffix", ["meta-llama/Llama-3.1-8B", "--kv-budget", "12XB"], "XB"),
    ("kv-budget-negative", ["meta-llama/Llama-3.1-8B", "--kv-budget", "-4GiB"], "--kv-budget"),
    ("kv-budget-per-stage-count", ["meta-llama/Llama-3.1-8B", "--kv-budget", "1GiB,2GiB"], "--kv-budget"),
    ("gpu-mem-negative", ["meta-llama/Llama-3.1-8B", "--gpu-mem", "-80GiB"], "-80GiB"),
    ("overhead-bad-suffix", ["meta-llama/Llama-3.1-8B", "--overhead", "12XB"], "12XB"),
    ("max-model-len-zero", ["meta-llama/Llama-3.1-8B", "--max-model-len", "0"], "--max-model-len"),
    ("max-model-len-negative", ["meta-llama/Llama-3.1-8B", "--max-model-len", "-4k"], "--max-model-len"),
    ("unknown-weights-dtype", ["meta-llama/Llama-3.1-8B", "--weights-dtype", "fp3"], "fp3"),
    ("unknown-kv-dtype", ["meta-llama/Llama-3.1-8B", "--kv-dtype", "fp7"], "fp7"),
    ("block-size-zero", ["meta-llama/Llama-3.1-8B", "--block-size", "0"], "--block-size"),
    ("tp-not-dividing-kv-heads", ["meta-llama/Llama-3.1-8B", "--tp", "3"], "tp 3"),
    ("dcp-with-sliding-window", ["google/gemma-2-9b-it", "--tp", "16", "--dcp", "2"], "sliding"),  # tp > KV heads (vLLM 0.30+)
    ("dcp-gqa-heads-not-replicated", ["google/gemma-2-9b-it", "--tp", "2", "--dcp", "2"],
     "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (2) to be greater than"),
    ("pp-more-than-layers", ["meta-llama/Llama-3.2-1B", "--pp", "17"], "pp 17"),
    ("unknown-model", ["lama-2-70b-hf"], "closest bundled ids"),
    ("config-truncated", ["{cfg:truncated}"], ""),
]
# click's own usage errors: only the console script (main) reduces them to one line.
USAGE_CASES = [
    ("tp-not-a-number", ["size", LLAMA, "--tp", "abc"], "--tp"),
    ("unknown-option", ["size", LLAMA, "--foo"], "--foo"),
    ("missing-model", ["size"], "model"),
    ("missing-option-value", ["size", LLAMA, "--tp"], "--tp"),
    ("unknown-command", ["sizes", LLAMA], "sizes"),
    # issue 25, second round: a flag click names unquoted was not named as typed; probe's model is not positional
    ("fit-tp-named-as-typed", ["fit", LLAMA, "--max-model-len", "8k", "--batch", "4", "--tp", "2"],
     "No such option: --tensor-parallel-size (given as --tp)"),
    ("models-tp-named-as-typed", ["models", "--tp", "2"], "(given as --tp)"),
    ("probe-positional-model", ["probe", LLAMA, "--device", "cpu"], "probe takes its models as --model NAME"),
]
ONE_PER_CLASS = {"unknown-model", "seq-len-negative", "seq-len-bad-suffix", "unknown-kv-dtype", "tp-not-dividing-heads",
                 "dcp-with-sliding-window", "pp-more-than-layers", "tp-zero", "config-truncated", "config-no-layers"}


@pytest.fixture(scope="module")
def bad_configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _bad_config_files(tmp_path_factory.mktemp("bad-configs"))


def _argv(args: list[str], configs: dict[str, Path]) -> list[str]:
    return [str(configs[a[5:-1]]) if a.startswith("{cfg:") else a for a in args]


def assert_one_error_line(code: int, stdout: str, stderr: str, needle: str) -> None:
    lines = stderr.splitlines()
    assert code == 2, (code, stderr)
    assert len(lines) == 1, stderr
    assert lines[0].startswith("kvplan: error: "), lines[0]
    assert "Traceback" not in stderr and stdout == "", stdout
    assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(("args", "needle"), [pytest.param(a, n, id=i) for i, a, n in SIZE_CASES])
def test_size_bad_input_through_cli_runner(args: list[str], needle: str, bad_configs: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["size", *_argv(args, bad_configs)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, needle)


@pytest.mark.parametrize(("argv", "needle"), [pytest.param(["size", *a], n, id=i) for i, a, n in SIZE_CASES]
                         + [pytest.param(a, n, id=i) for i, a, n in USAGE_CASES])
def test_bad_input_through_the_console_entry_point(argv: list[str], needle: str, bad_configs: dict[str, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(_argv(argv, bad_configs))
    out, err = capsys.readouterr()
    assert_one_error_line(code, out, err, needle)


@pytest.mark.parametrize(("argv", "needle"), [pytest.param(["size", *a], n, id=i) for i, a, n in SIZE_CASES
                                              if i in ONE_PER_CLASS]
                         + [pytest.param(["capacity", *a], n, id=f"capacity-{i}") for i, a, n in CAPACITY_CASES
                            if i in ("unknown-gpu", "unknown-engine")]
                         + [pytest.param(a, n, id=i) for i, a, n in USAGE_CASES[:2]])
def test_bad_input_through_a_real_process(argv: list[str], needle: str, bad_configs: dict[str, Path]) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "kvplan", *_argv(argv, bad_configs)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)
    assert_one_error_line(proc.returncode, proc.stdout, proc.stderr, needle)


def test_subprocess_success_has_nothing_on_stderr() -> None:
    """The control: a good command exits 0, prints JSON and no error line."""
    proc = subprocess.run([sys.executable, "-m", "kvplan", "size", LLAMA, "--seq-len", "4k", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    # 2 × 80 layers × 8 KV heads × 128 × 2 B (fp16) = 327,680 B per token; × 4,096 tokens
    assert json.loads(proc.stdout)["bytes_per_sequence"] == 327_680 * 4096


@pytest.mark.parametrize(("args", "needle"), [pytest.param(a, n, id=i) for i, a, n in CAPACITY_CASES])
def test_capacity_bad_input(args: list[str], needle: str, bad_configs: dict[str, Path],
                            capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["capacity", *_argv(args, bad_configs)]
    result = CliRunner().invoke(app, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, needle)
    code = main(argv)
    out, err = capsys.readouterr()
    assert_one_error_line(code, out, err, needle)


def test_capacity_gpu_mem_zero_is_refused() -> None:
    result = CliRunner().invoke(app, ["capacity", "meta-llama/Llama-3.1-8B", "--gpu-mem", "0"])
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, "--gpu-mem")


def test_a_newline_in_a_file_name_stays_on_one_error_line(tmp_path: Path) -> None:
    """Regression: the message names the file, and a file name may hold a newline."""
    path = tmp_path / "bad\nname.json"
    path.write_text("{")
    result = CliRunner().invoke(app, ["size", str(path)])
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, "is not valid JSON")


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_capacity_with_a_pp_stage_of_only_linear_layers(engine: str) -> None:
    # Qwen3-Next: full attention every 4th layer; pp 16 puts 3 layers on a stage, so some have none.
    result = CliRunner().invoke(app, ["capacity", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--pp", "16", "--engine",
                                      engine, "--kv-budget", "10GiB", "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2)


def test_capacity_hf_with_window_one(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mistral", "num_hidden_layers": 1, "num_attention_heads": 1,
                                "num_key_value_heads": 1, "head_dim": 32, "sliding_window": 1}))
    result = CliRunner().invoke(app, ["capacity", str(path), "--engine", "hf", "--kv-budget", "1GiB"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2)


@pytest.mark.parametrize("args", [
    pytest.param(["--pp", "0"], id="pp-zero"),
    pytest.param(["--tp", "0"], id="tp-zero"),
    pytest.param(["--tp", "3"], id="tp-not-dividing"),
    pytest.param(["--kv-dtype", "fp7"], id="unknown-kv-dtype"),
])
def test_capacity_validates_its_input_even_without_budget(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["capacity", "meta-llama/Llama-3.2-1B", "--kv-budget", "0", *args])
    assert result.exit_code == 2, result.stderr


def test_capacity_budget_error_quotes_what_was_typed() -> None:
    result = CliRunner().invoke(app, ["capacity", "meta-llama/Llama-3.2-1B", "--kv-budget", "12XB"])
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, "'12XB'")


def test_library_errors_name_arguments_and_the_cli_says_flags(model) -> None:
    from kvplan import build_layout
    from kvplan.cli.expand import error_message
    from kvplan.cli.size import size
    from kvplan.errors import InputError

    with pytest.raises(InputError) as err:
        build_layout(model("meta-llama/Llama-3.1-8B"), block_size=-1)
    assert str(err.value).startswith("block_size must be 0") and "--" not in str(err.value)
    assert error_message(err.value, size.flags).startswith("--block-size must be 0 (no paging)")
