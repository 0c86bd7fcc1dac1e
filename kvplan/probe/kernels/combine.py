# mypy: allow-untyped-decorators
"""Split-KV (flash-decoding) merge, and launching the first tile that the device accepts.

Split s of a row wrote out_s = Σ p v / Σ p and lse_s = log2 Σ 2^score (-inf when it saw no token);
the row's output is Σ_s 2^(lse_s − max) out_s / Σ_s 2^(lse_s − max).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]
from triton.runtime.errors import OutOfResources  # type: ignore[import-untyped, unused-ignore]

T = TypeVar("T")


class DoesNotFit(ValueError):
    """No tile of a kernel fits this device (shared memory or registers): the shape is skipped."""


_REFUSED: set[object] = set()  # (key, tile) pairs a device refused: not tried again


def launch_first_fitting(launch: Callable[[T], None], tiles: Sequence[T], key: object) -> T:
    """Launch with the first tile the device accepts (remembered per key); DoesNotFit when none does."""
    errors = []
    for tile in tiles:
        if (key, tile) in _REFUSED:
            continue
        try:
            launch(tile)
        except OutOfResources as exc:
            _REFUSED.add((key, tile))
            errors.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            continue
        return tile
    raise DoesNotFit(f"no tile fits this device ({'; '.join(errors) or 'all refused before'})")


@triton.jit
def _combine_kernel(part_ptr, lse_ptr, out_ptr, dv, p_seq, p_head, p_split,  # type: ignore[no-untyped-def]
                    l_seq, l_head, o_seq, o_head,
                    SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_DV: tl.constexpr):
    seq, head = tl.program_id(0), tl.program_id(1)
    s_idx = tl.arange(0, BLOCK_S)
    d_idx = tl.program_id(2) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    lse = tl.load(lse_ptr + seq * l_seq + head * l_head + s_idx, mask=s_idx < SPLITS, other=float("-inf"))
    top = tl.max(lse, axis=0)
    w = tl.exp2(lse - tl.where(top == float("-inf"), 0.0, top))
    ok = (s_idx[:, None] < SPLITS) & (d_idx[None, :] < dv)
    parts = tl.load(part_ptr + seq * p_seq + head * p_head + s_idx[:, None] * p_split + d_idx[None, :],
                    mask=ok, other=0.0)
    total = tl.sum(w, axis=0)
    out = tl.sum(parts * w[:, None], axis=0) / tl.where(total == 0.0, 1.0, total)
    tl.store(out_ptr + seq * o_seq + head * o_head + d_idx, out, mask=d_idx < dv)


def combine(part: torch.Tensor, lse: torch.Tensor, out: torch.Tensor) -> None:
    """out (B, H, Dv) from the splits' part (B, H, S, Dv) and lse (B, H, S)."""
    batch, heads, splits, dv = part.shape
    block_s = triton.next_power_of_2(splits)
    block_dv = min(triton.next_power_of_2(dv), max(16, 4096 // block_s))
    grid = (batch, heads, triton.cdiv(dv, block_dv))
    _combine_kernel[grid](part, lse, out, dv, part.stride(0), part.stride(1), part.stride(2),
                          lse.stride(0), lse.stride(1), out.stride(0), out.stride(1),
                          SPLITS=splits, BLOCK_S=block_s, BLOCK_DV=block_dv, num_warps=4)
