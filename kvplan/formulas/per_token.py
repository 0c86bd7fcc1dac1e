"""Bytes per token (attention layers) and per sequence (state layers), one layer at a time."""

from __future__ import annotations

from kvplan.dtypes import KvDtype, attention_bytes_per_token, mla_bytes_per_token
from kvplan.specs import AttnSpec, LayerSpec, LinearState, MLAAttn, NoKV


def kv_bytes_per_token(spec: LayerSpec, dtype: KvDtype) -> int:
    """Bytes one token adds to one layer: K + V heads, or the MLA latent; 0 for state layers."""
    match spec:
        case AttnSpec():
            return attention_bytes_per_token(spec.num_kv_heads, spec.head_dim, spec.v_head_dim, dtype)
        case MLAAttn():
            return mla_bytes_per_token(spec.kv_lora_rank, spec.qk_rope_head_dim, dtype)
        case LinearState() | NoKV():
            return 0
    raise TypeError(f"not a layer spec: {spec!r}")


def state_bytes_per_sequence(spec: LayerSpec, state_dtype: KvDtype) -> int:
    """Fixed bytes per sequence of a linear/Mamba layer: (conv + recurrent elements) × bytes."""
    if isinstance(spec, LinearState):
        return spec.state_elements * state_dtype.element_bits // 8
    return 0


def page_bytes(spec: LayerSpec, dtype: KvDtype, block_size: int) -> int:
    """One block of one layer: block_size × bytes per token."""
    return block_size * kv_bytes_per_token(spec, dtype)
