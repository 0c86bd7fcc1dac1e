"""Triton kernels that prove a paged cache is real and correctly addressed, at memory speed.

- ``reshape_and_cache``: copy the rows of new tokens (K, V, the MLA latent, or the bytes of a
  quantized cache and its scales) into their slots; ``slot = block_id × block_size + offset``.
- ``paged_decode``: one query token per sequence attends over its cached K/V heads (GQA/MQA: all
  query heads of a KV head in one program), read through the block table, in any storage format
  kvplan sizes (float, fp8, int8/int4 with group scales, nvfp4, per-token-head scales).
- ``paged_decode_mla``: the absorbed MLA decode over one latent per token (also fp8_ds_mla rows).

Both decodes split long sequences (flash-decoding) when batch × heads alone would leave SMs idle,
and choose tile sizes from the device's shared memory. A shape that no tile fits raises
``DoesNotFit`` (a ValueError), never a compiler traceback. Caches are 4-D views
``(num_blocks, block_size, heads, width)`` with arbitrary strides (vLLM and the ppl.nn layouts).
This package imports triton: import it only after ``TRITON_INTERPRET`` is set when running on CPU.
"""

from __future__ import annotations

import torch

from kvplan.probe.kernels import formats, plan
from kvplan.probe.kernels.combine import DoesNotFit
from kvplan.probe.kernels.decode import decode_gqa
from kvplan.probe.kernels.mla import decode_mla
from kvplan.probe.kernels.write import reshape_and_cache

__all__ = ["DoesNotFit", "paged_decode", "paged_decode_mla", "reshape_and_cache"]


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, scale: float, *, quant: str = "none", k_scales: torch.Tensor | None = None,
                 v_scales: torch.Tensor | None = None, quant_group: int = 0, k_scale: float = 1.0,
                 v_scale: float = 1.0, num_splits: int | None = None, tile: plan.Tile | None = None) -> torch.Tensor:
    """Attention of q (B, Hq, Dk) over cached K (NB, BS, Hkv, ·) / V (NB, BS, Hkv, ·) -> (B, Hq, Dv) fp32.

    quant: none | group | nvfp4 | per_token_head, with k_scales/v_scales (NB, BS, Hkv, ·) beside the
    data; k_scale/v_scale: per-tensor scales of an fp8 cache. num_splits/tile override the plan.
    """
    if q.stride(-1) != 1:
        raise ValueError(f"q's last dimension must be contiguous, got strides {q.stride()}")
    k = formats.paged(k_cache, k_scales, quant, quant_group)
    v = formats.paged(v_cache, v_scales, quant, quant_group)
    if q.shape[1] % k.data.shape[2]:
        raise ValueError(f"{q.shape[1]} query heads are not a multiple of {k.data.shape[2]} KV heads")
    if q.shape[2] != k.width:
        raise ValueError(f"q has {q.shape[2]} values per head, K has {k.width}")
    return decode_gqa(q, k, v, block_table, seq_lens, scale, k_scale, v_scale, num_splits, tile)


def paged_decode_mla(q_latent: torch.Tensor, latent_cache: torch.Tensor, kv_lora_rank: int,
                     block_table: torch.Tensor, seq_lens: torch.Tensor, scale: float, *, quant: str = "none",
                     latent_scales: torch.Tensor | None = None, quant_group: int = 0,
                     num_splits: int | None = None, tile: plan.Tile | None = None) -> torch.Tensor:
    """MLA (absorbed) decode: q (B, H, rank + rope) over latents (NB, BS, ·) -> (B, H, rank) fp32.

    K = the whole latent, V = its first kv_lora_rank values; quant: none | group | nvfp4 | ds_mla.
    """
    if q_latent.stride(-1) != 1:
        raise ValueError(f"q's last dimension must be contiguous, got strides {q_latent.stride()}")
    rope = q_latent.shape[-1] - kv_lora_rank
    lat = formats.latent(latent_cache, latent_scales, quant, quant_group, kv_lora_rank, rope)
    return decode_mla(q_latent, lat, block_table, seq_lens, scale, num_splits, tile)
