"""transformers' real KV cache as a peer: the bytes of the tensors it fills must be kvplan's prediction.

Each case takes a real bundled config, shrinks it (2–6 layers, a tiny hidden size and vocab) while
keeping what decides the cache shape (KV heads vs query heads, an explicit head_dim that is not
hidden/heads, the layer_types alternation, a small sliding window), writes it to
tmp_path/config.json, builds a random-weight model on CPU from that file, runs one forward over N
tokens with use_cache=True and sums the bytes of every K and V tensor in the returned cache. kvplan
reads the same file with `kvplan.load_model(path)` and predicts the bytes with
`kv_cache(..., max_model_len=N, batch=B, block_size=0)` in the dtype the model ran in.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read by huggingface_hub at import: set it first

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, FalconConfig, Gemma3ForCausalLM
from transformers.cache_utils import DynamicSlidingWindowLayer, LinearAttentionLayer

import kvplan
from kvplan.config import bundled_index
from kvplan.formulas import kv_cache as formula_kv_cache  # takes an Overrides (the library takes its fields)
from kvplan.formulas.layers import Overrides

BATCH = 2
VOCAB = 128
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# Not part of a random-weight model: the checkpoint's weight quantization and remote-code pointers.
DROPPED_KEYS = ("quantization_config", "auto_map", "_name_or_path")


def shrunk(model_id: str, **changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(bundled_index()[model_id].read_text())
    for key in DROPPED_KEYS:
        raw.pop(key, None)
    return {**raw, "vocab_size": VOCAB, **changes}


def write_config(folder: Path, fields: dict[str, Any]) -> Path:
    (folder / "config.json").write_text(json.dumps(fields, indent=2))
    return folder


def cache_after_forward(folder: Path, seq_len: int, dtype: torch.dtype, *, text_model: type | None = None) -> Any:
    """Random-weight model from folder/config.json, one forward of BATCH × seq_len tokens.

    text_model: the decoder-only class to build from a multimodal config's text_config (the cache
    is the language model's either way; the vision tower would only add weights).
    """
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    if text_model is not None:
        model = text_model(config.get_text_config(decoder=True)).to(dtype).eval()
    else:
        model = AutoModelForCausalLM.from_config(config).to(dtype).eval()
    input_ids = torch.randint(0, VOCAB, (BATCH, seq_len))
    with torch.no_grad():
        return model(input_ids=input_ids, use_cache=True).past_key_values


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes of the tensor's own elements.

    Not `untyped_storage().nbytes()`: after a prefill longer than the window, a sliding layer's K/V
    is a view (the last W−1 tokens) of the concatenated prefill, whose storage (N tokens) stays
    alive until the next update (transformers 5.23: 2,560 storage bytes for 896 viewed in the
    gpt-oss case at N=20). The cache holds W−1 tokens; the transient is prefill memory.
    """
    return t.numel() * t.element_size()


def layer_kv_bytes(layer: Any) -> int:
    return tensor_bytes(layer.keys) + tensor_bytes(layer.values)


def cache_bytes(cache: Any) -> int:
    return sum(layer_kv_bytes(layer) for layer in cache.layers)


def hf_expected_bytes(model: kvplan.ModelConfig, seq_len: int, kv_dtype: str,
                      overrides: Overrides | None = None) -> int:
    """kvplan's prediction, with transformers' sliding-window convention applied explicitly.

    kvplan (like vLLM, engines.md §1.5) counts min(N, W) tokens in a sliding layer. transformers'
    DynamicSlidingWindowLayer keeps only the last W−1 tokens after an update (engines.md §4; the
    token being decoded next brings the window back to W), so each sliding layer holds
    min(N, W−1) tokens. The difference is B × sliding layers × bytes per token per layer ×
    (min(N, W) − min(N, W−1)): one token per sliding layer once N ≥ W, nothing below.
    """
    result = formula_kv_cache(model, max_model_len=seq_len, batch=BATCH, block_size=0, kv_dtype=kv_dtype,
                              overrides=overrides)
    surplus_bytes = 0
    for group in result.layout.groups:
        window = group.token_limit
        if window:  # sliding / chunked layers
            surplus_tokens = min(seq_len, window) - min(seq_len, window - 1)
            surplus_bytes += BATCH * group.num_layers * group.bytes_per_token_per_layer * surplus_tokens
    return result.total_bytes - surplus_bytes


def assert_cache_matches(folder: Path, seq_len: int, overrides: Overrides | None = None, *,
                         text_model: type | None = None) -> Any:
    model = kvplan.load_model(str(folder))
    cache = cache_after_forward(folder, seq_len, TORCH_DTYPES[model.dtype], text_model=text_model)
    for layer in cache.layers:
        assert layer.keys.dtype == TORCH_DTYPES[model.dtype]
    assert cache_bytes(cache) == hf_expected_bytes(model, seq_len, model.dtype, overrides)
    return cache


# --------------------------------------------------------------------------- the four families


def test_llama_gqa(tmp_path: Path) -> None:
    # Llama-3.1-8B keeps 32 query heads on 8 KV heads (4:1), no head_dim field (hidden/heads = 128).
    # Shrunk: 8 heads on 2 KV heads, hidden 64 -> head_dim 8; bf16 as the checkpoint.
    fields = shrunk("meta-llama/Llama-3.1-8B", num_hidden_layers=3, hidden_size=64, intermediate_size=128,
                    num_attention_heads=8, num_key_value_heads=2)
    folder = write_config(tmp_path, fields)
    cache = assert_cache_matches(folder, seq_len=11)
    # 3 layers × 2 (K,V) × B 2 × 2 KV heads × 11 tokens × 8 × 2 B = 4,224: kvplan agrees by hand too
    assert cache_bytes(cache) == 3 * 2 * BATCH * 2 * 11 * 8 * 2 == 4_224


def test_falcon_mqa_in_library_form(tmp_path: Path) -> None:
    # falcon-7b (RefinedWebModel: 71 heads, multi_query) in the in-library FalconConfig form, as
    # save_pretrained writes it. That file carries num_kv_heads = num_attention_heads (the config
    # class's default): the MQA flag must win, as FalconAttention does (1 KV head).
    raw = json.loads(bundled_index()["tiiuae/falcon-7b"].read_text())
    assert raw["multi_query"] is True and raw["model_type"] == "RefinedWebModel"
    config = FalconConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=64, vocab_size=VOCAB,
                          multi_query=raw["multi_query"], new_decoder_architecture=False,
                          parallel_attn=raw["parallel_attn"], bias=raw["bias"], alibi=raw["alibi"])
    config.save_pretrained(tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["num_kv_heads"] == 4 and written["multi_query"] is True  # the trap is in the file
    written["torch_dtype"] = raw["torch_dtype"]  # bf16, as the checkpoint
    folder = write_config(tmp_path, written)
    cache = assert_cache_matches(folder, seq_len=9)
    assert cache.layers[0].keys.shape == (BATCH, 1, 9, 16)  # 1 KV head of 64 / 4 = 16


def test_qwen3_explicit_head_dim(tmp_path: Path) -> None:
    # Qwen3-8B: head_dim 128 given explicitly (hidden 4096 / 32 heads also 128; Qwen3-32B is where
    # they differ). Shrunk so that they differ: hidden 64 / 8 heads = 8, explicit head_dim 32.
    fields = shrunk("Qwen/Qwen3-8B", num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                    num_attention_heads=8, num_key_value_heads=2, head_dim=32, max_window_layers=2)
    folder = write_config(tmp_path, fields)
    cache = assert_cache_matches(folder, seq_len=7)
    assert cache.layers[0].keys.shape[-1] == 32
    # hidden // heads would predict a quarter of it: 2 × 2 × B 2 × 2 heads × 7 × 8 × 2 B
    assert cache_bytes(cache) != 2 * 2 * BATCH * 2 * 7 * (64 // 8) * 2


GPT_OSS_WINDOW = 8


@pytest.mark.parametrize("seq_len", [pytest.param(20, id="n20-past-window"),
                                     pytest.param(GPT_OSS_WINDOW, id="n8-at-window"),
                                     pytest.param(5, id="n5-inside-window")])
def test_gpt_oss_sliding_full_hybrid(tmp_path: Path, seq_len: int) -> None:
    # gpt-oss-20b: layer_types alternate sliding/full (W=128), 64 heads on 8 KV heads, head_dim 64
    # (≠ 2880/64 = 45), MoE. Shrunk: 4 layers of the real alternation, W=8, 16 heads on 2 KV heads
    # (8:1), head_dim 16 (≠ 64/16), 4 experts top-2. The checkpoint's mxfp4 quantization is dropped.
    real = shrunk("openai/gpt-oss-20b")
    fields = {**real, "num_hidden_layers": 4, "layer_types": real["layer_types"][:4],
              "sliding_window": GPT_OSS_WINDOW, "hidden_size": 64, "intermediate_size": 32, "head_dim": 16,
              "num_attention_heads": 16, "num_key_value_heads": 2, "num_local_experts": 4,
              "num_experts_per_tok": 2, "experts_per_token": 2, "pad_token_id": 0, "eos_token_id": 1}
    assert fields["layer_types"] == ["sliding_attention", "full_attention"] * 2
    folder = write_config(tmp_path, fields)
    cache = assert_cache_matches(folder, seq_len=seq_len)
    sliding = [layer for layer in cache.layers if isinstance(layer, DynamicSlidingWindowLayer)]
    assert len(sliding) == 2
    assert {layer.keys.shape[2] for layer in sliding} == {min(seq_len, GPT_OSS_WINDOW - 1)}


def test_deepseek_v3_mla_latent(tmp_path: Path) -> None:
    # transformers 5.x caches DeepSeek's MLA latent, not per-head K/V: DeepseekV3Attention.forward
    # calls `past_key_values.update(kv_nope, k_rot)` with the normed kv_lora_rank latent as "keys"
    # and the rotated rope part as "values", one head each, and expands them after the update.
    # That is the latent engines store, so kvplan's default MLA prediction applies as is.
    # (engines.md §4 describes older transformers, which cached the decompressed per-head
    # K = nope + rope and V: what kvplan gives with Overrides(attention="mha").)
    # Shrunk: 2 layers (layer 0 dense, layer 1 MoE), 4 heads, kv_lora_rank 32, rope 8, nope 16, v 24.
    fields = shrunk("deepseek-ai/DeepSeek-V3", num_hidden_layers=2, hidden_size=64, intermediate_size=64,
                    moe_intermediate_size=16, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=16,
                    kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=24,
                    n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1)
    folder = write_config(tmp_path, fields)
    cache = assert_cache_matches(folder, seq_len=6)
    assert cache.layers[0].keys.shape == (BATCH, 1, 6, 32)  # the kv_lora_rank latent
    assert cache.layers[0].values.shape == (BATCH, 1, 6, 8)  # the shared rope key
    # 2 layers × (32 + 8) × 6 tokens × B 2 × 2 B = 1,920; the decompressed view would be
    # 2 × 4 heads × ((16 + 8) + 24) × 6 × 2 × 2 = 9,216
    assert cache_bytes(cache) == 2 * (32 + 8) * 6 * BATCH * 2 == 1_920
    decompressed = hf_expected_bytes(kvplan.load_model(str(folder)), 6, "bf16", Overrides(attention="mha"))
    assert decompressed == 2 * 4 * (16 + 8 + 24) * 6 * BATCH * 2 == 9_216


# --------------------------------------------------------------------------- beyond the four


def test_mistral_every_layer_sliding(tmp_path: Path) -> None:
    # Mistral-7B-v0.1: sliding_window 4096 and no layer_types, so every layer slides (the rule
    # DynamicCache applies without layer_types, and vLLM's). Shrunk: 2 layers, W=8, N=12 > W.
    fields = shrunk("mistralai/Mistral-7B-v0.1", num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                    num_attention_heads=8, num_key_value_heads=2, sliding_window=8)
    folder = write_config(tmp_path, fields)
    cache = assert_cache_matches(folder, seq_len=12)
    assert all(isinstance(layer, DynamicSlidingWindowLayer) for layer in cache.layers)
    # HF: 2 layers × 2 (K,V) × B 2 × 2 heads × 7 tokens (W−1) × 8 × 2 B = 1,792; kvplan counts W=8 tokens
    assert cache_bytes(cache) == 2 * 2 * BATCH * 2 * 7 * 8 * 2 == 1_792
    kvplan_bytes = kvplan.kv_cache(kvplan.load_model(str(folder)), max_model_len=12, batch=BATCH, block_size=0).total_bytes
    assert kvplan_bytes == 2 * 2 * BATCH * 2 * 8 * 8 * 2


def test_gemma3_nested_text_config_pattern(tmp_path: Path) -> None:
    # gemma-3-27b-it nests the language model in text_config and omits sliding_window_pattern
    # (default 6: layer 5 of 0..5 is full, the rest slide). Shrunk text_config: 6 layers, W=8,
    # 4 heads on 2 KV heads (real 32:16), head_dim 32 (≠ 64/4). The wrapper file is what both read;
    # HF runs the text model it describes.
    real = shrunk("google/gemma-3-27b-it")
    text = {**real["text_config"], "num_hidden_layers": 6, "hidden_size": 64, "intermediate_size": 64,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "sliding_window": 8,
            "query_pre_attn_scalar": 32, "vocab_size": VOCAB}
    folder = write_config(tmp_path, {**real, "text_config": text, "vision_config": {}})
    cache = assert_cache_matches(folder, seq_len=12, text_model=Gemma3ForCausalLM)
    kinds = ["sliding" if isinstance(layer, DynamicSlidingWindowLayer) else "full" for layer in cache.layers]
    assert kinds == ["sliding"] * 5 + ["full"]


def test_qwen3_next_linear_state(tmp_path: Path) -> None:
    # Qwen3-Next: full_attention_interval 4 -> layers 0-2 gated DeltaNet, layer 3 full attention.
    # Shrunk: 4 layers, 4 heads on 2 KV heads, head_dim 16; linear 2 key heads × 8, 4 value heads × 8,
    # conv kernel 4; 4 experts top-2.
    fields = shrunk("Qwen/Qwen3-Next-80B-A3B-Thinking", num_hidden_layers=4, hidden_size=64, intermediate_size=64,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, linear_num_key_heads=2,
                    linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, num_experts=4,
                    num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16)
    folder = write_config(tmp_path, fields)
    model = kvplan.load_model(str(folder))
    seq_len = 10
    cache = cache_after_forward(folder, seq_len, torch.bfloat16)
    linear = [layer for layer in cache.layers if isinstance(layer, LinearAttentionLayer)]
    assert len(linear) == 3 and model.layer_kinds == ("linear",) * 3 + ("full",)
    # attention: kvplan's KV bytes are HF's K/V bytes (1 layer × 2 × B 2 × 2 heads × 10 × 16 × 2 B)
    kv_bytes = sum(layer_kv_bytes(layer) for layer in cache.layers if not isinstance(layer, LinearAttentionLayer))
    result = kvplan.kv_cache(model, max_model_len=seq_len, batch=BATCH, block_size=0)
    state = next(g for g in result.layout.groups if g.spec.kind == "linear")
    assert kv_bytes == result.total_bytes - BATCH * 3 * state.state_bytes_per_layer == 2 * BATCH * 2 * 10 * 16 * 2
    # state: the same dims, stored differently. conv channels = 2 × 2 × 8 (q, k) + 4 × 8 (v) = 64;
    # recurrent (4 value heads, 8, 8). HF keeps the whole conv kernel (4 columns) and its recurrent
    # state in fp32. vLLM, which kvplan follows, keeps kernel − 1 = 3 conv columns (engines.md §1.9)
    # and both states in the model dtype under its default mamba_ssm_cache_dtype="auto"
    # (vllm mamba_utils.py: gated_delta_net_state_dtype -> (conv dtype, conv dtype) for "auto").
    conv, recurrent = linear[0].conv_states[0], linear[0].recurrent_states[0]
    assert conv.shape == (BATCH, 64, 4) and conv.dtype == torch.bfloat16
    assert recurrent.shape == (BATCH, 4, 8, 8) and recurrent.dtype == torch.float32
    assert state.state_bytes_per_layer == ((4 - 1) * 64 + 4 * 8 * 8) * 2 == 896
    hf_state_bytes = sum(tensor_bytes(layer.conv_states[0]) + tensor_bytes(layer.recurrent_states[0])
                         for layer in linear)
    assert hf_state_bytes == BATCH * 3 * (4 * 64 * 2 + 4 * 8 * 8 * 4)
