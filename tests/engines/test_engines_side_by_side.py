"""Five models under three engines with one 40 GiB budget, and where the engines disagree.
"""

from __future__ import annotations

from typing import Any

import pytest
from plan_helpers import GIB, plan

from kvplan.errors import ShardingError

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
    # = 1,551,920, 11.84x; SGLang 0.5.23 N = full = 40 GiB // (24,576 + 0.8 × 24,576) = 970,903 (0.5.11 on:
    # max_total_num_tokens is the full-layer count; 0.5.10 logged N = 873,813); TRT all layers full: 49,152 B ->
    # 873,813, 27,307
    pytest.param("openai/gpt-oss-20b", 1, 131072, (109_226, 1_551_920, "11.84x"), (970_903, 970_903),
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
