"""The engines' checks on the settings, release by release: each refusal is the engine's own message (exit 2), and
`kvplan size` answers with a note. Sources in kvplan/engines/vllm/checks.py, selector.py, kvplan/planning/
quant_checks.py and kvplan/engines/sglang_checks.py; each release's rule is a row there."""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.config import load_model
from kvplan.engines import Device, Request, Settings
from kvplan.errors import InputError, KvplanError
from kvplan.planning.capacity import plan_request

GIB = 2**30
LLAMA = "meta-llama/Llama-3.1-8B"
H100 = Device(name="H100-SXM", memory_bytes=85_018_542_080, compute_capability=(9, 0))


def _plan(model_id: str, engine: str = "vllm", device: Device | None = H100, settings: Settings | None = None,
          **cache: Any) -> Any:
    req = Request.of(load_model(model_id), device=device, settings=settings or Settings(),
                     **{"max_model_len": 8192, **cache})
    return plan_request(req, (20 * GIB,), engine)


# vLLM 0.33 run on CPU (research scripts/blocksize7.py: each backend's validate_configuration with cc 9.0, the config
# repr from AttentionSelectorConfig.__repr__); FLASHINFER's entry from its kernel list [16, 32, 64] (not importable)
BLOCK_7_033 = (
    "No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, dtype=torch.bfloat16, "
    "kv_cache_dtype=auto, block_size=7, use_mla=False, has_sink=False, use_sparse=False, use_mm_prefix=False, "
    "use_per_head_quant_scales=False, attn_type=AttentionType.DECODER, has_sliding_window=False, use_non_causal=False, "
    "use_batch_invariant=False, use_kv_connector=False, use_adaptive_verification=False, use_pcp=False, use_dcp=False, "
    "use_rswa=False). Reasons: {FLASH_ATTN: [block_size not supported], FLASHINFER: [block_size not supported], "
    "TRITON_ATTN: [block_size not supported], FLEX_ATTENTION: [block_size not supported], TURBOQUANT: "
    "[kv_cache_dtype not supported, block_size not supported]}.")


@pytest.mark.parametrize(("engine", "message"), [
    ("vllm", BLOCK_7_033),
    # 0.9-0.11: BlockSize = Literal[1, 8, 16, 32, 64, 128] as argparse choices (0.11 config/cache.py:24, arg_utils.py)
    ("vllm@0.11", "argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128)"),
    ("vllm@0.10", "argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128)"),
    ("vllm@0.9", "argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128)"),
    # 0.8: choices=[8, 16, 32, 64, 128] (0.8.0 engine/arg_utils.py:455-458), V1 and V0 alike
    ("vllm@0.8", "argument --block-size: invalid choice: 7 (choose from 8, 16, 32, 64, 128)"),
    ("vllm@0.8-v0", "argument --block-size: invalid choice: 7 (choose from 8, 16, 32, 64, 128)"),
])
def test_block_size_7(engine: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan(LLAMA, engine, block_size=7)
    assert str(caught.value).startswith(message)


def test_block_size_the_backends_take() -> None:
    assert _plan(LLAMA, block_size=32).block_size == 32  # FLASH_ATTN: MultipleOf(16)
    # the LLM class skips the BlockSize literal (SkipValidation) in 0.9-0.17: only `vllm serve` parses choices
    _plan(LLAMA, "vllm@0.11", settings=Settings.of(entry_point="llm"), block_size=256)
    with pytest.raises(InputError, match="invalid choice: 256"):
        _plan(LLAMA, "vllm@0.11", block_size=256)


def test_block_size_7_in_kvplan_size_is_a_note(run_cli: Any) -> None:
    code, _, err = run_cli("size", LLAMA, "--block-size", "7")
    assert code == 0 and "vLLM 0.33 would not start with these settings: " + BLOCK_7_033 in err.replace("\n", "")


@pytest.mark.parametrize(("engine", "kv", "message"), [
    # 0.33: any string, refused by the validator (config/cache.py:468-476) with the full list
    ("vllm", "int8", "Invalid kv_cache_dtype: 'int8'. Valid values are: ['auto', 'float16', 'bfloat16', 'fp8',"),
    ("vllm", "int4", "Invalid kv_cache_dtype: 'int4'. Valid values are: "),
    ("vllm", "fp32", "Invalid kv_cache_dtype: 'float32'. Valid values are: "),
    # 0.11: CacheDType literal as argparse choices (config/cache.py:25-26)
    ("vllm@0.11", "int8", "argument --kv-cache-dtype: invalid choice: 'int8' (choose from 'auto', 'bfloat16', 'fp8', "
                          "'fp8_e4m3', 'fp8_e5m2', 'fp8_inc')"),
    ("vllm@0.11", "nvfp4", "argument --kv-cache-dtype: invalid choice: 'nvfp4'"),
    ("vllm@0.11", "fp8_per_token_head", "argument --kv-cache-dtype: invalid choice: 'fp8_per_token_head'"),  # 0.20 on
    ("vllm@0.10", "fp16", "argument --kv-cache-dtype: invalid choice: 'float16' (choose from 'auto', 'fp8', "
                          "'fp8_e4m3', 'fp8_e5m2', 'fp8_inc')"),  # float16 is a choice from 0.18
    ("vllm@0.8", "fp8_inc", "argument --kv-cache-dtype: invalid choice: 'fp8_inc' (choose from 'auto', 'fp8', "
                            "'fp8_e4m3', 'fp8_e5m2')"),
])
def test_kv_dtype_names_by_release(engine: str, kv: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan(LLAMA, engine, kv_dtype=kv)
    assert str(caught.value).startswith(message)


def test_kv_dtypes_vllm_has() -> None:
    for kv in ("fp8", "fp8_e4m3", "int8_per_token_head", "fp8_per_token_head", "nvfp4"):
        assert _plan(LLAMA, kv_dtype=kv).refusal is None
    assert _plan(LLAMA, "vllm@0.11", kv_dtype="bf16").refusal is None  # the model's own dtype: what auto gives


def test_nvfp4_by_gpu_and_model() -> None:
    # 0.33 takes nvfp4 on an H100 through FlashInfer's FA2 path (flashinfer.py:652-686) but not at head_size 64
    assert _plan(LLAMA, kv_dtype="nvfp4").refusal is None
    with pytest.raises(InputError, match="fa2 prefill misreads an NVFP4 KV cache at head_size 64"):
        _plan("openai/gpt-oss-20b", kv_dtype="nvfp4")
    b200 = Device(name="B200", memory_bytes=191_510_855_680, compute_capability=(10, 0))
    assert _plan("openai/gpt-oss-20b", device=b200, kv_dtype="nvfp4").refusal is None  # trtllm-gen on 10.x
    t4 = Device(name="T4", memory_bytes=15_835_594_752, compute_capability=(7, 5))
    with pytest.raises(InputError, match=r"no attention backend takes KV cache dtype nvfp4 on compute capability 7\.5"):
        _plan(LLAMA, device=t4, kv_dtype="nvfp4")


@pytest.mark.parametrize(("engine", "tp", "message"), [
    # dense layers of DeepSeek-V3 at tp 32: down_proj is row parallel, 18,432 / 32 = 576 inputs per rank
    ("vllm", 32, "Weight input_size_per_partition = 576 is not divisible by weight quantization block_k = 128."),
    # 0.11 checks merged layers too (gate_up, 576 outputs per rank) and meets it first (before 0.14's relaxation)
    ("vllm@0.11", 32, "Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128."),
])
def test_fp8_weight_blocks_at_tp(engine: str, tp: int, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan("deepseek-ai/DeepSeek-V3", engine, tp=tp)
    assert str(caught.value).startswith(message)


def test_fp8_weight_blocks_that_divide() -> None:
    # tp 16: q_b 128 × 192 / 16 = 1,536, kv_b 2,048, o_proj 1,024 inputs, down 1,152, experts 2,048 / 16 = 128
    assert _plan("deepseek-ai/DeepSeek-V3", tp=16).refusal is None


@pytest.mark.parametrize(("engine", "settings", "message"), [
    ("vllm", {"max_num_batched_tokens": 1, "max_num_seqs": 256},
     "max_num_batched_tokens (1) must be greater than or equal to max_num_seqs (256)."),
    # before 0.10.1 the default max_num_seqs is not capped by max_num_batched_tokens (0.9.2 arg_utils.py:1698)
    ("vllm@0.9", {"max_num_batched_tokens": 1}, "max_num_batched_tokens (1) must be greater than or equal to "
                                                "max_num_seqs (1024)."),
    ("vllm@0.8", {"max_num_batched_tokens": 1}, "max_num_batched_tokens (1) must be greater than or equal to "
                                                "max_num_seqs (1024)."),
    # V0 without chunked prefill (8,192 tokens, under its 32k threshold)
    ("vllm@0.8-v0", {"max_num_batched_tokens": 1}, "max_num_batched_tokens (1) is smaller than max_model_len (8192)."),
])
def test_scheduler_limits(engine: str, settings: dict[str, int], message: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan(LLAMA, engine, settings=Settings.of(**settings))
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(("engine", "rank", "message"), [
    # 0.12 on: MaxLoRARanks = Literal[1, 8, ..., 512] as argparse choices (0.33 config/lora.py:27)
    ("vllm", 7, "argument --max-lora-rank: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128, 256, 320, 512)"),
    ("vllm@0.12", 12, "argument --max-lora-rank: invalid choice: 12 (choose from 1, 8, 16, 32, 64, 128, 256, 320, "
                      "512)"),
    # up to 0.11: LoRAConfig's own check, without rank 1 (0.11.0 config/lora.py:104-109, 0.8.0 config.py:2326-2330)
    ("vllm@0.11", 1, "max_lora_rank (1) must be one of (8, 16, 32, 64, 128, 256, 320, 512)."),
    ("vllm@0.8", 7, "max_lora_rank (7) must be one of (8, 16, 32, 64, 128, 256, 320, 512)."),
])
def test_lora_ranks_by_release(engine: str, rank: int, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan(LLAMA, engine, settings=Settings.of(max_lora_rank=rank, max_loras=1))
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(("engine", "rank"), [("vllm", 1), ("vllm", 320), ("vllm@0.11", 8)])
def test_lora_ranks_vllm_takes(engine: str, rank: int) -> None:
    assert _plan(LLAMA, engine, settings=Settings.of(max_lora_rank=rank, max_loras=1)).refusal is None


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.11", "vllm@0.10"])
def test_max_num_batched_tokens_caps_the_default_max_num_seqs(engine: str) -> None:
    # 0.10.1 on: max_num_seqs = min(1,024, 1) (0.10.1.1 engine/arg_utils.py:1676-1679, 0.33 :3232-3234): it starts
    assert _plan(LLAMA, engine, settings=Settings.of(max_num_batched_tokens=1)).refusal is None


@pytest.mark.parametrize(("tp", "dcp", "message"), [
    (8, 2, "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (8) to be greater than the "
           "model's total number of KV heads (8)."),
    (16, 4, "`--decode-context-parallel-size` (4) exceeds the maximum supported value (2) for "
            "`--tensor-parallel-size` (16) and 8 model KV heads."),
])
def test_dcp_on_gqa_033(tp: int, dcp: int, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _plan(LLAMA, tp=tp, dcp=dcp)
    assert str(caught.value).startswith(message)


def test_dcp_on_gqa_before_0_30() -> None:
    with pytest.raises(KvplanError, match="needs KV heads replicated at least 2"):  # kvplan's rule; 0.11 has no check
        _plan(LLAMA, "vllm@0.11", tp=8, dcp=2)


def test_expert_parallel_needs_experts() -> None:
    # vLLM refuses --enable-expert-parallel (ep = dp × tp) on a dense model (0.33 config/model.py:1498-1503); until
    # this branch kvplan read --dp as "data parallel attention with EP" and refused dp 2 itself
    with pytest.raises(InputError, match="Number of experts in the model must be greater than 0"):
        _plan(LLAMA, tp=2, dp=2, ep=4)


def test_dense_data_parallel_is_independent_engines() -> None:
    # a dense model's DP ranks are engines of their own (0.33 v1/engine/core.py:1551-1555): each plans TP 2's pool
    one, two = _plan(LLAMA, tp=2), _plan(LLAMA, tp=2, dp=2)
    assert (two.kv_tokens, two.max_concurrency, two.pools, two.gpus) == (one.kv_tokens, one.max_concurrency, 2, 4)
    assert two.requests_at_max_len == 2 * one.requests_at_max_len


@pytest.mark.parametrize(("cache", "message"), [
    (dict(tp=2, dp=2, ep=2), r"ep 2: vLLM's expert parallel \(--enable-expert-parallel\) spans the data-parallel "
                             r"group, EP = DP 2 × TP 2 = 4"),
    (dict(tp=2, ep=4), r"EP = DP 1 × TP 2 = 2")])
def test_expert_parallel_is_dp_times_tp(cache: dict[str, int], message: str) -> None:
    with pytest.raises(InputError, match=message):
        _plan("Qwen/Qwen3-30B-A3B", **cache)


def test_data_parallel_from_0_8_5() -> None:
    with pytest.raises(InputError, match=r"vLLM 0.7 \(V0 engine\) has no --data-parallel-size \(first in vLLM 0.8.5\)"):
        _plan(LLAMA, "vllm@0.7", dp=2)


@pytest.mark.parametrize("kv", ["int4", "int8", "fp16"])
def test_sglang_kv_dtypes(kv: str) -> None:
    # SGLang 0.5.23's --kv-cache-dtype choices (arg_groups/fields/model.py:197-221) have no int8/int4 and no float16;
    # the release rows (kvplan.engines.sglang.releases, on main since the SGLang rows landed) refuse them
    with pytest.raises(InputError, match=rf"SGLang 0.5.23 --kv-cache-dtype takes auto, bf16, fp8_e4m3, fp8_e5m2, "
                                         rf"nvfp4, not '{kv}'"):
        _plan(LLAMA, "sglang", kv_dtype=kv)


def test_sglang_takes_vllms_fp8_as_e4m3() -> None:
    assert _plan(LLAMA, "sglang", kv_dtype="fp8").kv_dtype in ("fp8", "fp8_e4m3")
