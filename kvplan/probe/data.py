"""Random but valid cache contents for every storage format (never zeros, never NaN scales).

Values land near unit size after dequantization: int8 × 1/64, int4 × 1/4, e2m1 × an e4m3 scale in
[0.25, 0.5], fp8 × a per-token-head scale near 1. Used by the probe's check, the tests and the
decode benchmark; tensors are drawn on the CPU from a seeded generator, then moved.
"""

from __future__ import annotations

import torch

_SCALE_SIZE = {torch.int8: 1 / 64, torch.uint8: 1 / 4}  # per data dtype of a group/per-token-head scale


def random_data(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, *, fp8: torch.dtype | None = None,
                device: torch.device | str = "cpu") -> torch.Tensor:
    """Floats ~ N(0, 1); fp8 as the bytes of real fp8 values when `fp8` names its view; ints over their range."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype).to(device)
    if fp8 is not None:
        return torch.randn(shape, generator=gen).to(fp8).view(torch.uint8).to(device)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, shape, generator=gen, dtype=dtype).to(device)


def random_scales(shape: tuple[int, ...], dtype: torch.dtype, quant: str, data_dtype: torch.dtype,
                  gen: torch.Generator, device: torch.device | str = "cpu") -> torch.Tensor:
    """Positive scales in the scale tensor's dtype: e4m3 bytes for nvfp4, fp16/fp32 otherwise."""
    unit = torch.rand(shape, generator=gen) + 1.0  # [1, 2)
    if quant == "nvfp4":
        return (unit / 4).to(torch.float8_e4m3fn).view(torch.uint8).to(device)
    size = _SCALE_SIZE.get(data_dtype, 1.0) if quant != "per_token_head" or data_dtype == torch.int8 else 0.75
    return (unit * size).to(dtype).to(device)


def random_cache(lead: tuple[int, ...], width: int, quant: str, gen: torch.Generator, *,
                 dtype: torch.dtype = torch.bfloat16, quant_group: int = 8,
                 device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor | None]:
    """(data, scales) of `width` values per row for quant none | group | nvfp4 | per_token_head.

    dtype: the float (or float8) dtype for none; int8 or uint8 (= int4) for group; int8 or uint8
    (= fp8 e4m3 bytes) for per_token_head; ignored for nvfp4.
    """
    if quant == "none":
        if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            return random_data((*lead, width), torch.uint8, gen, fp8=dtype, device=device).view(dtype), None
        return random_data((*lead, width), dtype, gen, device=device), None
    if quant == "nvfp4":
        data = random_data((*lead, width // 2), torch.uint8, gen, device=device)
        return data, random_scales((*lead, width // 16), torch.uint8, quant, torch.uint8, gen, device)
    if quant == "per_token_head":
        fp8 = torch.float8_e4m3fn if dtype == torch.uint8 else None
        data = random_data((*lead, width), dtype, gen, fp8=fp8, device=device)
        return data, random_scales((*lead, 1), torch.float32, quant, dtype, gen, device)
    stored = width if dtype == torch.int8 else width // 2
    data = random_data((*lead, stored), dtype, gen, device=device)
    return data, random_scales((*lead, width // quant_group), torch.float16, quant, dtype, gen, device)


def random_ds_mla(lead: tuple[int, ...], kv_lora_rank: int, rope_dim: int, gen: torch.Generator,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """fp8_ds_mla rows: fp8 NoPE bytes, one fp32 scale per 128 of them, bf16 rope, as uint8."""
    nope = random_data((*lead, kv_lora_rank), torch.uint8, gen, fp8=torch.float8_e4m3fn)
    scales = random_scales((*lead, kv_lora_rank // 128), torch.float32, "group", torch.float32, gen)
    rope = torch.randn((*lead, rope_dim), generator=gen).to(torch.bfloat16)
    rows = torch.cat([nope, scales.view(torch.uint8), rope.view(torch.uint8)], dim=-1)
    return rows.to(device)
