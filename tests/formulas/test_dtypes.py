"""KV dtypes and the bytes their scales add, on Llama-3.1-8B (32 layers, 8 KV heads, head_dim 128)."""

from __future__ import annotations

import pytest

import kvplan
from kvplan.errors import InputError


@pytest.mark.parametrize(("kv_dtype", "quant_group", "expected"), [
    # 32 layers × 8 heads × (128 + 128) elements = 65,536 elements per token
    pytest.param("auto", 8, 131_072, id="auto-is-bf16"),  # × 2 B
    pytest.param("fp32", 8, 262_144, id="fp32"),
    pytest.param("fp8", 8, 65_536, id="fp8-half-of-bf16"),
    pytest.param("fp8_e5m2", 8, 65_536, id="fp8-e5m2"),
    pytest.param("int8", 8, 81_920, id="int8-g8"),  # 1 B + one 2 B fp16 scale per 8 elements = 1.25 B/element
    pytest.param("int8", 128, 66_560, id="int8-g128"),  # 65,536 + 65,536 / 128 × 2
    pytest.param("int4", 32, 36_864, id="int4-g32"),  # 0.5 B + 2 B / 32 = 0.5625 B/element
    pytest.param("fp8_per_token_head", 8, 67_584, id="fp8-per-token-head"),  # + 32 × 2 (K,V) × 8 heads × 4 B
    pytest.param("int8_per_token_head", 8, 67_584, id="int8-per-token-head"),
    pytest.param("nvfp4", 8, 36_864, id="nvfp4"),  # 0.5 B + 1 B / 16 = 0.5625 B/element
])
def test_scale_bytes_are_counted(kv_dtype: str, quant_group: int, expected: int) -> None:
    r = kvplan.kv_cache("meta-llama/Llama-3.1-8B", kv_dtype=kv_dtype, quant_group=quant_group, max_model_len=1)
    assert r.bytes_per_token == expected


@pytest.mark.parametrize(("kv_dtype", "expected"), [
    pytest.param("auto", 70_272, id="bf16"),  # 61 × 576 × 2
    pytest.param("fp8", 35_136, id="fp8"),  # 61 × 576 × 1
    pytest.param("fp8_ds_mla", 40_016, id="fp8-ds-mla"),  # 61 × (512 + 512/128 × 4 + 64 × 2) = 61 × 656
])
def test_mla_dtypes(kv_dtype: str, expected: int) -> None:
    assert kvplan.kv_cache("deepseek-ai/DeepSeek-V3", kv_dtype=kv_dtype, max_model_len=1).bytes_per_token == expected


def test_auto_follows_the_checkpoint_dtype() -> None:
    # Llama-2 checkpoints are float16; gpt-oss has no torch_dtype and runs in bf16
    assert kvplan.kv_cache("meta-llama/Llama-2-7b-hf", max_model_len=1).layout.kv_dtype.name == "fp16"
    assert kvplan.kv_cache("openai/gpt-oss-20b", max_model_len=1).layout.kv_dtype.name == "bf16"


@pytest.mark.parametrize(("model_id", "kv_dtype", "quant_group"), [
    pytest.param("meta-llama/Llama-3.1-8B", "fp4", 8, id="unknown-dtype"),
    pytest.param("meta-llama/Llama-3.1-8B", "fp8_ds_mla", 8, id="ds-mla-on-gqa"),
    pytest.param("deepseek-ai/DeepSeek-V3", "fp8_per_token_head", 8, id="per-head-scales-on-mla"),
    pytest.param("meta-llama/Llama-3.1-8B", "int8", 48, id="group-not-dividing-head-dim"),
    pytest.param("meta-llama/Llama-3.1-8B", "int8", 0, id="zero-group"),
])
def test_bad_dtypes(model_id: str, kv_dtype: str, quant_group: int) -> None:
    with pytest.raises(InputError):
        kvplan.kv_cache(model_id, kv_dtype=kv_dtype, quant_group=quant_group, max_model_len=1)
