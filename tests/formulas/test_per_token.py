"""Hand-derived golden numbers, one row per attention kind (derivation in each id/comment)."""

from __future__ import annotations

import pytest

import kvplan


@pytest.mark.parametrize(
    ("model_id", "tp", "expected_per_token", "expected_per_gpu"),
    [
        # 2 (K,V) × 80 layers × 8 kv heads × 128 head_dim × 2 B (fp16) = 327,680
        pytest.param("meta-llama/Llama-2-70b", 1, 327_680, 327_680, id="llama2-70b-tp1"),
        # 8 heads / tp 4 = 2 heads per GPU -> 327,680 / 4
        pytest.param("meta-llama/Llama-2-70b", 4, 327_680, 81_920, id="llama2-70b-tp4"),
        # tp 16 > 8 heads: max(1, 8 // 16) = 1 head per GPU, each head on 2 GPUs -> 2 × 80 × 128 × 2
        pytest.param("meta-llama/Llama-2-70b", 16, 327_680, 40_960, id="llama2-70b-tp16-replicated"),
        # MLA: 61 layers × (512 + 64) × 2 B = 70,272, on every GPU at any tp
        pytest.param("deepseek-ai/DeepSeek-V3", 1, 70_272, 70_272, id="dsv3-tp1"),
        pytest.param("deepseek-ai/DeepSeek-V3", 8, 70_272, 70_272, id="dsv3-tp8-replicated"),
        # explicit head_dim 128 (hidden/heads would be 80): 64 × 8 × 128 × 2 × 2 = 262,144
        pytest.param("Qwen/Qwen3-32B", 1, 262_144, 262_144, id="qwen3-32b-head-dim"),
        # Falcon-7B MQA (multi_query, old RefinedWeb format): 32 × 1 × 64 × 2 × 2 = 8,192
        pytest.param("tiiuae/falcon-7b", 1, 8_192, 8_192, id="falcon7b-mqa"),
        # Falcon-40B (n_head_kv 8): 60 × 8 × 64 × 2 × 2 = 122,880
        pytest.param("tiiuae/falcon-40b", 1, 122_880, 122_880, id="falcon40b-n-head-kv"),
        # ChatGLM3 multi_query_group_num 2, kv_channels 128, fp16: 28 × 2 × 128 × 2 × 2 = 28,672
        pytest.param("THUDM/chatglm3-6b", 1, 28_672, 28_672, id="chatglm3-groups"),
        # gpt-oss-20b: 24 layers × 8 × 64 × 2 × 2 = 49,152 (every KV layer at one token)
        pytest.param("openai/gpt-oss-20b", 1, 49_152, 49_152, id="gpt-oss-20b-hybrid"),
    ],
)
def test_bytes_per_token(model_id: str, tp: int, expected_per_token: int, expected_per_gpu: int) -> None:
    result = kvplan.kv_cache(model_id, tp=tp, max_model_len=4096)
    assert result.bytes_per_token == expected_per_token
    assert result.bytes_per_token_per_gpu == expected_per_gpu


def test_llama2_70b_4k_sequence() -> None:
    # background notes: 2 × 80 × 8 × 128 × 4096 × 2 B = 1,342,177,280 B
    assert kvplan.kv_cache("llama-2-70b", max_model_len=4096).bytes_per_sequence == 1_342_177_280
