# mypy: allow-untyped-decorators
# (triton ships no type information; @triton.jit helpers take untyped tensor arguments)
"""@triton.jit helpers shared by the decode kernels: token rows through the block table, tiles of
every storage format dequantized into the dot's dtype, and the online-softmax step.

Storage formats (the constexpr ``FMT``; see ``kvplan.probe.kernels.formats`` for the host side):

- ``PLAIN`` (0): fp32/fp16/bf16, or fp8 read through its float8 view; a per-tensor scale is folded
  into the softmax scale (K) and the output (V) by the caller.
- ``GROUP`` (1): one scale per ``group`` values along the head vector: int8 × fp16 (int8 caches) or
  fp8 × fp32 (the fp8_ds_mla NoPE part); value = data × scale.
- ``INT4`` (2): signed 4-bit two's complement, two per byte (value ``2i`` in the low nibble, ``2i+1``
  in the high one), × one fp16 scale per ``group`` values.
- ``NVFP4`` (3): e2m1 (sign, 2 exponent bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6), packed as
  INT4, × one e4m3 (float8_e4m3fn) byte scale per 16 values.
- ``TOKEN`` (4): int8 or fp8 data with one fp32 scale per token and head; the scale multiplies the
  token's score (K) and probability (V), so the tile itself needs no multiply.
"""

from __future__ import annotations

import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]

LOG2E = 1.4426950408889634


@triton.jit
def token_rows(table_ptr, t_seq, seq, pos, end, BS: tl.constexpr):  # type: ignore[no-untyped-def]
    """(block id, offset in block, valid) of token positions `pos` of one sequence."""
    ok = pos < end
    blk = tl.load(table_ptr + seq * t_seq + pos // BS, mask=ok, other=0).to(tl.int64)
    return blk, pos % BS, ok


@triton.jit
def _e2m1(nib):  # type: ignore[no-untyped-def]
    """The value of a 4-bit e2m1 code: (2 + m) × 2^(e - 2), or m / 2 when e == 0, signed."""
    e = (nib >> 1) & 3
    m = (nib & 1).to(tl.float32)
    mag = tl.where(e == 0, m * 0.5, (2.0 + m) * (1 << e).to(tl.float32) * 0.25)
    return tl.where((nib & 8) != 0, -mag, mag)


@triton.jit
def load_tile(ptr, sptr, row, srow, col, ok, group, like,  # type: ignore[no-untyped-def]
              FMT: tl.constexpr):
    """A (tokens, columns) tile of head vectors, dequantized to `like`'s dtype.

    row/srow: (N,) element offsets of each token's head vector in the data/scale tensors;
    col: (D,) value indices along the vector; ok: (N, D) mask. Masked values read as 0.
    """
    if FMT == 0:
        x = tl.load(ptr + row[:, None] + col[None, :], mask=ok, other=0.0).to(like.dtype)
    elif FMT == 4:  # int8 or fp8: exact in fp32 and in the 16-bit dot types
        x = tl.load(ptr + row[:, None] + col[None, :], mask=ok, other=0.0).to(tl.float32).to(like.dtype)
    else:
        if FMT == 1:
            v = tl.load(ptr + row[:, None] + col[None, :], mask=ok, other=0.0).to(tl.float32)
            sg = col // group
        else:
            byte = tl.load(ptr + row[:, None] + col[None, :] // 2, mask=ok, other=0).to(tl.int32)
            nib = (byte >> ((col[None, :] % 2) * 4)) & 15
            if FMT == 2:
                v = (nib - ((nib & 8) << 1)).to(tl.float32)
                sg = col // group
            else:
                v = _e2m1(nib)
                sg = col // 16
        s = tl.load(sptr + srow[:, None] + sg[None, :], mask=ok, other=0.0).to(tl.float32)
        x = (v * s).to(like.dtype)
    return x


@triton.jit
def token_scale(sptr, srow, ok, FMT: tl.constexpr):  # type: ignore[no-untyped-def]
    """Per-token scales of a TOKEN-format tile, 1 for the other formats."""
    if FMT == 4:  # noqa: SIM108 (a constexpr branch: only one side is compiled)
        s = tl.load(sptr + srow, mask=ok, other=0.0).to(tl.float32)
    else:
        s = tl.full(srow.shape, 1.0, tl.float32)
    return s


@triton.jit
def softmax_step(s, ok, m_i, l_i, acc):  # type: ignore[no-untyped-def]
    """Online softmax over one tile of base-2 scores s (rows, tokens): new max, p, rescaled l and acc."""
    s = tl.where(ok[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no token yet: keep p = 0, no NaN
    p = tl.exp2(s - m_safe[:, None])
    alpha = tl.exp2(m_i - m_safe)
    return m_new, p, l_i * alpha + tl.sum(p, axis=1), acc * alpha[:, None]


@triton.jit
def dot(a, b, PREC: tl.constexpr):  # type: ignore[no-untyped-def]
    """a @ b with fp32 accumulation. PREC 0: native 16-bit operands; 1: fp32 operands, exact products;
    2: the interpreter, whose 16-bit dot is wrong: the same rounded operands, upcast to fp32."""
    if PREC == 0:
        r = tl.dot(a, b)
    elif PREC == 1:
        r = tl.dot(a, b, input_precision="ieee")
    else:
        r = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return r


@triton.jit
def store_rows(out_ptr, o_off, dv_idx, rows_ok, dv, acc, l_i, out_scale):  # type: ignore[no-untyped-def]
    """acc / l (× out_scale) into rows at o_off (rows,) + dv_idx; a row that saw no token stores 0."""
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None] * out_scale
    tl.store(out_ptr + o_off[:, None] + dv_idx[None, :], out, mask=rows_ok[:, None] & (dv_idx[None, :] < dv))


@triton.jit
def store_lse(lse_ptr, lse_off, rows_ok, m_i, l_i):  # type: ignore[no-untyped-def]
    """The base-2 log-sum-exp of each row's scores (-inf for a split that saw no token)."""
    lse = tl.where(l_i == 0.0, float("-inf"), m_i + tl.log2(tl.where(l_i == 0.0, 1.0, l_i)))
    tl.store(lse_ptr + lse_off, lse, mask=rows_ok)
