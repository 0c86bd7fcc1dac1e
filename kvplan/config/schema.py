"""The canonical fields of a config, validated: lenient about unknown keys, strict about the types
of the ones kvplan uses. ``hf.canonical_fields`` fills it through the alias table."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Layers = Annotated[int, Field(strict=True, gt=0, le=100_000)]
Dim = Annotated[int, Field(strict=True, gt=0, le=10_000_000)]
OptDim = Annotated[int, Field(strict=True, ge=0, le=10_000_000)] | None
OptTokens = Annotated[int, Field(strict=True, ge=0, le=2**40)] | None  # context lengths pass 10M (Llama-4-Scout)


class HFConfig(BaseModel):
    """Canonical fields of a config, after aliases are resolved. Unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model_type: str | None = None
    num_layers: Layers
    num_attention_heads: Dim
    hidden_size: Dim | None = None
    num_kv_heads: OptDim = None
    head_dim: OptDim = None
    v_head_dim: OptDim = None
    kv_lora_rank: OptDim = None
    qk_rope_head_dim: OptDim = None
    qk_nope_head_dim: OptDim = None
    sliding_window: OptDim = None
    sliding_window_pattern: OptDim | Annotated[str, Field(strict=True, max_length=100_000)] = None
    use_sliding_window: bool | None = None
    max_window_layers: OptDim = None
    attention_chunk_size: OptDim = None
    no_rope_layers: list[Annotated[int, Field(strict=True)]] | None = None
    full_attention_interval: OptDim = None
    attn_layer_period: OptDim = None
    attn_layer_offset: OptDim = None
    layer_types: list[str] | None = None
    linear_conv_kernel_dim: OptDim = None
    linear_num_key_heads: OptDim = None
    linear_num_value_heads: OptDim = None
    linear_key_head_dim: OptDim = None
    linear_value_head_dim: OptDim = None
    mamba_d_state: OptDim = None
    mamba_d_conv: OptDim = None
    mamba_expand: OptDim = None
    mamba_num_heads: OptDim = None
    mamba_head_dim: OptDim = None
    mamba_n_groups: OptDim = None
    hybrid_override_pattern: str | None = None
    layers_block_type: list[str] | None = None
    attn_type_list: list[Annotated[int, Field(strict=True, ge=0, le=1)]] | None = None
    full_attn_idxs: list[Annotated[int, Field(strict=True, ge=0)]] | None = None
    linear_attn_config: dict[str, Any] | None = None
    block_configs: list[dict[str, Any]] | None = None
    global_head_dim: OptDim = None
    num_global_kv_heads: OptDim = None
    attention_k_eq_v: bool | None = None
    num_kv_shared_layers: OptDim = None
    use_bidirectional_attention: bool | str | None = None
    index_topk: OptDim = None
    index_head_dim: OptDim = None
    index_topk_freq: OptDim = None
    index_topk_pattern: str | None = None
    index_skip_topk_offset: OptDim = None
    compress_ratios: list[Any] | None = None
    hybrid_layer_pattern: list[Any] | None = None
    cross_attention_layers: list[Any] | None = None
    vision_config: dict[str, Any] | None = None
    conv_l_cache: OptDim = None
    conv_dim: OptDim = None
    mamba_d_ssm: OptDim = None
    decoder_layers: OptDim = None
    decoder_attention_heads: OptDim = None
    max_source_positions: OptDim = None
    is_encoder_decoder: bool | None = None
    multi_query: bool | None = None
    new_decoder_architecture: bool | None = None
    multi_query_attention: bool | None = None
    dtype: str | None = None
    num_nextn_predict_layers: OptDim = None
    max_model_len: OptTokens = None
