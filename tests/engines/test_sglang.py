"""The SGLang profile: the token pool, hybrid-SWA pools, DP attention, mem_fraction_static.
"""

from __future__ import annotations

from typing import Any

import pytest
from plan_helpers import GIB, budget, plan

from kvplan.engines.sglang import default_mem_fraction_static


def test_sglang_llama31_8b(model: Any) -> None:
    # cell 32 × 8 × 256 × 2 B = 131,072; N = 40·2^30 // 131,072 = 327,680
    p = plan(model, "meta-llama/Llama-3.1-8B", "sglang", 40 * GIB)
    assert p.kv_tokens == 327_680 and p.block_size == 1 and p.max_concurrency is None


def test_sglang_deepseek_v3_tp8(model: Any) -> None:
    # cell 61 × 576 × 2 B = 70,272 on every rank; N = 40·2^30 // 70,272 = 611,191
    assert plan(model, "deepseek-ai/DeepSeek-V3", "sglang", 40 * GIB, tp=8).kv_tokens == 611_191


def test_sglang_gpt_oss_20b_swa_pool(model: Any) -> None:
    # 0.5.8-0.5.10 (layer-token and memory-weighted splits): N = 40·2^30 // 49,152 = 873,813;
    # full = int(873,813 × 24 / (0.8 × 12 + 12)) = 970,903; swa = int(× 0.8)
    p = plan(model, "openai/gpt-oss-20b", "sglang@0.5.10", 40 * GIB)
    assert p.num_blocks == 873_813 and p.kv_tokens == 970_903
    assert any("swa_layer_tokens=776722" in n for n in p.notes)
    # 0.5.11 on (pool_configurator.py:184-284): N itself is the full-layer count, 40·2^30 // (24,576 + 0.8 × 24,576)
    # = 970,903 (max_total_num_tokens = full_tokens); the pools are the same
    p = plan(model, "openai/gpt-oss-20b", "sglang", 40 * GIB)
    assert p.num_blocks == 970_903 and p.kv_tokens == 970_903
    assert any("swa_layer_tokens=776722" in n for n in p.notes)


def test_sglang_gemma2_has_no_swa_pool(model: Any) -> None:
    # every one of 42 layers keeps all tokens: 42 × 8 × 512 × 2 B = 344,064 B per token
    p = plan(model, "google/gemma-2-9b-it", "sglang", 40 * GIB)
    assert p.page_bytes == 344_064 and p.kv_tokens == 40 * GIB // 344_064


def test_sglang_dp_attention_mla(model: Any) -> None:
    # DP 8 over tp 8: each DP rank holds its own pool of N tokens (MLA cell unchanged)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "sglang", 40 * GIB, tp=8, max_model_len=4096,
             dp=8)
    assert p.kv_tokens == 611_191 and p.requests_at_max_len == 8 * (611_191 // 4096)


@pytest.mark.parametrize(("tp", "fraction"), [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)])
def test_sglang_mem_fraction_table(tp: int, fraction: float) -> None:
    assert default_mem_fraction_static(tp) == fraction


def test_sglang_budget_is_fraction_of_free_minus_weights(model: Any) -> None:
    assert budget(model, "sglang", 80 * GIB, 16 * GIB, mem_fraction_static=0.5) == 24 * GIB  # 80 × 0.5 − 16
