"""The transformers profile: contiguous caches, decompressed MLA, sliding layers keep W − 1 tokens.
"""

from __future__ import annotations

from typing import Any

from plan_helpers import GIB, plan


def test_hf_deepseek_v3_decompressed(model: Any) -> None:
    # 128 heads × (192 + 128) × 2 B × 61 layers = 4,997,120 B/token (≈ 71× the latent)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "hf", 40 * GIB, max_model_len=1000)
    assert p.steady_bytes_per_request == 1000 * 4_997_120
    assert p.kv_tokens == 40 * GIB // 4_997_120


def test_hf_gpt_oss_sliding_keeps_w_minus_1(model: Any) -> None:
    # 12 full layers × 2,048 B × 4,096 tokens + 12 sliding layers × 2,048 B × 127 tokens
    p = plan(model, "openai/gpt-oss-20b", "hf", 40 * GIB, max_model_len=4096)
    assert p.steady_bytes_per_request == 12 * 2_048 * 4_096 + 12 * 2_048 * 127
