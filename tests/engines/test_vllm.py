"""The vLLM 0.33 profile on hand-derived cases: pages, MLA backends and blocks, sliding reserves,
hybrid padding, Mamba alignment, PP, refusals. Each expected number carries its derivation.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from plan_helpers import GIB, LEGACY, plan

from kvplan.config import bundled_index, normalize
from kvplan.engines import Settings
from kvplan.errors import InputError, ShardingError


@pytest.mark.parametrize(("tp", "page_all_layers"), [
    pytest.param(1, 5_242_880, id="tp1"),   # 8 heads × 256 × 2 B × 16 = 65,536 per layer × 80
    pytest.param(4, 1_310_720, id="tp4"),   # 2 heads: 16,384 × 80
    pytest.param(16, 655_360, id="tp16"),   # max(1, 8 // 16) = 1 head (replicated ×2): 8,192 × 80
])
def test_vllm_llama2_70b_pages(model: Any, tp: int, page_all_layers: int) -> None:
    p = plan(model, "meta-llama/Llama-2-70b-hf", "vllm", 40 * GIB, tp=tp)
    assert p.page_bytes == page_all_layers
    assert p.num_blocks == 40 * GIB // page_all_layers


def test_vllm_llama31_8b_40gib(model: Any) -> None:
    # 40·2^30 // 65,536 // 32 = 20,480 blocks -> 327,680 tokens; 20,480 / cdiv(131,072, 16) = 2.50x
    p = plan(model, "meta-llama/Llama-3.1-8B", "vllm", 40 * GIB, max_model_len=131072)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (20_480, 327_680, "2.50x")


def test_vllm_llama31_8b_fp8_tp8_page(model: Any) -> None:
    # h = 1, page = 2 · 16 · 1 · 128 · 1 B = 4,096 per layer; 32 layers: 131,072
    p = plan(model, "meta-llama/Llama-3.1-8B", "vllm", 40 * GIB, tp=8, kv_dtype="fp8")
    assert p.page_bytes == 131_072 and p.groups[0].page_bytes_per_layer == 4_096


@pytest.mark.parametrize(("kv_dtype", "block_size", "final_block", "layer_page"), [
    pytest.param("auto", None, 16, 18_432, id="bf16-flash-attn-mla-16"),  # 16 × 576 × 2 B
    pytest.param("auto", 64, 64, 73_728, id="bf16-bs64"),                # 64 × 576 × 2 B
    pytest.param("auto", 128, 128, 147_456, id="bf16-bs128"),            # 128 × 576 × 2 B
    pytest.param("fp8", None, 64, 36_864, id="fp8-flashmla-forces-64"),  # 64 × 576 × 1 B
    pytest.param("fp8", 16, 16, 9_216, id="fp8-triton-mla-16"),          # 16 × 576 × 1 B
])
def test_vllm_deepseek_v3_mla_blocks(model: Any, kv_dtype: str, block_size: int | None, final_block: int,
                                     layer_page: int) -> None:
    p = plan(model, "deepseek-ai/DeepSeek-V3", "vllm", 40 * GIB, tp=8, kv_dtype=kv_dtype,
             block_size=block_size)
    assert p.block_size == final_block and p.groups[0].page_bytes_per_layer == layer_page
    assert p.page_bytes == 61 * layer_page  # one latent per layer, the same on every TP rank


def test_vllm_deepseek_v3_40gib_bs64(model: Any) -> None:
    # 40·2^30 // (61 × 73,728 = 4,497,408) = 9,549 blocks; M = 163,840 = 2,560 blocks -> 611,136 tokens
    p = plan(model, "deepseek-ai/DeepSeek-V3", "vllm", 40 * GIB, tp=8, block_size=64)
    assert (p.num_blocks, p.kv_tokens) == (9_549, 611_136)


def test_vllm_deepseek_v3_dcp8(model: Any) -> None:
    # DCP 8: a request needs cdiv(cdiv(163,840, 8), 64) = 320 blocks per rank; 9,549 / 320 = 29.84x;
    # tokens = int(29.840625 × 163,840) = 4,889,088 = 9,549 × 64 × 8 (DCP multiplies tokens)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "vllm", 40 * GIB, tp=8, dcp=8, block_size=64)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (9_549, 4_889_088, "29.84x")


def test_vllm_falcon_7b_mqa_page(model: Any) -> None:
    # The bundled falcon-7b is the RefinedWebModel revision (architectures RWForCausalLM), which vLLM 0.33
    # no longer builds (registry.py: supported until 0.28.0); the in-library revision declares
    # FalconForCausalLM with the same attention fields.
    with pytest.raises(InputError, match=r"RWForCausalLM: supported until v0\.28\.0"):
        plan(model, "tiiuae/falcon-7b", "vllm", 10 * GIB)
    raw = {**json.loads(bundled_index()["tiiuae/falcon-7b"].read_text()), "architectures": ["FalconForCausalLM"]}
    falcon = normalize(raw, model_id="tiiuae/falcon-7b", source="falcon-7b, FalconForCausalLM")
    # multi_query -> 1 KV head of 64: 16 × 1 × 128 × 2 B = 4,096 per layer, × 32 layers
    assert plan(lambda _: falcon, "tiiuae/falcon-7b", "vllm", 10 * GIB).page_bytes == 32 * 4_096


def test_vllm_gpt_oss_20b_legacy_worked_example(model: Any) -> None:
    # engines.md: 2 groups × 12 layers, 40 GiB // 32,768 // 12 = 109,226 blocks; per request
    # cdiv(131,072, 16) + cdiv(127 + 8,192, 16) + 1 = 8,192 + 521 = 8,713 blocks = 3,426,091,008 B;
    # 109,226 / 8,713 = 12.54x; legacy tokens 109,226 // 2 × 16 = 873,808
    p = plan(model, "openai/gpt-oss-20b", "vllm", 40 * GIB, max_model_len=131072, settings=LEGACY)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (109_226, 873_808, "12.54x")
    assert p.reserve_bytes_per_request == 3_426_091_008


def test_vllm_gpt_oss_20b_hybrid_disabled(model: Any) -> None:
    # every layer full: 40 GiB // (24 × 32,768) = 54,613 blocks -> also 873,808 tokens; 54,613 / 8,192 = 6.67x
    s = Settings.of(async_scheduling=False, legacy_token_log=True, hybrid_kv_cache_manager=False)
    p = plan(model, "openai/gpt-oss-20b", "vllm", 40 * GIB, max_model_len=131072, settings=s)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (54_613, 873_808, "6.67x")


def test_vllm_gpt_oss_20b_033_defaults(model: Any) -> None:
    # 0.33: in flight 8,192 × (pp 1 + async 1) = 16,384; sliding cdiv(127 + 16,384, 16) + 1 = 1,033;
    # 109,226 / (8,192 + 1,033) = 11.8402...x; tokens = int(11.84021680... × 131,072) = 1,551,920
    p = plan(model, "openai/gpt-oss-20b", "vllm", 40 * GIB, max_model_len=131072)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (109_226, 1_551_920, "11.84x")


@pytest.mark.parametrize(("batched", "blocks"), [
    pytest.param(2048, 897, id="B2048"),   # 512 + cdiv(4,095 + 2,048, 16) + 1 = 512 + 384 + 1
    pytest.param(4097, 1025, id="B4097"),  # min(4,095 + 4,097, 8,192) = 8,192: 512 + 512 + 1 (> unified 1,024)
])
def test_vllm_gemma2_sliding_reserve(model: Any, batched: int, blocks: int) -> None:
    s = Settings.of(async_scheduling=False, max_num_batched_tokens=batched)
    p = plan(model, "google/gemma-2-9b-it", "vllm", 40 * GIB, settings=s)
    assert p.page_bytes == 2_752_512  # 21 layers × 131,072 (8 heads × 512 × 2 B × 16)
    assert sum(g.blocks_per_request for g in p.groups) == blocks


def test_vllm_gemma3_27b_padding(model: Any) -> None:
    # 52 sliding + 10 full: group size 10 (52 ≥ 1.5 × 10); 6 sliding groups (padded to 10) + 1 full;
    # one block spans 10 layers × 16 × 16 heads × 256 × 2 B = 1,310,720 B
    p = plan(model, "google/gemma-3-27b-it", "vllm", 40 * GIB, max_model_len=32768)
    rows = {g.kind: g for g in p.groups}
    assert (rows["sliding"].engine_groups, rows["full"].engine_groups) == (6, 1)
    assert p.page_bytes == 1_310_720 and p.num_blocks == 40 * GIB // 1_310_720
    # per request: full cdiv(32,768, 16) = 2,048; each sliding group cdiv(min(1,023 + 16,384, 32,768), 16) + 1 = 1,089
    assert p.max_concurrency == p.num_blocks / (2_048 + 6 * 1_089)


def test_vllm_mistral_all_sliding_one_group(model: Any) -> None:
    # 32 sliding layers, one group; a request: cdiv(min(4,095 + 16,384, 32,768), 16) + 1 = 1,280 + 1
    p = plan(model, "mistralai/Mistral-7B-v0.1", "vllm", 40 * GIB)
    assert [(g.kind, g.blocks_per_request) for g in p.groups] == [("sliding", 1_281)]


# Qwen3-Next on vLLM 0.33 (vllm/platforms/interface.py:940-1137, vllm/v1/kv_cache_interface.py:1135-1141,
# qwen_gdn_linear_attn.py:148-270 and :690-760): on an H100 the GDN prefill runs on FlashInfer, whose
# checkpoints align blocks to 64 tokens and add one checkpoint block per GDN group (2 + 1); on an A100 (Triton
# prefill) blocks align to the kernel's 16 and a GDN group reserves 2; without prefix caching, 16 and 1.
@pytest.mark.parametrize(("tp", "gpu", "prefix", "block", "state_blocks"), [
    # tp1: state (3 × 8,192 + 32 × 128 × 128) × 2 B = 1,097,728; attention 2 heads × 512 × 2 B = 2,048 B/token;
    #      H100: 64 · cdiv(1,097,728, 64 · 2,048) = 64 · 9 = 576; A100 / no prefix caching: 16 · cdiv(1,097,728,
    #      16 · 2,048) = 16 · 34 = 544
    pytest.param(1, None, None, 576, 3, id="tp1-h100"),
    pytest.param(1, "A100-80G", None, 544, 2, id="tp1-a100"),
    pytest.param(1, None, False, 544, 1, id="tp1-no-prefix-caching"),
    # tp8: state (3 × 1,024 + 4 × 128 × 128) × 2 B = 137,216; 1 head: 1,024 B/token; 64 · cdiv(137,216, 65,536) = 192
    pytest.param(8, None, None, 192, 3, id="tp8-h100"),
])
def test_vllm_qwen3_next_mamba_alignment(model: Any, tp: int, gpu: str | None, prefix: bool | None, block: int,
                                         state_blocks: int) -> None:
    p = plan(model, "Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm", 40 * GIB, tp=tp, max_model_len=32768,
             block_size=16, settings=Settings.of(prefix_caching=prefix), gpu_name=gpu)
    assert p.block_size == block
    per_layer = block * (2_048 if tp == 1 else 1_024)
    rows = {g.kind: g for g in p.groups}
    # 36 linear + 12 full: group size 12 -> 3 Mamba groups + 1 attention group; Mamba pages padded
    assert (rows["mamba"].engine_groups, rows["full"].engine_groups) == (3, 1)
    assert rows["mamba"].page_bytes_per_layer == per_layer and p.page_bytes == 12 * per_layer
    assert sum(g.blocks_per_request * g.engine_groups for g in p.groups) == -(-32768 // block) + 3 * state_blocks


def test_vllm_pp_budgets_min_over_stages(model: Any) -> None:
    # gpt-oss-20b pp2: stage block = 6 layers × 32,768 = 196,608 B; the smaller stage budget decides
    p = plan(model, "openai/gpt-oss-20b", "vllm", (int(12.13 * GIB), 11 * GIB), pp=2)
    assert p.page_bytes == 196_608 and p.num_blocks == 11 * GIB // 196_608


def test_vllm_refuses_one_request(model: Any) -> None:
    # 10 GiB, 131,072 B/token: 16 GiB needed; 5,120 blocks − 1 null block = 5,119 × 16 = 81,904 tokens.
    # The refusal is an answer: the blocks are still counted (5,120, of which one is the null block).
    p = plan(model, "meta-llama/Llama-3.1-8B", "vllm", 10 * GIB, max_model_len=131072)
    assert p.refusal is not None and p.refusal.estimated_max_model_len == 81_904
    assert re.search(r"\(16\.0 GiB KV cache is needed.*\(10\.0 GiB\).*length is 81904\. ", p.refusal.message)
    assert p.num_blocks == 5_120 and p.log_lines == (p.refusal.message,)


def test_vllm_gpt_oss_tp16_refused(model: Any) -> None:
    with pytest.raises(ShardingError, match="0 heads per rank"):
        plan(model, "openai/gpt-oss-20b", "vllm", 40 * GIB, tp=16)
