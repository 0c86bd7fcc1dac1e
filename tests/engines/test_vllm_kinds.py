"""vLLM 0.33 on the new cache kinds, hand-derived from its code (H100, 40 GiB of KV memory unless said).

Each case names the vLLM rule it follows: Mamba block alignment (vllm/platforms/interface.py:940-1137),
blocks per request (vllm/v1/kv_cache_interface.py), groups (vllm/v1/core/kv_cache_planning.py), sparse
MLA backends, refusals. tests/engines/test_vllm_oracle_fixtures.py checks the same models against
records vLLM's own code wrote.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from plan_helpers import GIB, plan

from kvplan.config import bundled_index, normalize
from kvplan.errors import InputError, ShardingError


def _groups(p: Any) -> dict[str, tuple[int, int, int]]:
    """kind -> (engine groups, page bytes per layer, blocks per request of one group)."""
    return {g.kind: (g.engine_groups, g.page_bytes_per_layer, g.blocks_per_request) for g in p.groups}


def test_gemma4_global_layers_take_a_larger_block(model: Any) -> None:
    # sliding 8 heads × 512 × 2 B × 16 = 131,072; full (2 heads × 1,024 × 2 B = 4,096 B/token) × 16 = 65,536 divides
    # it: the full layers' block grows to 32 (unify_kv_cache_spec_page_size). 25 sliding / 5 full: group size 5
    # -> 5 sliding groups + 1 full group; one block id = 5 × 131,072 B. Full: cdiv(32,768, 32) = 1,024 blocks.
    p = plan(model, "google/gemma-4-26B-A4B", "vllm", 40 * GIB, max_model_len=32768)
    groups = _groups(p)
    assert (groups["sliding"][:2], groups["full"]) == ((5, 131_072), (1, 131_072, 1_024))
    assert (p.page_bytes, p.num_blocks) == (655_360, 40 * GIB // 655_360)


def test_gemma4_fp8_flash_attention_4_block(model: Any) -> None:
    # fp8 with 512-wide heads on Hopper: FlashAttention 4's fp8 kernel reads 64-token pages
    # (vllm/v1/attention/backends/flash_attn.py:299-380): block 64; --block-size 16 falls to TRITON_ATTN.
    assert plan(model, "google/gemma-4-26B-A4B", "vllm", 40 * GIB, kv_dtype="fp8").block_size == 64
    p = plan(model, "google/gemma-4-26B-A4B", "vllm", 40 * GIB, kv_dtype="fp8", block_size=16)
    assert p.block_size == 16 and "TRITON_ATTN" in p.explain[0]


def test_nemotron3_nano_mamba2_alignment(model: Any) -> None:
    # Mamba-2 declares no checkpoint alignment: a = max(16, 16) = 16; state (fp32 recurrent) 2,134,016 B;
    # attention 2 heads × 256 × 2 B = 1,024 B/token -> block 16 · cdiv(2,134,016, 16,384) = 2,096; state pages
    # padded to 2,096 × 1,024 = 2,146,304. 6 attention + 23 Mamba layers: group size 6 -> 4 Mamba groups (one
    # padding layer) + 1. Per request: cdiv(32,768, 2,096) = 16 attention blocks; each Mamba group 2 + 1
    # checkpoint block (MambaMixer2, mamba_mixer2.py:1108-1118).
    p = plan(model, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "vllm", 40 * GIB, max_model_len=32768)
    assert p.block_size == 2_096
    assert _groups(p) == {"full": (1, 2_146_304, 16), "mamba": (4, 2_146_304, 3)}
    assert p.max_concurrency == p.num_blocks / (16 + 4 * 3)


def test_qwen35_fp32_state_alignment(model: Any) -> None:
    # Qwen3.5-27B: state 61,440 + 3,145,728 (fp32 recurrent) = 3,207,168 B; 4 heads × 512 × 2 B = 4,096 B/token;
    # FlashInfer GDN on H100 aligns to 64: 64 · cdiv(3,207,168, 262,144) = 832; 16 attention + 48 GDN layers
    # -> 3 GDN groups, each 2 + 1 blocks per request.
    p = plan(model, "Qwen/Qwen3.5-27B", "vllm", 40 * GIB, max_model_len=32768)
    assert p.block_size == 832
    assert _groups(p) == {"full": (1, 832 * 4_096, 40), "mamba": (3, 832 * 4_096, 3)}  # cdiv(32,768, 832) = 40


def test_lfm2_short_conv_pages(model: Any) -> None:
    # ShortConv state 8,192 B fits a 16-token attention page (16 × 2,048 = 32,768): block 16, conv pages padded
    # 4×. 6 attention + 10 conv: group size 6 -> 2 conv groups + 1; a conv group reserves 2 blocks (align mode,
    # no checkpoint block for ShortConv).
    p = plan(model, "LiquidAI/LFM2-1.2B", "vllm", 40 * GIB, max_model_len=32768)
    assert (p.block_size, p.page_bytes) == (16, 6 * 32_768)
    assert _groups(p) == {"full": (1, 32_768, 2_048), "mamba": (2, 32_768, 2)}


def test_kimi_linear_mla_hybrid_block(model: Any) -> None:
    # MLA hybrids align to at least 128 tokens: KDA state 73,728 + 2,097,152 = 2,170,880 B; MLA 1,152 B/token:
    # 128 · cdiv(2,170,880, 147,456) = 1,920. 7 MLA + 20 KDA: group size 7 -> 3 KDA groups, 2 blocks each.
    p = plan(model, "moonshotai/Kimi-Linear-48B-A3B-Instruct", "vllm", 40 * GIB, max_model_len=32768)
    assert p.block_size == 1_920
    assert _groups(p) == {"mla": (1, 1_920 * 1_152, 18), "mamba": (3, 1_920 * 1_152, 2)}  # cdiv(32,768, 1,920)


def test_attention_free_mamba_without_prefix_caching(model: Any) -> None:
    # FalconMamba is attention-free: vLLM leaves prefix caching off (mamba_cache_mode none), so a request holds
    # 1 block per layer, the unpadded state: 311,296 B × 64 layers per block id.
    p = plan(model, "tiiuae/falcon-mamba-7b", "vllm", 40 * GIB, max_model_len=8192)
    assert p.page_bytes == 64 * 311_296 and _groups(p) == {"mamba": (1, 311_296, 1)}
    assert p.max_concurrency == p.num_blocks == 40 * GIB // (64 * 311_296)


@pytest.mark.parametrize(("kv_dtype", "per_layer"), [
    pytest.param("auto", 1_152 + 132, id="bf16-flash-attn-mla-sparse"),
    pytest.param("fp8", 656 + 132, id="fp8-flashmla-sparse-ds-mla"),
])
def test_deepseek_v32_latent_and_indexer_share_one_group(model: Any, kv_dtype: str, per_layer: int) -> None:
    # The latent and the indexer key are both MLAAttentionSpecs: one UniformTypeKVCacheSpecs group whose block
    # costs Σ pages (kv_cache_interface.py:1290-1331); sparse backends take 64-token blocks.
    p = plan(model, "deepseek-ai/DeepSeek-V3.2", "vllm", 40 * GIB, tp=8, kv_dtype=kv_dtype, max_model_len=32768)
    assert (p.block_size, p.page_bytes) == (64, 61 * 64 * per_layer)
    assert p.max_concurrency == p.num_blocks / 512  # cdiv(32,768, 64)


def test_sparse_mla_refuses_16_token_blocks(model: Any) -> None:
    with pytest.raises(InputError, match="multiple of 64"):
        plan(model, "deepseek-ai/DeepSeek-V3.2", "vllm", 40 * GIB, tp=8, block_size=16)


def test_whisper_cross_attention_reserves_the_encoder_budget(model: Any) -> None:
    # self- and cross-attention pages are equal (16 × 20 × 128 × 2 B = 81,920): 2 groups of 32 layers. A request
    # reserves cdiv(448, 16) = 28 self blocks and cdiv(max_num_encoder_input_tokens, 16) cross blocks, that
    # being max_num_batched_tokens (scheduler.py:306): 8,192 -> 512.
    p = plan(model, "openai/whisper-large-v3", "vllm", 40 * GIB)
    assert _groups(p) == {"full": (1, 81_920, 28), "cross": (1, 81_920, 512)}
    assert p.max_concurrency == p.num_blocks / 540


@pytest.mark.parametrize(("model_id", "kw", "error", "match"), [
    pytest.param("MiniMaxAI/MiniMax-M1-80k", {}, InputError, r"MiniMaxM1ForCausalLM: supported until v0\.23\.0",
                 id="minimax-m1-removed"),
    pytest.param("openai/whisper-small", {"pp": 2}, ShardingError, "pipeline parallelism", id="whisper-pp"),
    pytest.param("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"tp": 16}, ShardingError, "8 groups",
                 id="mamba2-groups-tp16"),
])
def test_vllm_refusals(model: Any, model_id: str, kw: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        plan(model, model_id, "vllm", 40 * GIB, **kw)


def test_falcon_ignores_the_kv_dtype(model: Any) -> None:
    # vLLM's Falcon builds its rotary Attention without the cache config (falcon.py:173-180): --kv-cache-dtype
    # fp8 leaves a bf16 cache, which kvplan says in one line instead of sizing fp8.
    raw = {**json.loads(bundled_index()["tiiuae/falcon-40b"].read_text()), "architectures": ["FalconForCausalLM"]}
    falcon = normalize(raw, model_id="tiiuae/falcon-40b", source="falcon-40b, FalconForCausalLM")
    with pytest.raises(InputError, match="ignores the KV dtype"):
        plan(lambda _: falcon, "tiiuae/falcon-40b", "vllm", 40 * GIB, kv_dtype="fp8")
