"""The flag names a vLLM, SGLang or TensorRT-LLM user types: vLLM's primary, kvplan's short forms and the
other engines' spellings as aliases, one name per concept on every command; lists of engines and KV dtypes
side by side; vLLM's --dtype and --quantization."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvplan.cli.options import FLAG_ALIASES, primary_flags
from kvplan.planning.capacity import capacity

LLAMA8 = "meta-llama/Llama-3.1-8B"
QWEN = "Qwen/Qwen3-8B"


def answer(run_cli: Any, *args: str) -> Any:
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    try:
        return json.loads(out)
    except ValueError:  # sweep: JSON lines
        return [json.loads(line) for line in out.splitlines()]


# Each command under its vLLM names, and the same question under every other spelling: the same JSON.
SPELLINGS = {
    "size": (["size", LLAMA8], [
        ["--tensor-parallel-size", "4", "--max-model-len", "8k", "--kv-cache-dtype", "fp8", "--batch", "2"],
        ["--tp", "4", "--seq-len", "8k", "--kv-dtype", "fp8", "--concurrency", "2"],
        ["-tp", "4", "--context-length", "8k", "--kv-dtype=fp8", "--batch=2"],
        ["--tp-size", "4", "--context", "8k", "--kv-cache-dtype", "fp8", "--batch", "2"],
        ["--tp_size=4", "--max_seq_len", "8k", "--kv-cache-dtype", "fp8", "--batch", "2"]]),
    "size-state": (["size", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--seq-len", "4k"], [
        ["--mamba-cache-dtype", "fp32", "--mamba-ssm-cache-dtype", "bf16"],
        ["--state-dtype", "fp32", "--ssm-state-dtype", "bf16"],
        ["--state-dtype=fp32", "--mamba-ssm-dtype", "bf16"]]),  # SGLang's name for the recurrent state's
    "fit-state": (["fit", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100", "--max-gpus", "4", "--overhead", "2GiB",
                   "--max-model-len", "32k", "--concurrency", "64", "--kv-cache-dtype", "int4", "--engine", "hf"], [
        # int4 KV (what --quant-group changes) is transformers', not vLLM's: vLLM 0.33 refuses the name
        ["--mamba-cache-dtype", "fp32", "--mamba-ssm-cache-dtype", "bf16", "--quant-group", "32"],
        ["--state-dtype", "fp32", "--ssm-state-dtype=bf16", "--quant-group=32"]]),
    "sweep-state": (["sweep", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--max-model-len", "4k", "--tp", "4", "--engine",
                     "vllm", "--gpu", "H100", "--batch", "1,2"], [  # two rows: JSON lines, not one object
        ["--mamba-cache-dtype", "fp32"], ["--state-dtype=fp32"]]),  # conv and recurrent states fp32
    "capacity": (["capacity", QWEN, "--kv-budget", "20GiB"], [
        ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "2", "--max-model-len", "16k", "--block-size", "32"],
        ["--tp", "2", "--pp", "2", "--seq-len", "16k", "--page-size", "32"],
        ["-tp", "2", "-pp", "2", "--context-length", "16k", "--block-size=32"],
        ["--tp-size", "2", "--pp-size", "2", "--max_seq_len=16k", "--page-size", "32"]]),
    "fit": (["fit", LLAMA8, "--gpu", "H100", "--max-gpus", "4", "--overhead", "2GiB"], [
        ["--max-model-len", "32k", "--concurrency", "20", "--kv-cache-dtype", "auto,fp8"],
        ["--context", "32k", "--batch", "20", "--kv-dtype", "auto,fp8"],
        ["--context-length", "32k", "--concurrency", "20", "--kv-dtype", "auto,fp8"]]),
    "compare": (["compare", LLAMA8, QWEN], [
        ["--max-model-len", "4k", "--tensor-parallel-size", "2", "--decode-context-parallel-size", "1"],
        ["--seq-len", "4k", "--tp", "2", "--dcp", "1"],
        ["--context", "4k", "-tp", "2", "-dcp", "1"]]),
    "sweep": (["sweep", LLAMA8], [
        ["--max-model-len", "1k,4k", "--tensor-parallel-size", "1,2", "--kv-cache-dtype", "bf16,fp8"],
        ["--seq-len", "1k,4k", "--tp", "1,2", "--kv-dtype", "bf16,fp8"],
        ["--context-length", "1k,4k", "--tp-size", "1,2", "--kv-dtype", "bf16,fp8"]]),
    "waste": (["waste", LLAMA8, "--lengths", "fixed:1000:4"], [
        ["--max-model-len", "4k", "--tensor-parallel-size", "2"],
        ["--max-seq-len", "4k", "--tp", "2"],
        ["--seq-len", "4k", "-tp", "2"]]),
}


@pytest.mark.parametrize("command", sorted(SPELLINGS))
def test_every_spelling_asks_the_same_question(run_cli: Any, command: str) -> None:
    base, spellings = SPELLINGS[command]
    first = answer(run_cli, *base, *spellings[0])
    for args in spellings[1:]:
        assert answer(run_cli, *base, *args) == first, args


def test_state_dtype_flags_reach_the_answer(run_cli: Any) -> None:
    base, spellings = SPELLINGS["size-state"]
    assert answer(run_cli, *base) != answer(run_cli, *base, *spellings[0])  # the names are not ignored


def test_sweep_plans_the_engines_with_the_state_dtypes(run_cli: Any) -> None:
    base, spellings = SPELLINGS["sweep-state"]
    swept = answer(run_cli, *base, *spellings[0])[0]
    alone = answer(run_cli, "capacity", *base[1:4], "--tp", "4", "--gpu", "H100", *spellings[0])
    assert swept["kv_tokens"] == alone["kv_tokens"] != answer(run_cli, *base)[0]["kv_tokens"]


def test_fit_takes_the_state_dtypes_and_the_quant_group(run_cli: Any) -> None:
    base, spellings = SPELLINGS["fit-state"]
    grouped = answer(run_cli, *base, "--quant-group", "32")
    assert answer(run_cli, *base) != grouped != answer(run_cli, *base, *spellings[0])  # each flag changes it


def test_reconcile_takes_the_same_names(run_cli: Any) -> None:
    log = "tests/data/logs/vllm-nightly-llama31-8b-a100-80gb-fragments.log"
    runs = [run_cli("reconcile", log, "--model", LLAMA8, *args, "--json") for args in
            (["--tensor-parallel-size", "1", "--max-model-len", "128k", "--max-num-seqs", "256"],
             ["-tp", "1", "--context-length", "131072", "--max-num-seqs=256"])]  # the log's own 131,072 tokens
    assert runs[0][0] == 0 and runs[0][:2] == runs[1][:2]
    code, _, err = run_cli("reconcile", log, "--model", LLAMA8, "--context-length", "8k")
    assert code == 2 and "--max-model-len 8192 (given) disagrees with the log's 131072" in err  # a conflict


def test_aliases_are_rewritten_only_where_they_are_flags() -> None:
    assert primary_flags(["size", "m", "--tp-size", "4", "--context-length=32k"]) == [
        "size", "m", "--tensor-parallel-size", "4", "--max-model-len=32k"]
    assert primary_flags(["size", "m", "--", "--tp-size"]) == ["size", "m", "--", "--tp-size"]  # after --: values
    assert primary_flags(["size", "--tp-sizes"]) == ["size", "--tp-sizes"]  # whole names only
    assert all(alias.startswith("-") and target.startswith("--") for alias, target in FLAG_ALIASES.items())


def test_an_unknown_flag_still_fails_with_the_primary_names_suggested(run_cli: Any) -> None:
    code, _, err = run_cli("size", LLAMA8, "--tensor-paralel-size", "2")
    assert code == 2 and "--tensor-parallel-size" in err


# --------------------------------------------------------------------------- capacity: lists side by side

def test_capacity_compares_engines_and_kv_dtypes(run_cli: Any) -> None:
    p = answer(run_cli, "capacity", QWEN, "--kv-budget", "20GiB", "--engine", "vllm,sglang@0.5.2,vllm@0.11",
               "--kv-cache-dtype", "auto,fp8", "--max-model-len", "16k")
    assert [(x["engine"], x["engine_version"], x["kv_dtype"]) for x in p] == [
        ("vllm", "vLLM 0.33", "bf16"), ("sglang", "SGLang 0.5.2", "bf16"), ("vllm", "vLLM 0.11", "bf16"),
        ("vllm", "vLLM 0.33", "fp8"), ("sglang", "SGLang 0.5.2", "fp8"), ("vllm", "vLLM 0.11", "fp8")]
    for x, (engine, dtype) in zip(p, [(e, d) for d in ("auto", "fp8") for e in ("vllm", "sglang@0.5.2", "vllm@0.11")],
                                  strict=True):
        alone = capacity(QWEN, engine=engine, kv_dtype=dtype, kv_budget_bytes=(20 * 2**30,), max_model_len=16384)
        assert x["kv_tokens"] == alone.plan.kv_tokens  # each column is the single answer
    code, out, _ = run_cli("capacity", QWEN, "--kv-budget", "20GiB", "--engine", "vllm,sglang@0.5.2,vllm@0.11",
                           "--kv-cache-dtype", "auto,fp8", "--max-model-len", "16k")
    assert code == 0
    for label in ("vllm 0.33 bf16", "sglang 0.5.2 fp8", "vllm 0.11 fp8"):  # columns named by what differs
        assert label in out


def test_capacity_all_is_the_newest_of_each_engine(run_cli: Any) -> None:
    listed = answer(run_cli, "capacity", QWEN, "--kv-budget", "20GiB", "--engine", "vllm,sglang,trtllm,hf")
    assert answer(run_cli, "capacity", QWEN, "--kv-budget", "20GiB", "--engine", "all") == listed


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.11", "sglang@0.5.2", "sglang", "trtllm"])
def test_the_table_prints_the_engine_lines_verbatim(run_cli: Any, engine: str) -> None:
    p = answer(run_cli, "capacity", LLAMA8, "--kv-budget", "20GiB", "--engine", engine)
    code, out, _ = run_cli("capacity", LLAMA8, "--kv-budget", "20GiB", "--engine", engine)
    assert code == 0 and p["log_lines"]
    printed = [line.split(" logs: ", 1)[1] for line in out.splitlines() if " logs: " in line]
    assert printed == p["log_lines"]


def test_sglang_and_trtllm_lines_carry_their_numbers() -> None:
    # Llama-3.1-8B, 20 GiB: SGLang's cell is 32 layers × 8 heads × 128 × 2 (K, V) × 2 B = 131,072 B per token,
    # 20 GiB // 131,072 = 163,840 tokens; K = 32 × 163,841 slots (N + the pad page) × 8 × 128 × 2 B = 9.99 GiB.
    sglang = capacity(LLAMA8, engine="sglang@0.5.2", kv_budget_bytes=(20 * 2**30,)).plan
    assert sglang.log_lines == ("KV Cache is allocated. #tokens: 163840, K size: 10.00 GB, V size: 10.00 GB",)
    newer = capacity(LLAMA8, engine="sglang@0.5.23", kv_budget_bytes=(20 * 2**30,)).plan
    assert newer.log_lines[0].startswith("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 163840, ")
    # TensorRT-LLM: 163,840 tokens = 5,120 blocks of 32; 5,120 × 32 × 131,072 B = 20.00 GiB
    trt = capacity(LLAMA8, engine="trtllm", kv_budget_bytes=(20 * 2**30,), max_model_len=8192).plan
    assert trt.log_lines[1] == "[MemUsageChange] Allocated 20.00 GiB for max tokens in paged KV cache (163840)."
    assert trt.log_lines[0].startswith("Max KV cache blocks per sequence: 256 [window size=8192], tokens per block=32")


# --------------------------------------------------------------------------- --dtype and --quantization

def test_dtype_sets_the_kv_auto_dtype_and_the_weights(run_cli: Any) -> None:
    bf16 = answer(run_cli, "size", LLAMA8, "--max-model-len", "4k")
    fp32 = answer(run_cli, "size", LLAMA8, "--max-model-len", "4k", "--dtype", "float32")
    assert fp32["bytes_per_token"] == 2 * bf16["bytes_per_token"]  # KV auto follows the served dtype
    assert answer(run_cli, "size", LLAMA8, "--max-model-len", "4k", "--dtype", "half")["bytes_per_token"] == \
        bf16["bytes_per_token"]
    cap = [answer(run_cli, "capacity", LLAMA8, "--gpu", "H100", "--dtype", d, "--max-model-len", "8k")
           for d in ("auto", "float32")]
    assert cap[1]["weights_bytes_per_gpu"] > 1.9 * cap[0]["weights_bytes_per_gpu"]  # every tensor stored in fp32


def test_dtype_drops_the_guessed_dtype_note(run_cli: Any) -> None:
    _, _, err = run_cli("size", "openai/gpt-oss-120b", "--max-model-len", "4k")
    assert "no torch_dtype" in err
    _, _, err = run_cli("size", "openai/gpt-oss-120b", "--max-model-len", "4k", "--dtype", "bfloat16")
    assert "no torch_dtype" not in err


def test_quantization_fp8_is_vllms_online_fp8(run_cli: Any) -> None:
    args = ("capacity", LLAMA8, "--gpu", "H100", "--max-model-len", "8k")
    assert answer(run_cli, *args, "--quantization", "fp8")["weights_bytes_per_gpu"] == \
        answer(run_cli, *args, "--weights-dtype", "fp8")["weights_bytes_per_gpu"]
    # DeepSeek-V3 is saved in fp8: naming its own method changes nothing
    ds = ("capacity", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--tp", "8", "--max-model-len", "8k")
    named, plain = answer(run_cli, *ds, "-q", "fp8"), answer(run_cli, *ds)
    launch = ("command", "flags")  # the launch command carries the --quantization asked, the plan is the same
    assert {k: v for k, v in named.items() if k not in launch} == {k: v for k, v in plain.items() if k not in launch}
    assert named["command"] == plain["command"] + " --quantization fp8"


@pytest.mark.parametrize(("args", "message"), [
    (["--quantization", "awq"], "not quantized"),
    (["--quantization", "fp8", "--weights-dtype", "int4"], "not both"),
    (["--dtype", "fp8"], "unknown --dtype 'fp8'"),
])
def test_bad_dtype_or_quantization_is_one_line(run_cli: Any, args: list[str], message: str) -> None:
    code, out, err = run_cli("capacity", LLAMA8, "--gpu", "H100", *args)
    assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1


# --------------------------------------------------------------------------- lists on the other commands

def test_compare_takes_kv_dtypes(run_cli: Any) -> None:
    rows = answer(run_cli, "compare", LLAMA8, QWEN, "--max-model-len", "4k", "--kv-cache-dtype", "auto,fp8")
    assert [(r["model"], r["kv_dtype"]) for r in rows] == [(LLAMA8, "bf16"), (LLAMA8, "fp8"), (QWEN, "bf16"),
                                                           (QWEN, "fp8")]
    assert rows[1]["bytes_per_token"] * 2 == rows[0]["bytes_per_token"]


def test_fit_takes_the_engine_knobs(run_cli: Any) -> None:
    args = ("fit", LLAMA8, "--gpu", "H100", "--max-model-len", "32k", "--concurrency", "8", "--max-gpus", "1")
    default = answer(run_cli, *args)["best"]["kv_budget_bytes_per_gpu"]
    lower = answer(run_cli, *args, "--gpu-memory-utilization", "0.8")["best"]["kv_budget_bytes_per_gpu"]
    # 0.12 of 79.18 GiB less usable memory, the same weights and overhead: 9.50 GiB less KV budget
    assert default - lower == pytest.approx(0.12 * 85_018_542_080, abs=2)


def test_each_flag_is_defined_once_and_means_one_thing() -> None:
    """One option object per flag across every command (kvplan.cli.options, engine_options), shared by the commands that
    take it."""
    import inspect
    from typing import get_args

    import typer

    from kvplan.cli import COMMANDS
    from kvplan.cli.expand import flags_of

    defined: dict[str, set[int]] = {}
    for module, function in COMMANDS.values():
        command = getattr(__import__(module, fromlist=[function]), function)
        for parameter in inspect.signature(command).parameters.values():
            for info in get_args(parameter.annotation)[1:]:
                if isinstance(info, typer.models.OptionInfo):
                    flag = flags_of([parameter])[parameter.name]
                    defined.setdefault(flag, set()).add(id(info))
    assert "--tensor-parallel-size" in defined and "--gpu" in defined  # the check sees the shared options
    twice = {flag: len(ids) for flag, ids in defined.items() if len(ids) > 1}
    assert not twice, f"flags defined more than once: {twice}"
