"""Mamba-2 hybrids (Nemotron-H's hybrid_override_pattern, Granite-4-style layer_types): layer kinds and state."""

from __future__ import annotations

import pytest

import kvplan
from kvplan.config.hf import normalize

NEMOTRON_H = {
    "model_type": "nemotron_h", "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "hidden_size": 4096, "hybrid_override_pattern": "M-M*-M-M", "mamba_num_heads": 128,
    "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2,
    "torch_dtype": "bfloat16",
}
# Mamba-2 state per layer: conv (4 - 1) × (128 × 64 + 2 × 8 groups × 128) = 3 × 10,240 = 30,720 elements,
# recurrent 128 heads × 64 × 128 = 1,048,576 elements -> 1,079,296 × 2 B = 2,158,592 B per sequence.
MAMBA2_STATE_BYTES = 2_158_592


def test_nemotron_h_pattern() -> None:
    model = normalize(NEMOTRON_H, model_id="nemotron-h-like", source="test")
    assert model.layer_kinds == ("linear", "none", "linear", "full", "none", "linear", "none", "linear")
    r = kvplan.kv_cache(model, max_model_len=1000)
    # one attention layer: 8 heads × (128 + 128) × 2 B = 4,096 B per token; four Mamba-2 layers of fixed state
    assert r.bytes_per_token == 4096
    assert r.bytes_per_sequence == 4096 * 1000 + 4 * MAMBA2_STATE_BYTES
    assert r.layout.attention == "hybrid"
    # tp 2 halves the heads of both the attention layer and the state
    assert kvplan.kv_cache(model, max_model_len=1000, tp=2).bytes_per_sequence_per_gpu == 2048 * 1000 + 2 * MAMBA2_STATE_BYTES


def test_granite_style_layer_types() -> None:
    doc = {**{k: v for k, v in NEMOTRON_H.items() if k != "hybrid_override_pattern"},
           "num_hidden_layers": 4, "layer_types": ["mamba", "mamba", "mamba", "attention"]}
    model = normalize(doc, model_id="granite-like", source="test")
    assert model.layer_kinds == ("linear", "linear", "linear", "full")
    assert kvplan.kv_cache(model, max_model_len=10).bytes_per_sequence == 4096 * 10 + 3 * MAMBA2_STATE_BYTES


@pytest.mark.parametrize("pattern", ["M-M*", "M-M*-M-X"])
def test_bad_patterns_are_config_errors(pattern: str) -> None:
    with pytest.raises(kvplan.ConfigError, match="hybrid_override_pattern"):
        normalize({**NEMOTRON_H, "hybrid_override_pattern": pattern}, model_id="x", source="test")
