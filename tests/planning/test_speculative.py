"""Speculative decoding beside the KV cache: the draft's KV layers and weights, and the drafted tokens' slots,
by each engine's rule. Hand-derived; bytes, GiB = 2**30.

Rules followed (paths in the engines' packages):
- vLLM 0.33: draft layers join the KV cache groups and share the pool (``v1/core/kv_cache_utils.py``
  UniformTypeKVCacheSpecs: one block id costs every layer's page); draft weights load inside the weights'
  DeviceMemoryProfiler (``v1/worker/gpu/model_runner.py:396-427``); draft TP = target TP
  (``v1/spec_decode/draft_model.py:63-78``); lookahead slots ``config/vllm.py:625-653``; Mamba
  ``num_speculative_blocks`` ``v1/kv_cache_interface.py:1135-1141``; sliding ``extra_retained_tokens``
  ``v1/core/kv_cache_planning.py:1634-1641``. vLLM 0.11 refuses a draft model (``engine/arg_utils.py:1485-1489``).
- SGLang 0.5.23 ``model_executor/pool_configurator.py:259-314``; 0.5.2 ``model_executor/model_runner.py:1252-1285``
  and ``server_args.py:485-492``.
- TensorRT-LLM ``_torch/pyexecutor/_util.py`` ``KvCacheCreator._get_kv_size_per_token`` (target + draft).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.engines.base import Draft, Request
from kvplan.engines.vllm import speculative as vllm_spec
from kvplan.engines.vllm.releases import RELEASES
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity
from kvplan.planning.fit import fit
from kvplan.planning.weights import mtp_bytes_per_gpu, weight_bytes_per_gpu
from kvplan.specs import FullAttn

GIB = 2**30
DRAFT_1B = Settings.of(speculative_model="meta-llama/Llama-3.2-1B", num_speculative_tokens=4)


def run(name: str, engine: str, budget: int = 40 * GIB, **kw: Any) -> Any:
    return capacity(name, engine=engine, kv_budget_bytes=(budget,), **kw)


def test_vllm_033_draft_layers_share_the_pool() -> None:
    # Llama-3.1-70B at tp 4: 80 layers × 16 tokens × 2 KV heads × 128 × (K, V) 2 × 2 B = 80 × 16,384 = 1,310,720 B
    # per block; the Llama-3.2-1B draft at tp 4: 16 layers × 16 × 2 heads × 64 × 2 × 2 B = 16 × 8,192 = 131,072.
    # Both FullAttentionSpec with block 16: one uniform-type group, a block id costs 1,441,792 B.
    r = run("meta-llama/Llama-3.1-70B", "vllm", tp=4, max_model_len=32768, settings=DRAFT_1B)
    assert r.plan.page_bytes == 1_310_720 + 131_072 == 1_441_792
    # 40 GiB // 1,441,792 = 29,789 blocks; a 32,768-token request reserves 2,048 of them
    assert r.plan.num_blocks == 42_949_672_960 // 1_441_792 == 29_789
    assert r.plan.max_concurrency == pytest.approx(29_789 / 2048)
    # steady state: (80 + 16) layers' bytes per token per GPU (81,920 + 8,192) × 32,768 tokens
    assert r.plan.steady_bytes_per_request == (81_920 + 8_192) * 32_768
    s = r.extras.speculative
    assert (s.method, s.draft_kv_layers, s.draft_kv_bytes_per_token_per_gpu) == ("draft_model", 16, 8_192)
    # the scheduler's num_lookahead_tokens = K for a draft model in 0.33
    assert s.lookahead_tokens_per_request == r.plan.lookahead_tokens_per_request == 4


def test_draft_weights_of_llama32_1b_at_tp4(model: Any) -> None:
    # Llama-3.2-1B (tied embeddings) per rank at tp 4: embedding 128,256 (= 64 × 2,004) / 4 = 32,064 rows × 2,048;
    # per layer q 512 × 2,048, k and v 128 × 2,048 (2 of 8 KV heads × 64), o 2,048 × 512, gate/up 2,048 × 2,048,
    # down 2,048 × 2,048, 2 norms × 2,048: 15,208,448 params; × 16 layers; final norm 2,048. × 2 B (bf16).
    per_layer = 512 * 2048 + 2 * 128 * 2048 + 2048 * 512 + 3 * 2048 * 2048 + 2 * 2048
    assert per_layer == 15_208_448
    expected = 2 * (32_064 * 2048 + 16 * per_layer + 2048)
    assert weight_bytes_per_gpu(model("meta-llama/Llama-3.2-1B"), tp=4) == expected == 618_008_576
    r = capacity("meta-llama/Llama-3.1-70B", engine="vllm", gpu="H100", tp=4, max_model_len=32768, settings=DRAFT_1B)
    term = next(t for t in r.budget_terms if t.kind == "draft_weights")
    assert (term.bytes, term.exact) == (expected, True)
    plain = capacity("meta-llama/Llama-3.1-70B", engine="vllm", gpu="H100", tp=4, max_model_len=32768)
    assert min(plain.kv_budget_bytes_per_gpu) - min(r.kv_budget_bytes_per_gpu) == expected


def test_vllm_011_refuses_a_draft_model() -> None:
    with pytest.raises(InputError, match="Draft model speculative decoding is not supported yet") as err:
        run("meta-llama/Llama-3.1-70B", "vllm@0.11", tp=4, settings=DRAFT_1B)
    assert err.value.arg_names == ("speculative_method",)
    with pytest.raises(InputError, match=r"from 0\.9"):
        run("deepseek-ai/DeepSeek-V3", "vllm@0.7", tp=8, max_model_len=8192, settings=Settings.of(speculative_method="mtp"))


def test_deepseek_v3_mtp_is_one_more_mla_layer() -> None:
    # bf16 latent (512 + 64) × 2 B = 1,152 B per token per layer, on every rank; 61 + 1 MTP layers × 16 × 1,152
    r = run("deepseek-ai/DeepSeek-V3", "vllm", tp=8, max_model_len=32768, settings=Settings.of(speculative_method="mtp"))
    assert r.plan.page_bytes == 62 * 16 * 1152 == 1_142_784
    assert r.plan.num_blocks == 42_949_672_960 // 1_142_784
    # K defaults to num_nextn_predict_layers (vLLM's n_predict): 1; MTP is EAGLE-family: 1 lookahead slot
    s = r.extras.speculative
    assert (s.method, s.num_speculative_tokens, s.draft_model, s.draft_kv_layers) == ("mtp", 1, None, 1)
    assert s.lookahead_tokens_per_request == 1


def test_mtp_without_mtp_layers_is_bad_input() -> None:
    with pytest.raises(InputError, match="no MTP layers") as err:
        run("meta-llama/Llama-3.1-8B", "vllm", settings=Settings.of(num_speculative_tokens=2))
    assert err.value.arg_names == ("speculative_model",)


def test_deepseek_v3_mtp_weights_without_embedding_and_head(model: Any) -> None:
    # The MTP module is a full MoE decoder layer (index 61 ≥ first_k_dense_replace 3) plus enorm, hnorm,
    # shared_head.norm (3 × 7,168) and eh_proj 7,168 × 14,336 (replicated); its embed_tokens and shared_head.head
    # are the target's in vLLM (v1/spec_decode/llm_base_proposer.py:1466-1580). bf16 at tp 8, per rank:
    # attention 11,010,048 + 1,536 + 4,128,768 + 512 + 4,718,592 + 2,097,152 + 14,680,064 (test_weights.py);
    # MoE 256 × (512 × 7,168 + 7,168 × 256) + shared 3 × 256 × 7,168 + router 256 × 7,168 + bias 256; norms 2 × 7,168
    attn = 11_010_048 + 1_536 + 4_128_768 + 512 + 4_718_592 + 2_097_152 + 14_680_064
    moe = 256 * (512 * 7168 + 7168 * 256) + 3 * 256 * 7168 + 256 * 7168 + 256
    params = attn + moe + 2 * 7168 + 3 * 7168 + 7168 * 14336
    # the router's 256-element e_score_correction_bias is fp32 in vLLM (0.33 models/deepseek_v2.py:328-329): 2 B more each
    assert mtp_bytes_per_gpu(model("deepseek-ai/DeepSeek-V3"), tp=8, weights_dtype="bf16") == 2 * params + 256 * 2


def eagle_head(tmp_path: Path, name: str = "EAGLE3-LLaMA3.1-Instruct-8B") -> str:
    """A folder holding a config shaped like an EAGLE head for Llama-3.1-8B: one decoder layer, the target's
    attention. vLLM tells EAGLE from EAGLE-3 by the name ("eagle-", "eagle3"), as kvplan does."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
              "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
              "tie_word_embeddings": False}
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def test_eagle3_head_is_inferred_and_adds_one_layer(tmp_path: Path) -> None:
    # vLLM infers eagle3 from the name (config/speculative.py:1432-1448); Llama-3.1-8B: 32 layers × 16 ×
    # 8 heads × 128 × 2 × 2 B = 32 × 65,536; the head's one layer is another 65,536
    settings = Settings.of(speculative_model=eagle_head(tmp_path), num_speculative_tokens=3)
    r = run("meta-llama/Llama-3.1-8B", "vllm", max_model_len=8192, settings=settings)
    assert r.extras.speculative.method == "eagle3"
    assert r.plan.page_bytes == 33 * 65_536
    # eagle, eagle3 and mtp get lookahead slots already in 0.11
    r11 = run("meta-llama/Llama-3.1-8B", "vllm@0.11", max_model_len=8192, settings=settings)
    assert r11.plan.lookahead_tokens_per_request == 3 and r11.plan.page_bytes == 33 * 65_536


def test_vllm_19996_log_eagle_layer_shares_the_pool(tmp_path: Path) -> None:
    # vllm-project/vllm#19996 (tests/data/vllm-memory-profiles.json): Llama-3.1-8B + an EAGLE head on an H100, V1
    # (June 2025: 0.9), logged "Available KV cache memory: 51.63 GiB", "GPU KV cache size: 410,128 tokens",
    # "Maximum concurrency for 131,072 tokens per request: 3.13x". With the head's layer in the pool a block costs
    # 33 × 65,536 = 2,162,688 B: int(51.63 GiB) // 2,162,688 = 25,633 blocks × 16 = 410,128 tokens (legacy log),
    # 25,633 / 8,192 = 3.13x. Without it: 26,434 blocks, 422,944 tokens (not what vLLM logged).
    eagle = Settings.of(speculative_model=eagle_head(tmp_path, "EAGLE-LLaMA3.1-Instruct-8B"), num_speculative_tokens=3)
    budget = (int(51.63 * GIB),)
    r = capacity("meta-llama/Llama-3.1-8B", engine="vllm@0.9", kv_budget_bytes=budget, max_model_len=131072,
                 settings=eagle)
    assert r.extras.speculative.method == "eagle"  # inferred from the name ("eagle-"), as vLLM does
    assert (r.plan.num_blocks, r.plan.kv_tokens, f"{r.plan.max_concurrency:.2f}x") == (25_633, 410_128, "3.13x")
    plain = capacity("meta-llama/Llama-3.1-8B", engine="vllm@0.9", kv_budget_bytes=budget, max_model_len=131072)
    assert plain.plan.kv_tokens == 26_434 * 16 == 422_944


def test_eagle_and_draft_model_need_k() -> None:
    with pytest.raises(InputError, match="num_speculative_tokens was not provided") as err:
        run("meta-llama/Llama-3.1-70B", "vllm", tp=4, settings=Settings.of(speculative_model="meta-llama/Llama-3.2-1B"))
    assert err.value.arg_names == ("num_speculative_tokens",)


def test_ngram_adds_no_layers_and_no_lookahead() -> None:
    # n-gram lookup has no model (vLLM num_lookahead_tokens is 0 for it)
    plain = run("meta-llama/Llama-3.1-8B", "vllm", max_model_len=8192)
    r = run("meta-llama/Llama-3.1-8B", "vllm", max_model_len=8192,
            settings=Settings.of(speculative_method="ngram", num_speculative_tokens=4))
    assert r.plan.num_blocks == plain.plan.num_blocks and r.plan.lookahead_tokens_per_request == 0


def test_vllm_033_reserves_k_state_blocks_per_mamba_layer() -> None:
    # Qwen3-Next (36 gated-DeltaNet + 12 full layers, groups of 12): a request reserves per Mamba group
    # 2 blocks (align mode) + 1 prefill checkpoint block (FlashInfer GDN prefill on an H100,
    # qwen_gdn_linear_attn.py:690-750) + K (MambaSpec.max_memory_usage_bytes, kv_cache_interface.py:1135-1141;
    # use_replayssm off); 0.11 counts the state alone (max_memory_usage_bytes = page).
    k3 = Settings.of(speculative_method="ngram", num_speculative_tokens=3)
    r = run("Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm", tp=4, max_model_len=32768, settings=k3)
    mamba = next(g for g in r.plan.groups if g.kind == "mamba")
    assert mamba.blocks_per_request == 2 + 1 + 3
    # concurrency = num_blocks / (3 Mamba groups × 6 + the full group's cdiv(32768, 320) = 103 blocks)
    assert r.plan.max_concurrency == pytest.approx(r.plan.num_blocks / (3 * 6 + 103))
    r11 = run("Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm@0.11", tp=4, max_model_len=32768, settings=k3)
    # 0.11: one block per request whatever K (MambaSpec.max_memory_usage_bytes = page_size_bytes,
    # vllm 0.11 v1/kv_cache_interface.py:235-239); the speculative blocks are allocated, not reserved
    assert next(g for g in r11.plan.groups if g.kind == "mamba").blocks_per_request == 1


@pytest.mark.parametrize(("method", "layers", "k", "release", "retained"), [
    # min(num_nextn_predict_layers, K) > 1: multi-module MTP keeps K − 1 tokens below the window (0.33)
    pytest.param("mtp", 3, 3, "0.33", 2, id="mtp-3-modules-k3"),
    pytest.param("mtp", 3, 1, "0.33", 0, id="mtp-k1-one-module"),
    pytest.param("mtp", 1, 4, "0.33", 0, id="mtp-one-layer"),
    pytest.param("eagle", 1, 4, "0.33", 0, id="eagle-reads-one-token"),
    pytest.param("mtp", 3, 3, "0.11", 0, id="0.11-no-retained-tokens"),
])
def test_sliding_window_retained_tokens(model: Any, method: str, layers: int, k: int, release: str,
                                        retained: int) -> None:
    spec = FullAttn(num_kv_heads=8, head_dim=128, v_head_dim=128)
    draft = Draft(method=method, num_speculative_tokens=k, model=None, tp=1, specs=(spec,) * layers,
                  specs_per_gpu=(spec,) * layers)
    req = Request.of(model("meta-llama/Llama-3.1-8B"), max_model_len=8192, draft=draft)
    assert vllm_spec.reserve(req, RELEASES[release]).retained_tokens == retained


def test_sglang_0523_grows_the_cell_by_the_draft_layers() -> None:
    # cell = 81,920 + int(81,920 × 16 draft layers / 80 target layers) = 98,304 (the draft assumed at the
    # target's per-layer size); N = 40 GiB // 98,304 = 436,906
    r = run("meta-llama/Llama-3.1-70B", "sglang", tp=4, max_model_len=32768, settings=DRAFT_1B)
    assert r.plan.kv_tokens == 42_949_672_960 // 98_304 == 436_906
    # the draft pool holds the same tokens at its real 8,192 B per token per GPU; weights from the reserve
    assert any("436,906 tokens at 8,192 B per token per GPU, 3,579,133,952 B" in n for n in r.plan.notes)
    assert r.extras.speculative.draft_weights_in_budget is False


def test_sglang_052_adds_headroom_for_draft_and_verify_tokens() -> None:
    # N = 40 GiB // 131,072 = 327,680; max_num_reqs = min(max(int(327,680 / 8,192 × 512), 2,048), 4,096) = 4,096;
    # N + 4,096 × (steps 3 × topk 1 + 4 draft tokens) + 100 = 356,452
    eagle_k3 = Settings.of(speculative_model="meta-llama/Llama-3.2-1B", speculative_method="eagle", num_speculative_tokens=3)
    r = run("meta-llama/Llama-3.1-8B", "sglang@0.5.2", max_model_len=8192, settings=eagle_k3)
    assert r.plan.kv_tokens == 327_680 + 4096 * 7 + 100 == 356_452


@pytest.mark.parametrize(("method", "reserve_mib"), [
    pytest.param("eagle", 2048, id="eagle-2GiB"), pytest.param("draft_model", 6144, id="standalone-6GiB")])
def test_sglang_052_reserves_memory_for_the_draft(method: str, reserve_mib: int) -> None:
    # H100 (nvidia-smi 81,559 MiB), tp 1: reserve (9.5 + 0.5) GiB = 10,240 MiB, + the draft's; fraction rounded to 3
    s = Settings.of(speculative_model="meta-llama/Llama-3.2-1B", speculative_method=method, num_speculative_tokens=3)
    r = capacity("meta-llama/Llama-3.1-8B", engine="sglang@0.5.2", gpu="H100", max_model_len=8192, settings=s)
    assert r.settings.sglang.mem_fraction_static == round((81_559 - 10_240 - reserve_mib) / 81_559, 3)


def test_trtllm_token_costs_target_and_draft() -> None:
    # per token per GPU 81,920 (target) + 8,192 (draft's own manager) = 90,112; 40 GiB // 90,112 = 476,625 tokens
    r = run("meta-llama/Llama-3.1-70B", "trtllm", tp=4, max_model_len=32768, settings=DRAFT_1B)
    assert r.plan.kv_tokens == 42_949_672_960 // 90_112 == 476_625
    # a request holds 32,768 + K 4 draft tokens: cdiv(32,772, 32) = 1,025 blocks; cdiv(476,625, 32) = 14,895 blocks
    assert r.plan.requests_at_max_len == 14_895 // 1_025 == 14


def test_transformers_profile_refuses_assisted_generation() -> None:
    with pytest.raises(InputError, match="assisted generation") as err:
        run("meta-llama/Llama-3.1-70B", "hf", tp=4, settings=DRAFT_1B)
    assert err.value.arg_names == ("speculative_method",)


def test_fit_passes_the_draft_to_every_layout() -> None:
    # Each candidate is capacity() with the same settings: the draft's weights and KV are in every layout tried.
    found = fit("meta-llama/Llama-3.1-70B", gpu="H100", max_model_len=32768, concurrency=24, settings=DRAFT_1B)
    best = found.best
    assert best is not None
    direct = capacity("meta-llama/Llama-3.1-70B", engine="vllm", gpu="H100", tp=best.tp, pp=best.pp,
                      max_model_len=32768, settings=DRAFT_1B)
    assert (best.kv_tokens, best.requests_per_replica) == (direct.plan.kv_tokens, direct.plan.requests_at_max_len)
    plain = fit("meta-llama/Llama-3.1-70B", gpu="H100", max_model_len=32768, concurrency=24)
    same = next(c for c in plain.candidates if (c.tp, c.pp) == (best.tp, best.pp))
    assert best.kv_tokens < same.kv_tokens


def test_a_given_overhead_keeps_the_draft_weights() -> None:
    # --overhead replaces every estimated term but the weights: the checkpoint's and the draft's 618,008,576 B
    r = capacity("meta-llama/Llama-3.1-70B", engine="vllm", gpu="H100", tp=4, max_model_len=32768,
                 overhead_bytes=3 * GIB, settings=DRAFT_1B)
    assert [t.kind for t in r.budget_terms] == ["weights", "draft_weights", "given"]
    assert r.budget_terms[1].bytes == 618_008_576
