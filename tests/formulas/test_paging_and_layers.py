"""Paging, sliding windows, linear-state layers and the --attention / --layer-types overrides."""

from __future__ import annotations

import pytest

import kvplan
from kvplan.errors import InputError
from kvplan.formulas import kv_cache as formula_kv_cache  # takes an Overrides (the library takes its fields)
from kvplan.formulas.layers import Overrides, parse_layer_ranges

LLAMA8B_LAYER_TOKEN = 4096  # 8 heads × (128 + 128) × 2 B per layer per token


def test_paging_rounds_each_sequence_up_to_blocks() -> None:
    # 1,000 tokens in blocks of 16 -> 63 blocks = 1,008 tokens
    r = kvplan.kv_cache("meta-llama/Llama-3.1-8B", max_model_len=1000, block_size=16)
    assert r.bytes_per_sequence == 1000 * 131_072
    assert r.bytes_per_sequence_paged == 1008 * 131_072
    assert kvplan.kv_cache("meta-llama/Llama-3.1-8B", max_model_len=1000, block_size=0).bytes_per_sequence_paged == 1000 * 131_072


def test_sliding_layers_hold_at_most_the_window() -> None:
    # gpt-oss-20b: 12 full + 12 sliding (W=128) layers, 2,048 B per layer per token
    r = kvplan.kv_cache("openai/gpt-oss-20b", max_model_len=131_072)
    assert r.bytes_per_sequence == 12 * 2048 * 131_072 + 12 * 2048 * 128  # = 3,224,371,200
    short = kvplan.kv_cache("openai/gpt-oss-20b", max_model_len=100)
    assert short.bytes_per_sequence == 24 * 2048 * 100  # below the window every layer holds every token


def test_sliding_window_on_every_layer() -> None:
    # Mistral-7B-v0.1: all 32 layers slide over 4,096 tokens
    r = kvplan.kv_cache("mistralai/Mistral-7B-v0.1", max_model_len=32_768)
    assert r.bytes_per_sequence == 32 * LLAMA8B_LAYER_TOKEN * 4096


def test_linear_attention_state_is_fixed_per_sequence() -> None:
    # Qwen3-Next: 12 full layers (2 heads × (256 + 256) × 2 B = 2,048 B) + 36 gated-DeltaNet layers whose state is
    # conv (4 - 1) × (2 × 16 × 128 + 32 × 128) + recurrent 32 × 128 × 128 elements = 548,864 × 2 B = 1,097,728 B
    r1 = kvplan.kv_cache("Qwen/Qwen3-Next-80B-A3B-Thinking", max_model_len=1000)
    r2 = kvplan.kv_cache("Qwen/Qwen3-Next-80B-A3B-Thinking", max_model_len=2000)
    assert r1.bytes_per_token == 12 * 2048
    assert r1.bytes_per_sequence == 12 * 2048 * 1000 + 36 * 1_097_728
    assert r2.bytes_per_sequence - r1.bytes_per_sequence == 12 * 2048 * 1000
    assert r1.layout.attention == "hybrid"


@pytest.mark.parametrize(("attention", "kv_heads", "expected"), [
    pytest.param("mha", None, 524_288, id="mha"),  # 32 heads: 32 × 32 × 256 × 2
    pytest.param("mqa", None, 16_384, id="mqa"),  # 1 head
    pytest.param("gqa", 4, 65_536, id="gqa-4"),
])
def test_attention_override(attention: str, kv_heads: int | None, expected: int) -> None:
    ov = Overrides(attention=attention, kv_heads=kv_heads)
    r = formula_kv_cache("meta-llama/Llama-3.1-8B", max_model_len=1, overrides=ov)
    assert r.bytes_per_token == expected
    assert r.layout.attention == attention.upper()


def test_mla_decompressed_view() -> None:
    # engines.md §6: HF caches DeepSeek-V3 decompressed: 128 heads × (192 + 128) × 2 B × 61 = 4,997,120 B/token
    r = formula_kv_cache("deepseek-ai/DeepSeek-V3", max_model_len=1, overrides=Overrides(attention="mha"))
    assert r.bytes_per_token == 4_997_120


def test_layer_type_ranges() -> None:
    ranges = parse_layer_ranges("0-15:full,16-31:sliding", 32)
    ov = Overrides(layer_kinds=ranges, window=4096)
    r = formula_kv_cache("meta-llama/Llama-3.1-8B", max_model_len=8192, overrides=ov)
    assert r.bytes_per_sequence == 16 * LLAMA8B_LAYER_TOKEN * 8192 + 16 * LLAMA8B_LAYER_TOKEN * 4096
    assert r.layout.attention == "hybrid"
    # and back: Mistral's every-layer window switched off
    off = formula_kv_cache("mistralai/Mistral-7B-v0.1", max_model_len=8192, overrides=Overrides(
        layer_kinds=parse_layer_ranges("0-31:full", 32)))
    assert off.bytes_per_sequence == 32 * LLAMA8B_LAYER_TOKEN * 8192


@pytest.mark.parametrize("text", ["0-40:full", "a-b:full", "0-3:dense", "3", "5-2:full"])
def test_bad_layer_ranges(text: str) -> None:
    with pytest.raises(InputError):
        parse_layer_ranges(text, 32)


def test_mla_override_needs_a_latent() -> None:
    with pytest.raises(InputError):
        formula_kv_cache("meta-llama/Llama-3.1-8B", max_model_len=1, overrides=Overrides(attention="mla"))
    with pytest.raises(InputError):  # sliding needs a window Llama's config does not have
        kvplan.kv_cache("meta-llama/Llama-3.1-8B", max_model_len=1,
                        overrides=Overrides(layer_kinds=parse_layer_ranges("0-1:sliding", 32)))


def test_state_dtype_fp32_doubles_the_recurrent_state(size_json) -> None:
    # Qwen3-Next state in fp32: 548,864 elements × 4 B = 2,195,456 B per linear layer (vLLM mamba_ssm_cache_dtype=float32)
    out = size_json("Qwen/Qwen3-Next-80B-A3B-Thinking", "--seq-len", "1000", "--state-dtype", "fp32")
    linear = next(g for g in out["layer_groups"] if g["kind"] == "linear")
    assert linear["state_bytes_per_sequence"] == 36 * 2_195_456
    assert out["bytes_per_sequence"] == 12 * 2048 * 1000 + 36 * 2_195_456
