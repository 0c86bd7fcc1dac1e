"""Engine profiles against engines.md §6 worked examples and vllm-0.33-behaviour.md, by hand.

Each expected number carries its derivation. GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines import Request, Settings, get_engine
from kvplan.engines.sglang import default_mem_fraction_static
from kvplan.engines.trtllm import estimator_bytes_per_token
from kvplan.errors import CapacityError, ShardingError
from kvplan.formulas.layers import layer_specs
from kvplan.planning.capacity import engine_layout, plan_request

GIB = 2**30
# engines.md §6 used vLLM before 0.33: sliding reserve W − 1 + max_num_batched_tokens (8192, no async
# batch in flight) and "GPU KV cache size" = num_blocks // groups × block size.
LEGACY = Settings(async_scheduling=False, legacy_token_log=True)


def plan(model: Any, name: str, engine: str, budget: int | tuple[int, ...], **kw: Any) -> Any:
    settings = kw.pop("settings", Settings())
    m = model(name)
    req = Request(model=m, max_model_len=kw.pop("max_model_len", m.max_model_len or 2048), settings=settings, **kw)
    return plan_request(req, budget if isinstance(budget, tuple) else (budget,), engine)


# ----------------------------------------------------------------------------------------- vLLM


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
             settings=Settings(block_size=block_size))
    assert p.block_size == final_block and p.groups[0].page_bytes_per_layer == layer_page
    assert p.page_bytes == 61 * layer_page  # one latent per layer, the same on every TP rank


def test_vllm_deepseek_v3_40gib_bs64(model: Any) -> None:
    # 40·2^30 // (61 × 73,728 = 4,497,408) = 9,549 blocks; M = 163,840 = 2,560 blocks -> 611,136 tokens
    p = plan(model, "deepseek-ai/DeepSeek-V3", "vllm", 40 * GIB, tp=8, settings=Settings(block_size=64))
    assert (p.num_blocks, p.kv_tokens) == (9_549, 611_136)


def test_vllm_deepseek_v3_dcp8(model: Any) -> None:
    # DCP 8: a request needs cdiv(cdiv(163,840, 8), 64) = 320 blocks per rank; 9,549 / 320 = 29.84x;
    # tokens = int(29.840625 × 163,840) = 4,889,088 = 9,549 × 64 × 8 (DCP multiplies tokens)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "vllm", 40 * GIB, tp=8, dcp=8, settings=Settings(block_size=64))
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (9_549, 4_889_088, "29.84x")


def test_vllm_falcon_7b_mqa_page(model: Any) -> None:
    # multi_query -> 1 KV head of 64: 16 × 1 × 128 × 2 B = 4,096 per layer, × 32 layers
    assert plan(model, "tiiuae/falcon-7b", "vllm", 10 * GIB).page_bytes == 32 * 4_096


def test_vllm_gpt_oss_20b_legacy_worked_example(model: Any) -> None:
    # engines.md: 2 groups × 12 layers, 40 GiB // 32,768 // 12 = 109,226 blocks; per request
    # cdiv(131,072, 16) + cdiv(127 + 8,192, 16) + 1 = 8,192 + 521 = 8,713 blocks = 3,426,091,008 B;
    # 109,226 / 8,713 = 12.54x; legacy tokens 109,226 // 2 × 16 = 873,808
    p = plan(model, "openai/gpt-oss-20b", "vllm", 40 * GIB, max_model_len=131072, settings=LEGACY)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (109_226, 873_808, "12.54x")
    assert p.reserve_bytes_per_request == 3_426_091_008


def test_vllm_gpt_oss_20b_hybrid_disabled(model: Any) -> None:
    # every layer full: 40 GiB // (24 × 32,768) = 54,613 blocks -> also 873,808 tokens; 54,613 / 8,192 = 6.67x
    s = Settings(async_scheduling=False, legacy_token_log=True, hybrid_kv_cache_manager=False)
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
    s = Settings(async_scheduling=False, max_num_batched_tokens=batched)
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


@pytest.mark.parametrize(("tp", "block"), [pytest.param(1, 576, id="tp1"), pytest.param(8, 192, id="tp8")])
def test_vllm_qwen3_next_mamba_alignment(model: Any, tp: int, block: int) -> None:
    # tp1: state (3 × 8,192 + 32 × 128 × 128) × 2 B = 1,097,728; attention 2 heads × 512 × 2 B = 2,048 B/token;
    #      64 · cdiv(1,097,728, 64 · 2,048) = 64 · 9 = 576
    # tp8: state (3 × 1,024 + 4 × 128 × 128) × 2 B = 137,216; 1 head: 1,024 B/token; 64 · cdiv(137,216, 65,536) = 192
    p = plan(model, "Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm", 40 * GIB, tp=tp, max_model_len=32768,
             settings=Settings(block_size=16))
    assert p.block_size == block
    per_layer = block * (2_048 if tp == 1 else 1_024)
    rows = {g.kind: g for g in p.groups}
    # 36 linear + 12 full: group size 12 -> 3 Mamba groups + 1 attention group; Mamba pages padded
    assert (rows["mamba"].engine_groups, rows["full"].engine_groups) == (3, 1)
    assert rows["mamba"].page_bytes_per_layer == per_layer and p.page_bytes == 12 * per_layer
    assert sum(g.blocks_per_request * g.engine_groups for g in p.groups) == -(-32768 // block) + 3 * 2


def test_vllm_pp_budgets_min_over_stages(model: Any) -> None:
    # gpt-oss-20b pp2: stage block = 6 layers × 32,768 = 196,608 B; the smaller stage budget decides
    p = plan(model, "openai/gpt-oss-20b", "vllm", (int(12.13 * GIB), 11 * GIB), pp=2)
    assert p.page_bytes == 196_608 and p.num_blocks == 11 * GIB // 196_608


def test_vllm_refuses_one_request(model: Any) -> None:
    # 10 GiB, 131,072 B/token: 16 GiB needed; 5,120 blocks − 1 null block = 5,119 × 16 = 81,904 tokens
    with pytest.raises(CapacityError, match=r"16\.0 GiB.*10\.0 GiB.*length is 81904"):
        plan(model, "meta-llama/Llama-3.1-8B", "vllm", 10 * GIB, max_model_len=131072)


def test_vllm_gpt_oss_tp16_refused(model: Any) -> None:
    with pytest.raises(ShardingError, match="0 heads per rank"):
        plan(model, "openai/gpt-oss-20b", "vllm", 40 * GIB, tp=16)


# --------------------------------------------------------------------------------------- SGLang


def test_sglang_llama31_8b(model: Any) -> None:
    # cell 32 × 8 × 256 × 2 B = 131,072; N = 40·2^30 // 131,072 = 327,680
    p = plan(model, "meta-llama/Llama-3.1-8B", "sglang", 40 * GIB)
    assert p.kv_tokens == 327_680 and p.block_size == 1 and p.max_concurrency is None


def test_sglang_deepseek_v3_tp8(model: Any) -> None:
    # cell 61 × 576 × 2 B = 70,272 on every rank; N = 40·2^30 // 70,272 = 611,191
    assert plan(model, "deepseek-ai/DeepSeek-V3", "sglang", 40 * GIB, tp=8).kv_tokens == 611_191


def test_sglang_gpt_oss_20b_swa_pool(model: Any) -> None:
    # N = 40·2^30 // 49,152 = 873,813; full = int(873,813 × 24 / (0.8 × 12 + 12)) = 970,903; swa = int(× 0.8)
    p = plan(model, "openai/gpt-oss-20b", "sglang", 40 * GIB)
    assert p.num_blocks == 873_813 and p.kv_tokens == 970_903
    assert any("swa_layer_tokens=776722" in n for n in p.notes)


def test_sglang_gemma2_has_no_swa_pool(model: Any) -> None:
    # every one of 42 layers keeps all tokens: 42 × 8 × 512 × 2 B = 344,064 B per token
    p = plan(model, "google/gemma-2-9b-it", "sglang", 40 * GIB)
    assert p.page_bytes == 344_064 and p.kv_tokens == 40 * GIB // 344_064


def test_sglang_dp_attention_mla(model: Any) -> None:
    # DP 8 over tp 8: each DP rank holds its own pool of N tokens (MLA cell unchanged)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "sglang", 40 * GIB, tp=8, max_model_len=4096,
             settings=Settings(dp=8))
    assert p.kv_tokens == 611_191 and p.requests_at_max_len == 8 * (611_191 // 4096)


@pytest.mark.parametrize(("tp", "fraction"), [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)])
def test_sglang_mem_fraction_table(tp: int, fraction: float) -> None:
    assert default_mem_fraction_static(tp) == fraction


def test_sglang_budget_is_fraction_of_free_minus_weights() -> None:
    steps = get_engine("sglang").kv_budget(80 * GIB, 16 * GIB, 0, Settings(mem_fraction_static=0.5), 1)
    assert steps.kv_budget_bytes == 24 * GIB  # 80 × 0.5 − 16


# ------------------------------------------------------------------------------------- TRT-LLM


def test_trtllm_llama2_70b_tp16_ceil_vs_floor(model: Any) -> None:
    # manager: ceil(8 / 16) = 1 head: 2 × 1 × 128 × 2 B × 80 = 40,960; estimator floor(128·8/16) = 64: 20,480
    m = model("meta-llama/Llama-2-70b-hf")
    layout = engine_layout(get_engine("trtllm"), Request(model=m, tp=16, max_model_len=4096))
    assert layout.stages[0].bytes_per_token() == 40_960
    assert sum(estimator_bytes_per_token(s, 16, layout.kv_dtype.element_bits) for s in layer_specs(m)) == 20_480


def test_trtllm_deepseek_v3_blocks_round_up(model: Any) -> None:
    # K-only latent: 61 × 576 × 2 B = 70,272 B/token on every rank; 40 GiB -> 611,191 tokens,
    # ceil(611,191 / 32) = 19,100 blocks (19,099.7 rounded up)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "trtllm", 40 * GIB, tp=8)
    assert (p.kv_tokens, p.num_blocks, p.block_size) == (611_191, 19_100, 32)


def test_trtllm_budget_fraction_of_free_after_load() -> None:
    steps = get_engine("trtllm").kv_budget(80 * GIB, 20 * GIB, 10 * GIB, Settings(), 1)
    assert steps.kv_budget_bytes == int(50 * GIB * 0.9)


# ------------------------------------------------------------------------------------------- hf


def test_hf_deepseek_v3_decompressed(model: Any) -> None:
    # 128 heads × (192 + 128) × 2 B × 61 layers = 4,997,120 B/token (≈ 71× the latent)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "hf", 40 * GIB, max_model_len=1000)
    assert p.steady_bytes_per_request == 1000 * 4_997_120
    assert p.kv_tokens == 40 * GIB // 4_997_120


def test_hf_gpt_oss_sliding_keeps_w_minus_1(model: Any) -> None:
    # 12 full layers × 2,048 B × 4,096 tokens + 12 sliding layers × 2,048 B × 127 tokens
    p = plan(model, "openai/gpt-oss-20b", "hf", 40 * GIB, max_model_len=4096)
    assert p.steady_bytes_per_request == 12 * 2_048 * 4_096 + 12 * 2_048 * 127


# ------------------------------------------------------------- five models × three engines, 40 GiB
# Budget 40 GiB = 42,949,672,960 B per GPU. vLLM: (num_blocks, kv_tokens, concurrency log);
# SGLang: (pool tokens N, full-layer tokens); TRT-LLM: (max tokens, blocks of 32).
FIVE = [
    # Llama-3.1-8B tp1, M 131,072: block 32 × 65,536 = 2,097,152 -> 20,480 blocks, × 16 = 327,680, / 8,192 = 2.50x;
    # cell 131,072 -> 327,680; TRT 327,680 tokens / 32 = 10,240 blocks
    pytest.param("meta-llama/Llama-3.1-8B", 1, 131072, (20_480, 327_680, "2.50x"), (327_680, 327_680),
                 (327_680, 10_240), id="llama31-8b-tp1"),
    # Llama-2-70B tp4 fp16, M 4,096: block 80 × 16 × 2 heads × 256 × 2 B = 1,310,720 -> 32,768 blocks,
    # 524,288 tokens, 32,768 / 256 = 128.00x; cell 81,920 -> 524,288; TRT ceil(8/4) = 2 heads: same, 16,384 blocks
    pytest.param("meta-llama/Llama-2-70b-hf", 4, 4096, (32_768, 524_288, "128.00x"), (524_288, 524_288),
                 (524_288, 16_384), id="llama2-70b-tp4"),
    # DeepSeek-V3 tp8, M 163,840, FLASH_ATTN_MLA block 16: 61 × 16 × 576 × 2 B = 1,124,352 -> 38,199 blocks,
    # × 16 = 611,184 tokens, 38,199 / 10,240 = 3.73x; cell 70,272 -> 611,191; TRT ceil(611,191 / 32) = 19,100
    pytest.param("deepseek-ai/DeepSeek-V3", 8, 163840, (38_199, 611_184, "3.73x"), (611_191, 611_191),
                 (611_191, 19_100), id="deepseek-v3-tp8"),
    # gpt-oss-20b tp1, M 131,072: 109,226 blocks, 8,192 + 1,033 per request, int(109,226 / 9,225 × 131,072)
    # = 1,551,920, 11.84x; SGLang N = 873,813 -> full 970,903; TRT all layers full: 49,152 B -> 873,813, 27,307
    pytest.param("openai/gpt-oss-20b", 1, 131072, (109_226, 1_551_920, "11.84x"), (873_813, 970_903),
                 (873_813, 27_307), id="gpt-oss-20b-tp1"),
    # Gemma-2-9B tp1, M 8,192: block 21 × 131,072 = 2,752,512 -> 15,603 blocks; per request 512 + (cdiv(min(4,095
    # + 16,384, 8,192), 16) + 1 = 513) = 1,025; 15.22x, int(15,603 / 1,025 × 8,192) = 124,702; no SWA pool in
    # SGLang: cell 344,064 -> 124,830; TRT 124,830 tokens, ceil(/ 32) = 3,901 blocks
    pytest.param("google/gemma-2-9b-it", 1, 8192, (15_603, 124_702, "15.22x"), (124_830, 124_830),
                 (124_830, 3_901), id="gemma2-9b-tp1"),
]


@pytest.mark.parametrize(("name", "tp", "length", "vllm", "sglang", "trtllm"), FIVE)
def test_five_models_three_engines(model: Any, name: str, tp: int, length: int, vllm: tuple[int, int, str],
                                   sglang: tuple[int, int], trtllm: tuple[int, int]) -> None:
    v = plan(model, name, "vllm", 40 * GIB, tp=tp, max_model_len=length)
    assert (v.num_blocks, v.kv_tokens, f"{v.max_concurrency:.2f}x") == vllm
    s = plan(model, name, "sglang", 40 * GIB, tp=tp, max_model_len=length)
    assert (s.num_blocks, s.kv_tokens) == sglang
    t = plan(model, name, "trtllm", 40 * GIB, tp=tp, max_model_len=length)
    assert (t.kv_tokens, t.num_blocks) == trtllm


def test_phi4_tp8_vllm_refuses_trtllm_rounds_up(model: Any) -> None:
    # phi-4: 40 layers, 10 KV heads of 128. vLLM asserts tp divides the KV heads (vllm-0.33-behaviour.md);
    # TRT-LLM takes ceil(10 / 8) = 2 heads: 40 × 2 × 256 × 2 B = 40,960 B/token -> 40 GiB // that = 1,048,576
    with pytest.raises(ShardingError, match="10 KV heads"):
        plan(model, "microsoft/phi-4", "vllm", 40 * GIB, tp=8)
    assert plan(model, "microsoft/phi-4", "trtllm", 40 * GIB, tp=8).kv_tokens == 1_048_576


def test_sglang_pool_log_includes_pad_page(model: Any) -> None:
    # (327,680 + 1) slots × 32 layers × 8 heads × 128 × 2 B = 21,475,098,624 B = 20.0002 GiB each for K and V
    p = plan(model, "meta-llama/Llama-3.1-8B", "sglang", 40 * GIB)
    assert any("K size: 20.00 GB, V size: 20.00 GB" in n for n in p.notes)
