"""The families of vLLM 0.33's registry beyond the oracle's records: sized by rule from vLLM's model files (each
expected number derived in its comment), refused with the reason and the release that serves them, and the
families that only some releases serve (mllama: 0.6.2-0.10.2, on V0; MiMo-V2 from 0.14; DeepSeek-V4 from 0.20)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import kvplan
from kvplan.config import load_model
from kvplan.config.aliases import UNMODELLED_ARCHITECTURES, served_from
from kvplan.config.hf import normalize
from kvplan.engines import Request, Settings, get_engine
from kvplan.engines.vllm import families
from kvplan.engines.vllm.planner import plan as planner_plan
from kvplan.engines.vllm.releases import RELEASES, resolve
from kvplan.engines.vllm.served import registry
from kvplan.errors import ConfigError, InputError
from kvplan.planning.capacity import engine_layout, plan_request
from kvplan.specs import CrossAttn, IndexerCache, LinearState, parts

GIB = 2**30


@pytest.mark.parametrize("arch", sorted(UNMODELLED_ARCHITECTURES))
def test_unmodelled_architecture_names_its_reason_and_release(arch: str) -> None:
    first = registry()[arch].first  # the release the refusal names is the registry's
    assert first is not None and served_from(arch) == first
    doc = {"architectures": [arch], "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}
    with pytest.raises(ConfigError, match=f"{arch} \\(vLLM serves it from {first}\\) is not modelled: "):
        normalize(doc, model_id="x", source="x")


def test_deepseek_v41_is_not_sized_as_v4() -> None:
    # DeepSeek-V4.1 reads compress_ratios too (models/deepseek_v41/attention.py:314-322) but keeps other caches
    doc = {"architectures": ["DeepseekV41ForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 8,
           "hidden_size": 512, "compress_ratios": [0, 4]}
    with pytest.raises(ConfigError, match="DeepseekV41ForCausalLM"):
        normalize(doc, model_id="x", source="x")


ALICE = {"architectures": ["AliceAIForCausalLM"], "num_hidden_layers": 8, "num_attention_heads": 16,
         "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048,
         "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 2, "linear_num_key_heads": 16,
         "linear_num_value_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
         "linear_conv_kernel_dim": 4, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


def test_alice_ai_kda_state() -> None:
    # KDA (alice_ai.py:687-700, mamba_utils.py:296-318): conv (4 - 1) × 3 × 16 × 128 = 18,432 bf16 elements = 36,864 B;
    # recurrent 16 × 128 × 128 fp32 (kda_state_dtype at auto) = 1,048,576 B -> 1,085,440 B per linear layer (6 of them).
    # Full layers (Qwen3NextAttention): 2 KV heads × (256 + 256) × 2 B = 2,048 B per token each (2 of them).
    m = normalize(ALICE, model_id="alice", source="alice")
    state = next(p for s in m.layer_specs for p in parts(s) if isinstance(p, LinearState))
    assert (state.mixer, state.ssm_dtype) == ("kda", "fp32")
    r = kvplan.kv_cache(m, max_model_len=1000)
    assert r.bytes_per_token == 2 * 2_048
    assert r.bytes_per_sequence == 2 * 2_048 * 1000 + 6 * 1_085_440


def test_alice_ai_needs_equal_key_and_value_heads() -> None:
    with pytest.raises(ConfigError, match="AliceAI KDA requires matching key/value head counts and dimensions"):
        normalize({**ALICE, "linear_num_value_heads": 32}, model_id="alice", source="alice")


M3 = {"architectures": ["MiniMaxM3SparseForCausalLM"], "num_hidden_layers": 4, "num_attention_heads": 48,
      "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 6144, "max_position_embeddings": 65536,
      "sparse_attention_config": {"sparse_attention_freq": [0, 1, 1, 1], "sparse_index_dim": 128}}  # transformers'
# MiniMaxM3VLTextConfig defaults for heads (4 KV heads × 128) and index_head_dim (128); the pattern is written here


def test_minimax_m3_index_keys() -> None:
    # every layer: 4 KV heads × (128 + 128) × 2 B = 2,048 B per token; sparse layers add one bf16 key of 128 values
    # (common/indexer.py:102-156, no scales) = 256 B -> 4 × 2,048 + 3 × 256 = 8,960 B per token, the same at tp 4
    # for the keys (one MLA-style head) while K/V split: 4 × 512 + 3 × 256 = 2,816 B per GPU
    m = normalize(M3, model_id="m3", source="m3")
    assert sum(isinstance(p, IndexerCache) for s in m.layer_specs for p in parts(s)) == 3
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 8_960
    assert kvplan.kv_cache(m, max_model_len=1, tp=4).bytes_per_token_per_gpu == 2_816


def test_minimax_m3_blocks_of_128() -> None:
    # backends [128] (sparse_attention.py:165-167, indexer.py:94-95): one block = 128 × 8,960 B = 1,146,880 B, all
    # modules in one group (FullAttentionSpec and the INDEXER MLAAttentionSpec are both full attention)
    m = normalize(M3, model_id="m3", source="m3")
    p = plan_request(Request.of(m, max_model_len=65536), (10 * GIB,), "vllm")
    assert (p.block_size, p.page_bytes, p.num_blocks) == (128, 1_146_880, 10 * GIB // 1_146_880)
    with pytest.raises(InputError, match="No common block size for 64"):
        plan_request(Request.of(m, max_model_len=65536, block_size=64), (10 * GIB,), "vllm")


# ------------------------------------------------------------------------------------------ by release
MLLAMA = "meta-llama/Llama-3.2-90B-Vision-Instruct"


def test_mllama_cross_attention_layers_hold_the_image() -> None:
    # 20 of 100 text layers are cross-attention (cross_attention_layers); each keeps one image's tiles:
    # 4 × ((560 / 14)² + 1) = 6,404 tokens of 8 KV heads × 256 × 2 B = 4,096 B (vllm 0.10.1.1 mllama.py:89-121)
    m = load_model(MLLAMA)
    cross = [p for s in m.layer_specs for p in parts(s) if isinstance(p, CrossAttn)]
    assert len(cross) == 20 and {c.encoder_tokens for c in cross} == {6_404}
    r = kvplan.kv_cache(m, max_model_len=8192)
    assert r.bytes_per_sequence == 80 * 4_096 * 8192 + 20 * 4_096 * 6_404


@pytest.mark.parametrize("engine", ["vllm@0.6.4", "vllm@0.7", "vllm@0.8-v0"])
def test_mllama_on_v0_pages_every_layer(engine: str) -> None:
    # V0 CacheEngine.get_cache_block_size (0.10.1.1 worker/cache_engine.py:121-145): all 100 layers × 16 × 2 × 1 KV
    # head (tp 8) × 128 × 2 B = 819,200 B per block; 20 GiB // 819,200 = 26,214 blocks; 26,214 × 16 / 8,192 = 51.20x
    p = plan_request(Request.of(load_model(MLLAMA), tp=8, max_model_len=8192), (20 * GIB,), engine)
    assert (p.page_bytes, p.num_blocks, f"{p.max_concurrency:.2f}x") == (819_200, 26_214, "51.20x")


@pytest.mark.parametrize(("engine", "message"), [
    ("vllm@0.8", "runs MllamaForConditionalGeneration on V0 only"),
    ("vllm@0.10", "runs MllamaForConditionalGeneration on V0 only"),
    ("vllm@0.11", r"refuses architecture MllamaForConditionalGeneration: supported until v0\.10\.2"),
    ("vllm", r"refuses architecture MllamaForConditionalGeneration: supported until v0\.10\.2"),
])
def test_mllama_refused_where_vllm_does_not_serve_it_on_v0(engine: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        plan_request(Request.of(load_model(MLLAMA), tp=8, max_model_len=8192), (20 * GIB,), engine)


@pytest.mark.parametrize(("model_id", "arch", "first"), [
    ("deepseek-ai/DeepSeek-V4-Flash", "DeepseekV4ForCausalLM", "0.20.0"),
    ("XiaomiMiMo/MiMo-V2-Flash", "MiMoV2FlashForCausalLM", "0.14.0"),
])
def test_new_families_are_refused_by_older_releases(model_id: str, arch: str, first: str) -> None:
    with pytest.raises(InputError, match=f"vLLM 0.11 does not have architecture {arch}: vLLM serves it from v{first}"):
        plan_request(Request.of(load_model(model_id), max_model_len=8192), (40 * GIB,), "vllm@0.11")


def _row(key: str, **rules: Any) -> Any:
    """A release row the registry does not have yet (branch `releases` adds them): 0.33's with the rules named."""
    return RELEASES.get(key) or dataclasses.replace(RELEASES["0.33"], key=key, label=f"vLLM {key}", **rules)


def test_mimo_v2_before_0_20_pads_v_to_k() -> None:
    # vLLM 0.19 mimo_v2_flash.py:287-315: Attention(head_dim 192), V padded to it. Pages: full 16 × 4 × (192 + 192)
    # × 2 = 49,152 B, sliding 16 × 8 × 384 × 2 = 98,304 B: the full block doubles to 32; one block id = 9 × 98,304 =
    # 884,736 B; a 262,144-token request with 8,192 × 1 tokens in flight: 8,192 + 5 × (cdiv(127 + 8,192, 16) + 1 = 521)
    # = 10,797 blocks = 9,552,494,592 B (the figure vLLM 0.19's own kv_cache_utils gives, research mimo_plan_019.py)
    rel = _row("0.19", in_flight_per_stage=False, async_scheduling=False)
    req = resolve(rel, Request.of(load_model("XiaomiMiMo/MiMo-V2-Flash"), max_model_len=262144,
                                  settings=Settings.of(max_num_batched_tokens=8192)))
    engine = get_engine("vllm")
    layout = kvplan.build_layout(req.model, dataclasses.replace(req.cache, block_size=0),
                                 dataclasses.replace(engine.policy(req), v_as_k=True))
    assert engine.policy(req).v_as_k is False  # 0.33 stores V at 128
    assert [families.pads_v_to_k(req.model, RELEASES[k]) for k in ("0.13", "0.14", "0.19", "0.20", "0.33")] == \
        [False, True, True, False, False]
    p = planner_plan(req, layout, (40 * GIB,), rel)
    assert (p.page_bytes, p.reserve_bytes_per_request) == (884_736, 9_552_494_592)
    assert engine_layout(engine, req).groups[0].spec.v_head_dim == 128


# ------------------------------------------------------------------------------------------ by GPU
def _backend(model_id: str, gpu: str, **cache: Any) -> str:
    from kvplan.engines.vllm.paging import paging
    from kvplan.planning.budget import device
    from kvplan.planning.request import Memory

    dev, _ = device(Memory(gpu=gpu), needed=True)
    req = get_engine("vllm").resolve(Request.of(load_model(model_id), max_model_len=8192, device=dev, **cache))
    return paging(req, engine_layout(get_engine("vllm"), req)).backend


@pytest.mark.parametrize(("gpu", "backend"), [("H100", "FLASHMLA_SPARSE_DSV4"), ("B300", "FLASHMLA_SPARSE_DSV4"),
                                              ("RTX-PRO-6000", "FLASHINFER_MLA_SPARSE_DSV4"),
                                              ("DGX-Spark", "FLASHINFER_MLA_SPARSE_DSV4")])
def test_deepseek_v4_backend_by_compute_capability(gpu: str, backend: str) -> None:
    # models/deepseek_v4/nvidia/model.py:537-568: sm12x takes FlashInfer's SM120 class, other CUDA GPUs FlashMLA
    assert _backend("deepseek-ai/DeepSeek-V4-Flash", gpu) == backend


def test_deepseek_v4_needs_hopper_or_newer() -> None:
    with pytest.raises(InputError, match=r"compute capability 9\.x and 10\.x .* A100-80G is 8\.x"):
        _backend("deepseek-ai/DeepSeek-V4-Flash", "A100-80G")


@pytest.mark.parametrize(("gpu", "backend"), [("H100", "FLASH_ATTN_DIFFKV"), ("B200", "FLASH_ATTN_DIFFKV"),
                                              ("A100-80G", "TRITON_ATTN_DIFFKV"), ("L40S", "TRITON_ATTN_DIFFKV"),
                                              ("RTX-PRO-6000", "TRITON_ATTN_DIFFKV")])
def test_mimo_v2_backend_by_compute_capability(gpu: str, backend: str) -> None:
    # mimo_v2.py:320-344 with flash_attn_diffkv.py:43-64: FA3 on sm90, FA4 on sm10x, else Triton
    assert _backend("XiaomiMiMo/MiMo-V2-Flash", gpu) == backend


def test_dgx_spark_stays_on_the_small_scheduler_tier() -> None:
    # 0.33 engine/arg_utils.py:2961-2963: GB10 (cc 12.1) keeps serve's 2048 / 256 although its 119.7 GiB pass 70 GiB;
    # an RTX PRO 6000 (95.6 GiB, cc 12.0) takes the ≥ 70 GiB tier's 8192 / 1024
    for gpu, expected in (("DGX-Spark", (2048, 256)), ("RTX-PRO-6000", (8192, 1024))):
        result = kvplan.capacity("Qwen/Qwen3-8B", gpu=gpu)
        assert result.settings is not None
        assert (result.settings.max_num_batched_tokens, result.settings.max_num_seqs) == expected
    assert any("shares its memory with the CPU" in n for n in kvplan.capacity("Qwen/Qwen3-8B", gpu="DGX-Spark").notes)
