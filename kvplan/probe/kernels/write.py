# mypy: allow-untyped-decorators
"""``reshape_and_cache``: copy new tokens' rows into their slots (``slot = block × block_size + offset``).

One program copies ``TOKENS`` tokens (a few KB at least, so small rows do not mean tiny programs);
each token's row is its (heads, width) values, read and written as 16-byte vectors along the width.
When a token's heads are contiguous in both tensors (vLLM layout), the row is one flat vector.
"""

from __future__ import annotations

import torch
import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]

from kvplan.probe.kernels.plan import pow2

ELEMENTS_PER_PROGRAM = 8192  # 16 KB of bf16 read and 16 KB written per program


@triton.jit
def _write_kernel(src_ptr, slot_ptr, cache_ptr, num_tokens, num_heads, width,  # type: ignore[no-untyped-def]
                  s_tok, s_head, c_blk, c_off, c_head,
                  BS: tl.constexpr, TOKENS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    tok = tl.program_id(0) * TOKENS + tl.arange(0, TOKENS)
    slot = tl.load(slot_ptr + tok, mask=tok < num_tokens, other=-1)
    keep = slot >= 0  # negative slots are padding tokens: nothing to write
    slot = tl.where(keep, slot, 0)
    dst = (slot // BS) * c_blk + (slot % BS) * c_off
    h = tl.arange(0, BLOCK_H)[None, :, None]
    w = tl.arange(0, BLOCK_W)[None, None, :]
    mask = keep[:, None, None] & (h < num_heads) & (w < width)
    row = tl.load(src_ptr + tok.to(tl.int64)[:, None, None] * s_tok + h * s_head + w, mask=mask)
    tl.store(cache_ptr + dst[:, None, None] + h * c_head + w, row, mask=mask)


def _flat_rows(src: torch.Tensor, cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, H, W) and (NB, BS, H, W) as (T, 1, H·W) and (NB, BS, 1, H·W) when each token's heads are
    contiguous in both; unchanged otherwise."""
    heads, width = src.shape[1], src.shape[2]
    if heads > 1 and src.stride(1) == width and cache.stride(2) == width:
        return src.flatten(1).unsqueeze(1), cache.flatten(2).unsqueeze(2)
    return src, cache


def reshape_and_cache(src: torch.Tensor, slot_mapping: torch.Tensor, cache: torch.Tensor) -> None:
    """cache[slot // bs, slot % bs] = src[t] for every token t; src (T, H, W), cache (NB, BS, H, W)."""
    if src.stride(-1) != 1 or cache.stride(-1) != 1:
        raise ValueError(f"the last dimension must be contiguous, got strides {src.stride()} and {cache.stride()}")
    if src.dtype != cache.dtype or cache.shape[2:] != src.shape[1:]:
        raise ValueError(f"src {tuple(src.shape)} {src.dtype} does not fit cache {tuple(cache.shape)} {cache.dtype}")
    num_tokens, block_size = src.shape[0], cache.shape[1]
    if num_tokens == 0:
        return
    src, cache = _flat_rows(src, cache)
    block_h, block_w = pow2(src.shape[1]), pow2(src.shape[2])
    tokens = max(1, min(128, ELEMENTS_PER_PROGRAM // (block_h * block_w), pow2(num_tokens)))
    _write_kernel[(triton.cdiv(num_tokens, tokens),)](
        src, slot_mapping, cache, num_tokens, src.shape[1], src.shape[2], src.stride(0), src.stride(1),
        cache.stride(0), cache.stride(1), cache.stride(2),
        BS=block_size, TOKENS=tokens, BLOCK_H=block_h, BLOCK_W=block_w, num_warps=4 if tokens * block_h * block_w <= 4096 else 8)
