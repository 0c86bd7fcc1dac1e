"""`capacity()` builds one layout per engine, from the same options as `kv_cache()`: the options that
change size's answer (state dtype, quant group) change capacity's by exactly as much.

Hand-derived from the bundled configs; GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan import kv_cache
from kvplan.engines import Request, get_engine
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity, engine_layout

GIB = 2**30
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
# Qwen3-Next gated DeltaNet state per layer: conv (4 − 1) × (2 × 16 × 128 + 32 × 128) = 24,576 elements,
# recurrent 32 × 128 × 128 = 524,288: 548,864 elements; 36 linear layers.
STATE_BF16 = 548_864 * 2  # 1,097,728 B per layer
STATE_FP32 = 548_864 * 4  # 2,195,456 B per layer


def test_state_dtype_reaches_every_engine_layout(model: Any) -> None:
    m = model(QWEN3_NEXT)
    for name in ("vllm", "sglang", "trtllm", "hf"):
        layout = engine_layout(get_engine(name), Request.of(m, max_model_len=4096, state_dtype="fp32"))
        assert layout.stages[0].state_bytes == 36 * STATE_FP32, name


def test_state_dtype_changes_hf_request_bytes_as_it_changes_size(model: Any) -> None:
    m = model(QWEN3_NEXT)
    size = {d: kv_cache(m, max_model_len=4096, state_dtype=d).bytes_per_sequence_per_gpu for d in ("auto", "fp32")}
    cap = {d: capacity(m, engine="hf", kv_budget_bytes=(40 * GIB,), max_model_len=4096, state_dtype=d)
           for d in ("auto", "fp32")}
    assert size["fp32"] - size["auto"] == 36 * (STATE_FP32 - STATE_BF16) == 39_518_208
    steady = {d: r.plan.steady_bytes_per_request for d, r in cap.items()}
    assert steady["fp32"] - steady["auto"] == size["fp32"] - size["auto"]


@pytest.mark.parametrize(("state_dtype", "block"), [
    # vLLM aligns the attention block so one page holds a state: full layers 2 KV heads × (256 + 256) × 2 B
    # = 2,048 B/token; block = 64 × cdiv(state page, 64 × 2,048): bf16 cdiv(1,097,728, 131,072) = 9 -> 576,
    # fp32 cdiv(2,195,456, 131,072) = 17 -> 1,088
    pytest.param("auto", 576, id="bf16-state"),
    pytest.param("fp32", 1088, id="fp32-state"),
])
def test_state_dtype_changes_vllm_mamba_alignment(model: Any, state_dtype: str, block: int) -> None:
    r = capacity(model(QWEN3_NEXT), kv_budget_bytes=(40 * GIB,), max_model_len=4096, state_dtype=state_dtype)
    assert r.plan.block_size == block
    mamba = next(g for g in r.plan.groups if g.kind == "mamba")
    assert mamba.page_bytes_per_layer == block * 2_048  # the state page padded to the attention page


@pytest.mark.parametrize(("group", "per_token"), [
    # Llama-3.1-8B int8 KV, one fp16 scale per `group` values: 32 layers × 8 heads × (128 + 128) ×
    # (1 + 2 / group) B: group 8 -> 81,920; group 16 -> 73,728; group 32 -> 69,632
    pytest.param(8, 81_920, id="g8"), pytest.param(16, 73_728, id="g16"), pytest.param(32, 69_632, id="g32"),
])
def test_quant_group_changes_capacity_as_it_changes_size(model: Any, group: int, per_token: int) -> None:
    m = model("meta-llama/Llama-3.1-8B")
    assert kv_cache(m, max_model_len=4096, kv_dtype="int8", quant_group=group).bytes_per_token == per_token
    # vLLM has no group-scaled int8 KV: 0.33 refuses the name (vllm/config/cache.py:468-476; its int8 KV is
    # int8_per_token_head). This planned 40 GiB // (16 × per_token) blocks before, a start vLLM would refuse.
    with pytest.raises(InputError, match="Invalid kv_cache_dtype: 'int8'"):
        capacity(m, kv_budget_bytes=(40 * GIB,), max_model_len=4096, kv_dtype="int8", quant_group=group)
    hf = capacity(m, engine="hf", kv_budget_bytes=(40 * GIB,), max_model_len=4096, kv_dtype="int8", quant_group=group)
    assert hf.plan.steady_bytes_per_request == 4096 * per_token


def test_capacity_cli_takes_state_dtype_and_quant_group(run_cli: Any) -> None:
    import json

    code, out, err = run_cli("capacity", QWEN3_NEXT, "--kv-budget", "40GiB", "--max-model-len", "4096",
                             "--state-dtype", "fp32", "--json")
    assert code == 0, err
    assert json.loads(out)["block_size"] == 1088
    args = ("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "40GiB", "--max-model-len", "4k", "--kv-dtype", "int8",
            "--quant-group", "16", "--json")
    code, out, err = run_cli(*args)  # vLLM has no group-scaled int8 KV: its own refusal (was 16 × 73,728 B pages)
    assert code == 2 and "Invalid kv_cache_dtype: 'int8'" in err
    code, out, err = run_cli(*args, "--engine", "hf")  # transformers: 4,096 tokens × 73,728 B at group 16
    assert code == 0, err
    assert json.loads(out)["per_request"]["steady_state_bytes_per_gpu"] == 4096 * 73_728


def test_the_layout_is_built_once_per_engine(model: Any) -> None:
    """capacity's layer groups come from the layout the engine planned on (TRT-LLM's ceil split shows)."""
    r = capacity(model("meta-llama/Llama-2-70b-hf"), engine="trtllm", tp=16, kv_budget_bytes=(40 * GIB,))
    assert r.layout is not None and r.layout.policy.head_split == "ceil"
    assert r.layout.stages[0].bytes_per_token() == 40_960  # ceil(8 / 16) = 1 head × 256 × 2 B × 80


def test_decode_step_floor_reads_weights_and_the_admitted_kv_once(model: Any) -> None:
    # Llama-3.1-8B on an H100 with 40 GiB of KV at 32,768 tokens: one block of 32 layers × 16 tokens × 8 heads ×
    # 256 × 2 B = 2,097,152 B -> 20,480 blocks; a request reserves 2,048 -> 10 requests of 32,768 × 131,072 B =
    # 4,294,967,296 B each. Weights (bf16, tp 1) 16,060,522,496 B. Bytes per step 16,060,522,496 + 10 ×
    # 4,294,967,296 = 59,010,195,456 B; at the data sheet's 3,350 GB/s: 17.615 ms, 567.7 decode tokens/s.
    r = capacity(model("meta-llama/Llama-3.1-8B"), gpu="H100", kv_budget_bytes=(40 * GIB,), max_model_len=32768)
    f = r.decode_floor
    assert f is not None and (f.requests, f.weights_bytes, f.kv_bytes) == (10, 16_060_522_496, 42_949_672_960)
    assert f.bytes_per_step == 59_010_195_456 and f.bandwidth_bytes_per_s == 3_350 * 10**9
    assert round(f.seconds * 1e3, 3) == 17.615 and round(f.tokens_per_s, 1) == 567.7


def test_no_decode_floor_without_a_catalog_gpu_or_when_nothing_fits(model: Any) -> None:
    m = model("meta-llama/Llama-3.1-8B")
    assert capacity(m, kv_budget_bytes=(40 * GIB,), max_model_len=32768).decode_floor is None  # no GPU named
    tight = capacity(m, gpu="H100", kv_budget_bytes=(2 * GIB,), max_model_len=32768)  # a 4 GiB request: refused
    assert tight.refusal is not None and tight.decode_floor is None
