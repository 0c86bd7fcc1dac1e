# mypy: allow-untyped-decorators
"""MLA absorbed decode: every query head attends over one shared latent per token.

K = [c, r] (the kv_lora_rank part c and the rope part r), V = c: one tile of c serves both dots, so
the latent is read once per program. Scores are two dots, q_c·c (rank wide) + q_r·r (rope wide), so
the rope part may live in another tensor (fp8_ds_mla keeps it in bf16 beside fp8 c and its fp32
scales). Programs tile the heads (``tile.rows`` per program: 128 heads over 576-wide rows never
need one program's shared memory to hold them all) and split the tokens like ``decode``.
"""

from __future__ import annotations

import torch
import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]

from kvplan.probe.kernels import formats, plan
from kvplan.probe.kernels.combine import combine, launch_first_fitting
from kvplan.probe.kernels.decode import INTERPRETED, fp16_dots, outputs, precision
from kvplan.probe.kernels.formats import Latent
from kvplan.probe.kernels.tiles import LOG2E, dot, load_tile, softmax_step, store_lse, store_rows, token_rows


@triton.jit
def _latent_tile(qc, qr, m_i, l_i, acc, pos, end, seq, table_ptr, t_seq,  # type: ignore[no-untyped-def]
                 c_ptr, cs_ptr, c_blk, c_off, cs_blk, cs_off, r_ptr, rs_ptr, r_blk, r_off, rs_blk, rs_off,
                 c_idx, r_idx, rank, rope, rope_col0, c_group, r_group, qk_scale,
                 BS: tl.constexpr, FMT_C: tl.constexpr, FMT_R: tl.constexpr, PREC: tl.constexpr):
    blk, off, ok = token_rows(table_ptr, t_seq, seq, pos, end, BS)
    c = load_tile(c_ptr, cs_ptr, blk * c_blk + off * c_off, blk * cs_blk + off * cs_off, c_idx,
                  ok[:, None] & (c_idx[None, :] < rank), c_group, qc, FMT_C)
    r = load_tile(r_ptr, rs_ptr, blk * r_blk + off * r_off, blk * rs_blk + off * rs_off, rope_col0 + r_idx,
                  ok[:, None] & (r_idx[None, :] < rope), r_group, qr, FMT_R)
    s = (dot(qc, tl.trans(c), PREC) + dot(qr, tl.trans(r), PREC)) * qk_scale
    m_i, p, l_i, acc = softmax_step(s, ok, m_i, l_i, acc)
    acc += dot(p.to(c.dtype), c, PREC)
    return m_i, l_i, acc


@triton.jit
def _mla_kernel(q_ptr, c_ptr, cs_ptr, r_ptr, rs_ptr, table_ptr, lens_ptr, out_ptr, lse_ptr,  # type: ignore[no-untyped-def]
                qk_scale, num_heads, rank, rope, rope_col0, c_group, r_group, split_tokens,
                q_seq, q_head, c_blk, c_off, cs_blk, cs_off, r_blk, r_off, rs_blk, rs_off,
                t_seq, o_seq, o_head, o_split, l_seq, l_head,
                BS: tl.constexpr, ROWS: tl.constexpr, TOKENS: tl.constexpr, BLOCK_C: tl.constexpr,
                BLOCK_R: tl.constexpr, FMT_C: tl.constexpr, FMT_R: tl.constexpr, F16: tl.constexpr,
                SPLIT: tl.constexpr, PREC: tl.constexpr, COMPILED: tl.constexpr):
    seq, split = tl.program_id(0), tl.program_id(2)
    head = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    rows_ok = head < num_heads
    c_idx, r_idx = tl.arange(0, BLOCK_C), tl.arange(0, BLOCK_R)
    start = split * split_tokens
    end = tl.minimum(tl.load(lens_ptr + seq), start + split_tokens)
    q_rows = q_ptr + seq * q_seq + head[:, None] * q_head
    qc = tl.load(q_rows + c_idx[None, :], mask=rows_ok[:, None] & (c_idx[None, :] < rank), other=0.0)
    qr = tl.load(q_rows + rank + r_idx[None, :], mask=rows_ok[:, None] & (r_idx[None, :] < rope), other=0.0)
    qc, qr = (qc.to(tl.float16), qr.to(tl.float16)) if F16 else (qc, qr)
    m_i, l_i = tl.full([ROWS], float("-inf"), tl.float32), tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, BLOCK_C], tl.float32)
    if COMPILED:  # compiled: a for loop, which triton software-pipelines
        for t in range(start, end, TOKENS):
            m_i, l_i, acc = _latent_tile(qc, qr, m_i, l_i, acc, t + tl.arange(0, TOKENS), end, seq, table_ptr,
                                         t_seq, c_ptr, cs_ptr, c_blk, c_off, cs_blk, cs_off, r_ptr, rs_ptr, r_blk,
                                         r_off, rs_blk, rs_off, c_idx, r_idx, rank, rope, rope_col0, c_group,
                                         r_group, qk_scale, BS, FMT_C, FMT_R, PREC)
    else:  # interpreted: a loaded bound cannot be a Python range bound in older interpreters
        t = start
        while t < end:
            m_i, l_i, acc = _latent_tile(qc, qr, m_i, l_i, acc, t + tl.arange(0, TOKENS), end, seq, table_ptr,
                                         t_seq, c_ptr, cs_ptr, c_blk, c_off, cs_blk, cs_off, r_ptr, rs_ptr, r_blk,
                                         r_off, rs_blk, rs_off, c_idx, r_idx, rank, rope, rope_col0, c_group,
                                         r_group, qk_scale, BS, FMT_C, FMT_R, PREC)
            t += TOKENS
    store_rows(out_ptr, seq * o_seq + head * o_head + split * o_split, c_idx, rows_ok, rank, acc, l_i, 1.0)
    if SPLIT:
        store_lse(lse_ptr, seq * l_seq + head * l_head + split, rows_ok, m_i, l_i)


def decode_mla(q: torch.Tensor, lat: Latent, block_table: torch.Tensor, seq_lens: torch.Tensor, scale: float,
               num_splits: int | None, tile: plan.Tile | None) -> torch.Tensor:
    """out (B, H, rank) fp32 = softmax(q [c, r]^T × scale) c over each sequence's paged latents."""
    batch, num_heads, _ = q.shape
    rank, rope, block_size = lat.rank, lat.rope_dim, lat.nope.data.shape[1]
    device = plan.device_limits(q.device)
    tiles = [tile] if tile else plan.mla_tiles(num_heads, rank, rope, lat.nope.data.element_size(), q.element_size(),
                                               device, depth=None if lat.nope.fmt == formats.PLAIN else 1)
    splits = plan.plan_splits(batch * -(-num_heads // tiles[0].rows), block_table.shape[1] * block_size,
                              tiles[0].tokens, device, forced=num_splits)
    out, part, lse = outputs(q, num_heads, rank, splits.count)
    consts = dict(BS=block_size, BLOCK_C=plan.pow2(rank), BLOCK_R=plan.pow2(rope), FMT_C=lat.nope.fmt,
                  FMT_R=lat.rope.fmt, F16=fp16_dots(q, lat.nope), SPLIT=splits.count > 1, PREC=precision(q),
                  COMPILED=not INTERPRETED)
    c, r = lat.nope, lat.rope

    def launch(t: plan.Tile) -> None:
        _mla_kernel[(batch, -(-num_heads // t.rows), splits.count)](
            q, c.data, c.scales, r.data, r.scales, block_table, seq_lens, part, lse,
            scale * LOG2E, num_heads, rank, rope, lat.rope_col0, c.group, r.group, splits.tokens,
            q.stride(0), q.stride(1), *c.strides()[:2], *c.strides()[3:5], *r.strides()[:2], *r.strides()[3:5],
            block_table.stride(0), part.stride(0), part.stride(1), part.stride(2) if splits.count > 1 else 0,
            lse.stride(0), lse.stride(1), ROWS=t.rows, TOKENS=t.tokens, num_warps=t.warps, num_stages=t.stages,
            **consts)

    launch_first_fitting(launch, tiles, ("mla", q.device, q.dtype, tuple(consts.items())))
    if splits.count > 1:
        combine(part, lse, out)
    return out
