"""``speculative_method mtp`` on every bundled model that has MTP modules, as vLLM builds the drafter: the modules,
their KV layers, their weights, and what the release does with them (kvplan.config.mtp; kvplan.engines.vllm).

Held to two real MTP start-ups (tests/data/logs): a Qwen3.6-27B NVFP4 run on vLLM 0.20 (K=1) and the DeepSeek-V4-Flash
run on vLLM 0.25 (TP 2, K=2). Hand-derived; GiB = 2**30.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvplan.config.mtp import mtp_modules
from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity
from kvplan.planning.weights import mtp_bytes_per_gpu, weight_parts
from kvplan.specs import Composite, FullAttn, MLAAttn, SlidingAttn, SlidingMLA, parts

GIB = 2**30


def mtp(k: int | None = None) -> Settings:
    return Settings.of(speculative_method="mtp", **({"num_speculative_tokens": k} if k else {}))


@pytest.mark.parametrize(("model_id", "drafter", "kind", "n_predict"), [
    # DeepSeek-V3/R1 (and the NVFP4 twins): the MLA layer; n_predict = num_nextn_predict_layers (1)
    pytest.param("deepseek-ai/DeepSeek-V3", "DeepSeekMTPModel", MLAAttn, 1, id="deepseek-v3"),
    pytest.param("deepseek-ai/DeepSeek-R1", "DeepSeekMTPModel", MLAAttn, 1, id="deepseek-r1"),
    pytest.param("nvidia/DeepSeek-V3-0324-NVFP4", "DeepSeekMTPModel", MLAAttn, 1, id="deepseek-v3-nvfp4"),
    pytest.param("nvidia/DeepSeek-V3.1-NVFP4", "DeepSeekMTPModel", MLAAttn, 1, id="deepseek-v31-nvfp4"),
    # V3.2 and GLM-5 (glm_moe_dsa): DeepseekV32MTPModel, MLA with its indexer
    pytest.param("deepseek-ai/DeepSeek-V3.2", "DeepseekV32MTPModel", Composite, 1, id="deepseek-v32"),
    pytest.param("zai-org/GLM-5", "DeepseekV32MTPModel", Composite, 1, id="glm-5"),
    # V4: a layer past num_hidden_layers gets compress ratio 1, the sliding latent alone
    pytest.param("deepseek-ai/DeepSeek-V4-Flash", "DeepSeekV4MTPModel", SlidingMLA, 1, id="deepseek-v4-flash"),
    pytest.param("zai-org/GLM-4.5", "Glm4MoeMTPModel", FullAttn, 1, id="glm-4.5"),
    pytest.param("zai-org/GLM-4.5-Air", "Glm4MoeMTPModel", FullAttn, 1, id="glm-4.5-air"),
    # Qwen3.5: mtp_num_hidden_layers 1 (qwen3_5_mtp.py:82), layer_type full_attention (:121)
    pytest.param("Qwen/Qwen3.5-9B", "Qwen3_5MTP", FullAttn, 1, id="qwen3.5-9b"),
    pytest.param("Qwen/Qwen3.5-27B", "Qwen3_5MTP", FullAttn, 1, id="qwen3.5-27b"),
    pytest.param("Qwen/Qwen3.5-35B-A3B", "Qwen3_5MoeMTP", FullAttn, 1, id="qwen3.5-35b-a3b"),
    pytest.param("Qwen/Qwen3.5-122B-A10B", "Qwen3_5MoeMTP", FullAttn, 1, id="qwen3.5-122b-a10b"),
    pytest.param("Qwen/Qwen3.5-397B-A17B", "Qwen3_5MoeMTP", FullAttn, 1, id="qwen3.5-397b-a17b"),
    # Qwen3-Next: the config names no MTP layers; Qwen3NextMTP builds getattr(..., 1) = 1 and n_predict is None
    pytest.param("Qwen/Qwen3-Next-80B-A3B-Thinking", "Qwen3NextMTP", FullAttn, None, id="qwen3-next"),
    # MiMo-V2-Flash: always one module (_MIMO_V2_FLASH_NUM_MTP_LAYERS), on the SWA geometry
    pytest.param("XiaomiMiMo/MiMo-V2-Flash", "MiMoV2MTPModel", SlidingAttn, 1, id="mimo-v2-flash"),
    # Nemotron-3: one module of its mtp pattern ("*E": attention, then MoE)
    pytest.param("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "NemotronHMTPModel", FullAttn, 1, id="nemotron-3-super"),
    pytest.param("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", "NemotronHMTPModel", FullAttn, 1,
                 id="nemotron-3-ultra"),
    # EXAONE-4.5: module j is built as layer index j: layer_types[0] is sliding_attention
    pytest.param("LGAI-EXAONE/EXAONE-4.5-33B", "Exaone4_5_MTP", SlidingAttn, 1, id="exaone-4.5"),
])
def test_every_bundled_mtp_model(model: Any, model_id: str, drafter: str, kind: type, n_predict: int | None) -> None:
    m = model(model_id)
    found = mtp_modules(m)
    assert (found.drafter, found.layers, found.n_predict) == (drafter, 1, n_predict)
    spec = m.layer_specs[found.attention_layers[0]]
    assert isinstance(spec, kind)
    if kind is Composite:  # MLA + the indexer's K cache
        assert any(isinstance(p, MLAAttn) for p in parts(spec)) and len(parts(spec)) == 2


@pytest.mark.parametrize(("model_id", "message"), [
    pytest.param("moonshotai/Kimi-K2-Instruct", "has no MTP layers", id="kimi-k2-zero-layers"),
    pytest.param("meta-llama/Llama-3.1-8B", "has no MTP layers", id="llama"),
    pytest.param("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "has no MTP layers", id="nemotron-3-nano"),
    # num_mtp_modules 3, but vLLM 0.33 maps MiniMax-M3 only (config/speculative.py:1115-1145)
    pytest.param("MiniMaxAI/MiniMax-M2.7", "declares 3 MTP module\\(s\\) but has no MTP drafter", id="minimax-m2.7"),
])
def test_models_without_an_mtp_drafter(model: Any, model_id: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        mtp_modules(model(model_id))


def test_qwen35_27b_on_one_h100_plans_like_033() -> None:
    # 16 full-attention layers + the MTP module's (full attention, 4 KV heads × 256) = 17 beside 48 GDN layers:
    # group size 17 (48 < 17 × 1.5 fails: the smallest count), 3 GDN groups padded to 51 (3 padding layers)
    r = capacity("Qwen/Qwen3.5-27B", engine="vllm", gpu="H100", settings=mtp(2))
    s = r.extras.speculative
    assert (s.method, s.num_speculative_tokens, s.draft_kv_layers) == ("mtp", 2, 1)
    assert s.draft_kv_bytes_per_token_per_gpu == 4 * 256 * 2 * 2 == 4096
    assert s.draft_weights_in_budget and s.lookahead_tokens_per_request == 2
    mamba = next(g for g in r.plan.groups if g.kind == "mamba")
    # align mode (prefix caching on in 0.33): 2 state blocks + the FlashInfer GDN prefill checkpoint block on an H100
    # + K = 2 (MambaSpec.num_speculative_blocks, kv_cache_interface.py:1135-1141)
    assert mamba.blocks_per_request == 2 + 1 + 2
    assert any("padded with 3 layers" in n for n in r.plan.notes)
    # 262,144 tokens do not fit one request (kvplan's estimate: 228,800 with MTP, 262,080 without): vLLM refuses
    assert r.plan.refusal is not None and "estimated maximum model length" in r.plan.refusal.message
    plain = capacity("Qwen/Qwen3.5-27B", engine="vllm", gpu="H100").plan.refusal
    assert plain is not None and r.plan.refusal.estimated_max_model_len < plain.estimated_max_model_len
    assert capacity("Qwen/Qwen3.5-27B", engine="vllm", gpu="H100", max_model_len=131072, settings=mtp(2)).plan.refusal \
        is None


def test_qwen36_27b_mtp_log_vllm_020() -> None:
    # tests/data/logs/vllm-v0200-qwen36-27b-nvfp4-mtp1-fp8kv-wsl: vLLM 0.20.0, sakamakismile/Qwen3.6-27B-Text-NVFP4-MTP
    # (Qwen3.5-27B's KV geometry), fp8 KV, max_model_len 65,536, 16,384 batched tokens, 2 sequences, prefix caching, enforce eager,
    # MTP K=1. Logged: "Setting attention block size to 1584 tokens", "Padding mamba page size by 0.51%", "Add 3
    # padding layers", "Available KV cache memory: 4.8 GiB", "GPU KV cache size: 36,432 tokens", "1.82x".
    # GDN state with K=1: conv (2 × 16 × 128 + 48 × 128) × (4 − 1 + 1) × 2 B = 81,920 + ssm 48 × 128 × 128 × 4 B
    # = 3,145,728 → 3,227,648 B; attention 2,048 B/token (fp8): block = 16 · cdiv(3,227,648, 16 · 2,048) = 1,584
    # (without the K row: 3,207,168 B → 1,568); 3,244,032 / 3,227,648 = 1.0051 (the logged 0.51%).
    settings = Settings.of(speculative_method="mtp", num_speculative_tokens=1, max_num_seqs=2,
                           max_num_batched_tokens=16384, enforce_eager=True, prefix_caching=True)
    r = capacity("Qwen/Qwen3.5-27B", engine="vllm@0.20", kv_budget_bytes=(int(4.8 * GIB),), kv_dtype="fp8",
                 max_model_len=65536, settings=settings)
    assert r.plan.block_size == 1584
    # one block id: 17 tensors (group size 17) × 1,584 × 2,048 = 55,148,544 B; 5,153,960,755 // that = 93 blocks;
    # 0.20 prints num_blocks // 4 groups × 1,584 = 23 × 1,584 = 36,432; concurrency 93 / (3 × 3 + 42) = 1.82
    assert r.plan.page_bytes == 17 * 1584 * 2048 and r.plan.num_blocks == 93
    logged = json.loads(Path("tests/data/logs/vllm-v0200-qwen36-27b-nvfp4-mtp1-fp8kv-wsl.json").read_text())["numbers"]
    assert r.plan.kv_tokens == logged["kv_tokens"] == 36_432
    assert f"{r.plan.max_concurrency:.2f}x" == logged["max_concurrency"] == "1.82x"


# DeepSeek-V4-Flash, vLLM 0.25, TP 2 on RTX PRO 6000, fp8 KV, 1,048,576 tokens, 4,096 batched, 64 sequences, MTP K=2
# (tests/data/logs/vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000): "Available KV cache memory: 10.29 GiB",
# "GPU KV cache size: 1,993,100 tokens", "Maximum concurrency for 1,048,576 tokens per request: 1.90x".
V4_LOG = json.loads(Path("tests/data/logs/vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000.json").read_text())
V4 = {"engine": "vllm@0.25", "gpu": "RTX PRO 6000", "tp": 2, "kv_dtype": "fp8", "max_model_len": 1_048_576}
V4_SETTINGS = {"max_num_seqs": 64, "max_num_batched_tokens": 4096}


def test_deepseek_v4_flash_mtp_log_vllm_025() -> None:
    # 0.25 groups (kv_cache_utils.py:1499-1670): the latent group (21 C4 latents 37,440 B, 20 C128 1,728 B, 21
    # indexer keys 8,640 B), the sliding latents split in layer tuples of 22 (43 + the MTP layer's = 44: 22 + 22),
    # the C4 compressor states (21 × 37,440 after padding + 21 × 8,640) and the C128 ones (20 × 37,440).
    # One block id: 37,440 × 22 + 1,728 × 20 + 8,640 × 21 = 1,039,680 B (one slot per page size and position).
    # Blocks per request, weighted by each group's page sum over the latent group's 1,002,240 B: cdiv(4,096 ×
    # 1,002,240 + 2 × 67 × 823,680 + 1,027 × 967,680 + 529 × 748,800, 1,002,240) = 5,593.
    # 10.29 GiB printed: 10,631 blocks × 1,039,680 = 11,052,838,080 B (10.2937 GiB); int(10,631 / 5,593 × 1,048,576)
    budget = 10_631 * 1_039_680
    r = capacity("deepseek-ai/DeepSeek-V4-Flash", kv_budget_bytes=(budget,), settings=Settings.of(**V4_SETTINGS, **{
        "speculative_method": "mtp", "num_speculative_tokens": 2}), **V4)
    assert r.plan.page_bytes == 1_039_680 and r.plan.num_blocks == 10_631
    assert f"{budget / GIB:.2f}" == f"{V4_LOG['numbers']['available_kv_gib']:.2f}"
    assert r.plan.kv_tokens == V4_LOG["numbers"]["kv_tokens"] == 1_993_100
    assert f"{r.plan.max_concurrency:.2f}x" == V4_LOG["numbers"]["max_concurrency"] == "1.90x"
    assert r.extras.speculative.draft_kv_bytes_per_token_per_gpu == 584  # the sliding latent: fp8_ds_mla 584 B
    # without the MTP layer the sliding latents split 22 + 21: 5,591 blocks per request, not the log's count
    plain = capacity("deepseek-ai/DeepSeek-V4-Flash", kv_budget_bytes=(budget,), settings=Settings.of(**V4_SETTINGS), **V4)
    assert plain.plan.kv_tokens == int(10_631 / 5_591 * 1_048_576) != 1_993_100


def test_deepseek_v4_mtp_weights_are_the_ratio_1_layer(model: Any) -> None:
    # The MTP module repeats a compress-ratio-1 layer's attention (no compressor, no indexer: layer 0's) and the last
    # layer's MoE (its gate has e_score_correction_bias, not a hash table): the difference with the last layer's
    # whole template is its compressor (2 × 1,024 × 4,096 + 4 × 1,024 fp32) and indexer tensors.
    m = model("deepseek-ai/DeepSeek-V4-Flash")
    modules = mtp_modules(m)
    assert modules.attention_layers == (0,) and not modules.template_exact
    parts_ = [p.name for layer in weight_parts(m).mtp_layers for p in layer]
    assert not any("compressor" in n or "tid2eid" in n for n in parts_)
    assert any("e_score_correction_bias" in n for n in parts_)


@pytest.mark.parametrize(("release", "with_head"), [("0.15", True), ("0.16", False)])
def test_vllm_shares_the_mtp_head_from_016(model: Any, release: str, with_head: bool) -> None:
    # DeepSeek-V3's MTP module computes logits with shared_head.head: 0.16 replaces it with the target's lm_head
    # (v1/spec_decode/eagle.py:1494-1521); before, the checkpoint's copy stays: 129,280 × 7,168 bf16 / tp 8
    # (vocab padded to 129,280, a multiple of 64) = 16,160 × 7,168 × 2 B = 231,669,760 B more.
    r = capacity("deepseek-ai/DeepSeek-V3", engine=f"vllm@{release}", gpu="H200", tp=8, max_model_len=32768,
                 settings=mtp())
    term = next(t for t in r.budget_terms if t.kind == "draft_weights")
    shared = mtp_bytes_per_gpu(model("deepseek-ai/DeepSeek-V3"), tp=8)
    assert term.bytes - shared == (16_160 * 7168 * 2 if with_head else 0)


def test_pp_loads_the_mtp_embedding(model: Any) -> None:
    # at pp > 1 vLLM loads the draft's embedding separately (llm_base_proposer.py:1418-1480: pp world size 1 only)
    r = capacity("zai-org/GLM-4.5-Air", engine="vllm", gpu="H200", tp=2, pp=2, max_model_len=32768, settings=mtp())
    term = next(t for t in r.budget_terms if t.kind == "draft_weights")
    m = model("zai-org/GLM-4.5-Air")
    assert term.bytes == mtp_bytes_per_gpu(m, tp=2, shared=("lm_head",)) > mtp_bytes_per_gpu(m, tp=2)
    assert "with its own embedding" in term.source


@pytest.mark.parametrize(("model_id", "release", "first"), [
    # releases that build the model but have no drafter for it (Qwen3.5 and GLM-5 arrive with theirs)
    pytest.param("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "0.16", "0.17", id="nemotron-3-before-0.17"),
    pytest.param("XiaomiMiMo/MiMo-V2-Flash", "0.20", "0.21", id="mimo-v2-before-0.21"),
])
def test_a_release_without_the_drafter_refuses(model_id: str, release: str, first: str) -> None:
    with pytest.raises(InputError, match=f"arrives in vLLM {first}"):
        capacity(model_id, engine=f"vllm@{release}", gpu="H200", tp=8, max_model_len=8192, settings=mtp(1))


def test_k_must_be_a_multiple_of_n_predict(tmp_path: Path) -> None:
    # a DeepSeek-V3 config with 2 MTP modules: K defaults to 2; K 4 drafts with each module twice; K 3 is refused
    # (0.33 config/speculative.py:1604-1611)
    config = json.loads(Path("configs/deepseek-ai/DeepSeek-V3/config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_nextn_predict_layers": 2}))
    path = str(tmp_path / "config.json")
    r = capacity(path, engine="vllm", gpu="H200", tp=8, max_model_len=8192, settings=mtp())
    assert (r.extras.speculative.num_speculative_tokens, r.extras.speculative.draft_kv_layers) == (2, 2)
    assert capacity(path, engine="vllm", gpu="H200", tp=8, max_model_len=8192, settings=mtp(4)).extras.speculative
    with pytest.raises(InputError, match="must be divisible by n_predict=2"):
        capacity(path, engine="vllm", gpu="H200", tp=8, max_model_len=8192, settings=mtp(3))


def test_qwen3_next_needs_k() -> None:
    # n_predict is None for Qwen3-Next (hf_config_override sets getattr(config, "num_nextn_predict_layers", None))
    with pytest.raises(InputError, match="num_speculative_tokens was not provided"):
        capacity("Qwen/Qwen3-Next-80B-A3B-Thinking", engine="vllm", gpu="H200", tp=4, settings=mtp())


def test_profile_run_drafter_and_rejection_sampler() -> None:
    # V1 runner (0.25): the drafter's dummy forward over the batched tokens and the rejection sampler's 2 × R rows;
    # Model Runner V2 (0.33) has no rejection-sampler dummy
    r25 = capacity("deepseek-ai/DeepSeek-V3", engine="vllm@0.25", gpu="H200", tp=8, max_model_len=8192, settings=mtp())
    act = next(t for t in r25.budget_terms if t.kind == "activation")
    assert "drafter forward" in act.source and "2,048 rejection-sampler rows" in act.source and not act.exact
    r33 = capacity("deepseek-ai/DeepSeek-V3", engine="vllm@0.33", gpu="H200", tp=8, max_model_len=8192, settings=mtp())
    act33 = next(t for t in r33.budget_terms if t.kind == "activation")
    assert "drafter forward" in act33.source and "rejection" not in act33.source
