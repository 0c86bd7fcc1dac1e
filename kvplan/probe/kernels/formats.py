"""Host side of the storage formats: which ``FMT`` a cache is, and the typed views the kernels read.

``quant`` names follow ``KvDtype.scale``: ``none`` (float, or fp8 through its float8 view with an
optional per-tensor scale), ``group`` (int8, or int4 packed two per byte, with one fp16 scale per
``quant_group`` values), ``nvfp4`` (e2m1 packed two per byte with one e4m3 byte scale per 16
values), ``per_token_head`` (int8 or fp8 bytes with one fp32 scale per token and head). The MLA
kernel also reads ``ds_mla`` rows (512 fp8 + 4 fp32 scales + 64 bf16 per token) as three views.
The bit-level encodings are in ``kvplan.probe.kernels.tiles``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PLAIN, GROUP, INT4, NVFP4, TOKEN = 0, 1, 2, 3, 4
QUANTS = ("none", "group", "nvfp4", "per_token_head")
FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2)


@dataclass(frozen=True, slots=True)
class Paged:
    """One paged tensor as a kernel reads it: data (NB, BS, H, stored) and its scales (or data again)."""

    data: torch.Tensor
    scales: torch.Tensor
    fmt: int
    width: int  # values per head vector
    group: int  # values per scale (GROUP, INT4, NVFP4)

    def strides(self) -> tuple[int, ...]:
        """(data block, offset, head, scale block, offset, head) strides in elements."""
        return (*self.data.stride()[:3], *self.scales.stride()[:3])


def _fp8_view(t: torch.Tensor) -> torch.Tensor:
    """vLLM stores fp8 as uint8: read those bytes as e4m3."""
    return t.view(torch.float8_e4m3fn) if t.dtype == torch.uint8 else t


def paged(data: torch.Tensor, scales: torch.Tensor | None, quant: str, quant_group: int) -> Paged:
    """The kernel's view of one (NB, BS, H, stored) cache and its (NB, BS, H, n) scales."""
    if quant not in QUANTS:
        raise ValueError(f"unknown quant {quant!r}; choose one of {', '.join(QUANTS)}")
    if data.stride(-1) != 1 or (scales is not None and scales.stride(-1) != 1):
        raise ValueError("the last dimension of a cache and of its scales must be contiguous")
    if quant == "none":
        if data.dtype not in FLOATS:
            raise ValueError(f"a {data.dtype} cache needs its quant scheme (group, nvfp4, per_token_head)")
        return Paged(data, data, PLAIN, data.shape[-1], 1)
    if scales is None:
        raise ValueError(f"quant {quant!r} needs its scale tensor")
    if quant == "per_token_head":
        return Paged(_fp8_view(data), scales, TOKEN, data.shape[-1], data.shape[-1])
    if quant == "nvfp4":
        return Paged(data, scales.view(torch.float8_e4m3fn), NVFP4, 2 * data.shape[-1], 16)
    if quant_group <= 0:
        raise ValueError("quant 'group' needs quant_group > 0")
    if data.dtype == torch.int8:
        return Paged(data, scales, GROUP, data.shape[-1], quant_group)
    return Paged(data, scales, INT4, 2 * data.shape[-1], quant_group)


@dataclass(frozen=True, slots=True)
class Latent:
    """An MLA latent cache as the kernel reads it: the kv_lora_rank part and the rope part."""

    nope: Paged
    rope: Paged
    rope_col0: int  # the rope part's first value index in its own tensor's head vector
    rank: int  # kv_lora_rank: V's width
    rope_dim: int


def latent(cache: torch.Tensor, scales: torch.Tensor | None, quant: str, quant_group: int, kv_lora_rank: int,
           rope_dim: int) -> Latent:
    """(NB, BS, latent) pages, or the (NB, BS, 656-byte) rows of fp8_ds_mla, as nope + rope views."""
    if quant == "ds_mla":
        nope_bytes = kv_lora_rank + kv_lora_rank // 128 * 4
        if cache.dtype != torch.uint8 or cache.shape[-1] != nope_bytes + 2 * rope_dim:
            raise ValueError(f"fp8_ds_mla rows are {nope_bytes + 2 * rope_dim} bytes of uint8")
        rows = cache.unsqueeze(2)
        nope = Paged(rows[..., :kv_lora_rank].view(torch.float8_e4m3fn),
                     rows[..., kv_lora_rank:nope_bytes].view(torch.float32), GROUP, kv_lora_rank, 128)
        rope = rows[..., nope_bytes:].view(torch.bfloat16)
        return Latent(nope, Paged(rope, rope, PLAIN, rope_dim, 1), 0, kv_lora_rank, rope_dim)
    whole = paged(cache.unsqueeze(2), None if scales is None else scales.unsqueeze(2), quant, quant_group)
    if whole.width != kv_lora_rank + rope_dim:
        raise ValueError(f"the latent holds {whole.width} values, not {kv_lora_rank} + {rope_dim}")
    if whole.fmt == TOKEN:
        raise ValueError("per_token_head scales K/V heads; an MLA latent has none")
    return Latent(whole, whole, kv_lora_rank, kv_lora_rank, rope_dim)
