"""One layer's paged cache as the decode kernels take it: data, scales and the storage scheme.

``pages_of`` turns the tensors ``allocate`` made for a group (any KV dtype, any layout) into a
``Pages``; ``Pages.decode`` runs the kernel (or the torch reference: both take the same arguments)
and ``Pages.token_bytes`` counts the bytes one token's pages hold, scales included, which is what a
decode reads per token (K/V once per KV head, the MLA latent once).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import torch

from kvplan.formulas import KvDtype
from kvplan.probe.allocate import FP8_VIEWS, CacheShape, Tensors, kv_views
from kvplan.specs import MLAAttn

NEEDS_FP8 = ("ds_mla", "nvfp4")  # schemes whose kernels read float8 values (nvfp4: its e4m3 scales)


@dataclass(frozen=True, slots=True)
class Pages:
    k: torch.Tensor  # (NB, BS, Hkv, ·) K, or the (NB, BS, ·) MLA latent
    v: torch.Tensor | None = None  # None for MLA
    quant: str = "none"  # none | group | nvfp4 | per_token_head | ds_mla
    k_scales: torch.Tensor | None = None
    v_scales: torch.Tensor | None = None
    quant_group: int = 0
    mla_rank: int | None = None
    q_width: int = 0  # values per query head (K's width; the latent's for MLA)

    @property
    def block_size(self) -> int:
        return int(self.k.shape[1])

    @property
    def num_blocks(self) -> int:
        return int(self.k.shape[0])

    def token_bytes(self) -> int:
        """Bytes of one token's pages: K and V (every KV head) or the latent, scales included."""
        parts = [t for t in (self.k, self.v, self.k_scales, self.v_scales) if t is not None]
        return sum(t[0, 0].numel() * t.element_size() for t in parts)

    def decode(self, ops: ModuleType, q: torch.Tensor, table: torch.Tensor, lens: torch.Tensor,
               scale: float) -> torch.Tensor:
        if self.mla_rank is not None:
            return ops.paged_decode_mla(q, self.k, self.mla_rank, table, lens, scale, quant=self.quant,  # type: ignore[no-any-return]
                                        latent_scales=self.k_scales, quant_group=self.quant_group)
        return ops.paged_decode(q, self.k, self.v, table, lens, scale, quant=self.quant,  # type: ignore[no-any-return]
                                k_scales=self.k_scales, v_scales=self.v_scales, quant_group=self.quant_group)

    def reads_fp8(self) -> bool:
        """Whether decoding reads float8 values (Triton: compute capability 8.9+ on NVIDIA GPUs)."""
        data = (self.k.dtype, self.v.dtype if self.v is not None else self.k.dtype)
        return self.quant in NEEDS_FP8 or any(d in (torch.float8_e4m3fn, torch.float8_e5m2) for d in data) or \
            (self.quant == "per_token_head" and self.k.dtype == torch.uint8)


def _float_view(t: torch.Tensor, dtype: KvDtype) -> torch.Tensor:
    fp8 = FP8_VIEWS.get(dtype.name)
    return t.view(fp8) if fp8 is not None and dtype.scale == "none" else t


def pages_of(shape: CacheShape, tensors: Tensors, layer: int) -> Pages:
    """The decode inputs of one layer of a group (MLA latent or K/V heads), in its KV dtype's scheme."""
    dtype, spec = shape.kv_dtype, shape.spec
    quant, group = dtype.scale, dtype.quant_group
    if isinstance(spec, MLAAttn):
        latent = _float_view(tensors["latent"], dtype)
        return Pages(latent, None, quant, tensors.get("latent_scale"), None, group, spec.kv_lora_rank,
                     spec.latent_dim)
    k, v = kv_views(tensors, shape.layout, layer, shape.block_size)
    ks = vs = None
    if dtype.scale != "none":
        ks, vs = kv_views(tensors, shape.layout, layer, shape.block_size, "_scale")
    width = k.shape[-1] * (2 if dtype.element_bits == 4 else 1)
    return Pages(_float_view(k, dtype), _float_view(v, dtype), quant, ks, vs, group, None, width)
