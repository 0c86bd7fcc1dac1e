# mypy: allow-untyped-decorators
"""Paged decode for K/V heads (MHA/GQA/MQA): one query token per sequence over its cached tokens.

One program: one sequence, one KV head, every query head of its group (padded to >= 16 rows for
tl.dot; groups over 128 take several programs) and one split of the tokens. The loop walks
``tile.tokens`` tokens at a time through the block table (a tile may span several blocks or part of
one), loads K and V in their storage format, dequantizes them into q's dtype (bf16/fp16 dots with
fp32 accumulation; fp32 caches use exact fp32 dots) and keeps an online base-2 softmax. With more
than one split, each split writes its partial output and log-sum-exp, and ``combine`` merges them.
"""

from __future__ import annotations

import torch
import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]

from kvplan.probe.kernels import formats, plan
from kvplan.probe.kernels.combine import combine, launch_first_fitting
from kvplan.probe.kernels.formats import Paged
from kvplan.probe.kernels.tiles import (
    LOG2E,
    dot,
    load_tile,
    softmax_step,
    store_lse,
    store_rows,
    token_rows,
    token_scale,
)


@triton.jit
def _kv_tile(q, m_i, l_i, acc, kvh, pos, end, seq, table_ptr, t_seq,  # type: ignore[no-untyped-def]
             k_ptr, ks_ptr, k_blk, k_off, k_head, ks_blk, ks_off, ks_head,
             v_ptr, vs_ptr, v_blk, v_off, v_head, vs_blk, vs_off, vs_head,
             dk_idx, dv_idx, dk, dv, k_group, v_group, qk_scale,
             BS: tl.constexpr, FMT: tl.constexpr, PREC: tl.constexpr):
    blk, off, ok = token_rows(table_ptr, t_seq, seq, pos, end, BS)
    krow = blk * k_blk + off * k_off + kvh * k_head
    ksrow = blk * ks_blk + off * ks_off + kvh * ks_head
    k = load_tile(k_ptr, ks_ptr, krow, ksrow, dk_idx, ok[:, None] & (dk_idx[None, :] < dk), k_group, q, FMT)
    s = dot(q, tl.trans(k), PREC) * (qk_scale * token_scale(ks_ptr, ksrow, ok, FMT))[None, :]
    m_i, p, l_i, acc = softmax_step(s, ok, m_i, l_i, acc)
    vrow = blk * v_blk + off * v_off + kvh * v_head
    vsrow = blk * vs_blk + off * vs_off + kvh * vs_head
    v = load_tile(v_ptr, vs_ptr, vrow, vsrow, dv_idx, ok[:, None] & (dv_idx[None, :] < dv), v_group, q, FMT)
    p = p * token_scale(vs_ptr, vsrow, ok, FMT)[None, :]
    acc += dot(p.to(v.dtype), v, PREC)
    return m_i, l_i, acc


@triton.jit
def _gqa_kernel(q_ptr, k_ptr, ks_ptr, v_ptr, vs_ptr, table_ptr, lens_ptr, out_ptr, lse_ptr,  # type: ignore[no-untyped-def]
                qk_scale, v_scale, group, g_tiles, dk, dv, k_group, v_group, split_tokens,
                q_seq, q_head, k_blk, k_off, k_head, ks_blk, ks_off, ks_head,
                v_blk, v_off, v_head, vs_blk, vs_off, vs_head, t_seq, o_seq, o_head, o_split, l_seq, l_head,
                BS: tl.constexpr, ROWS: tl.constexpr, TOKENS: tl.constexpr, BLOCK_DK: tl.constexpr,
                BLOCK_DV: tl.constexpr, FMT: tl.constexpr, F16: tl.constexpr, SPLIT: tl.constexpr,
                PREC: tl.constexpr, COMPILED: tl.constexpr):
    seq, kvh, split = tl.program_id(0), tl.program_id(1) // g_tiles, tl.program_id(2)
    g = (tl.program_id(1) % g_tiles) * ROWS + tl.arange(0, ROWS)
    rows_ok, head = g < group, kvh * group + g
    dk_idx, dv_idx = tl.arange(0, BLOCK_DK), tl.arange(0, BLOCK_DV)
    start = split * split_tokens
    end = tl.minimum(tl.load(lens_ptr + seq), start + split_tokens)
    q = tl.load(q_ptr + seq * q_seq + head[:, None] * q_head + dk_idx[None, :],
                mask=rows_ok[:, None] & (dk_idx[None, :] < dk), other=0.0)
    q = q.to(tl.float16) if F16 else q
    m_i, l_i = tl.full([ROWS], float("-inf"), tl.float32), tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, BLOCK_DV], tl.float32)
    if COMPILED:  # compiled: a for loop, which triton software-pipelines
        for t in range(start, end, TOKENS):
            m_i, l_i, acc = _kv_tile(q, m_i, l_i, acc, kvh, t + tl.arange(0, TOKENS), end, seq, table_ptr, t_seq,
                                     k_ptr, ks_ptr, k_blk, k_off, k_head, ks_blk, ks_off, ks_head,
                                     v_ptr, vs_ptr, v_blk, v_off, v_head, vs_blk, vs_off, vs_head,
                                     dk_idx, dv_idx, dk, dv, k_group, v_group, qk_scale, BS, FMT, PREC)
    else:  # interpreted: a loaded bound cannot be a Python range bound in older interpreters
        t = start
        while t < end:
            m_i, l_i, acc = _kv_tile(q, m_i, l_i, acc, kvh, t + tl.arange(0, TOKENS), end, seq, table_ptr, t_seq,
                                     k_ptr, ks_ptr, k_blk, k_off, k_head, ks_blk, ks_off, ks_head,
                                     v_ptr, vs_ptr, v_blk, v_off, v_head, vs_blk, vs_off, vs_head,
                                     dk_idx, dv_idx, dk, dv, k_group, v_group, qk_scale, BS, FMT, PREC)
            t += TOKENS
    o_off = seq * o_seq + head * o_head + split * o_split
    store_rows(out_ptr, o_off, dv_idx, rows_ok, dv, acc, l_i, v_scale)
    if SPLIT:
        store_lse(lse_ptr, seq * l_seq + head * l_head + split, rows_ok, m_i, l_i)


def decode_gqa(q: torch.Tensor, k: Paged, v: Paged, block_table: torch.Tensor, seq_lens: torch.Tensor,
               scale: float, k_scale: float, v_scale: float, num_splits: int | None,
               tile: plan.Tile | None) -> torch.Tensor:
    """out (B, Hq, Dv) fp32 = softmax(q K^T × scale) V over each sequence's paged tokens."""
    batch, num_heads, _ = q.shape
    num_kv_heads, block_size = k.data.shape[2], k.data.shape[1]
    group = num_heads // num_kv_heads
    device = plan.device_limits(q.device)
    tiles = [tile] if tile else plan.gqa_tiles(group, k.width, v.width, k.data.element_size(), q.element_size(),
                                               device, dequant=k.fmt in (formats.GROUP, formats.INT4, formats.NVFP4),
                                               depth=None if k.fmt == formats.PLAIN else 1)
    g_tiles = -(-group // tiles[0].rows)
    splits = plan.plan_splits(batch * num_kv_heads * g_tiles, block_table.shape[1] * block_size,
                              tiles[0].tokens, device, forced=num_splits)
    tiles = tiles if tile else plan.short_splits(tiles, splits.tokens)
    out, part, lse = outputs(q, num_heads, v.width, splits.count)
    consts = dict(BS=block_size, BLOCK_DK=plan.pow2(k.width), BLOCK_DV=plan.pow2(v.width), FMT=k.fmt, F16=fp16_dots(q, k),
                  SPLIT=splits.count > 1, PREC=precision(q), COMPILED=not INTERPRETED)

    def launch(t: plan.Tile) -> None:
        g = -(-group // t.rows)
        _gqa_kernel[(batch, num_kv_heads * g, splits.count)](
            q, k.data, k.scales, v.data, v.scales, block_table, seq_lens, part, lse,
            scale * k_scale * LOG2E, v_scale, group, g, k.width, v.width, k.group, v.group, splits.tokens,
            q.stride(0), q.stride(1), *k.strides(), *v.strides(), block_table.stride(0),
            part.stride(0), part.stride(1), part.stride(2) if splits.count > 1 else 0, lse.stride(0), lse.stride(1),
            ROWS=t.rows, TOKENS=t.tokens, num_warps=t.warps, num_stages=t.stages, **consts)

    launch_first_fitting(launch, tiles, ("gqa", q.device, tuple(consts.items())))
    if splits.count > 1:
        combine(part, lse, out)
    return out


INTERPRETED = type(_gqa_kernel).__name__ == "InterpretedFunction"  # TRITON_INTERPRET=1 when triton was imported


def fp16_dots(q: torch.Tensor, cache: Paged) -> bool:
    """fp8 and integer caches dot in fp16: e4m3/e5m2/int8 convert to it exactly in one step (to bf16 they
    take several), and dequantized values keep 11 mantissa bits. Queries must stay under 65504."""
    return q.dtype != torch.float32 and (cache.fmt != formats.PLAIN or cache.data.element_size() == 1)


def precision(q: torch.Tensor) -> int:
    """The dots' PREC: native 16-bit (0), exact fp32 for fp32 queries (1), upcast in the interpreter (2)."""
    return 2 if INTERPRETED else int(q.dtype == torch.float32)


def outputs(q: torch.Tensor, num_heads: int, dv: int, splits: int) -> tuple[torch.Tensor, ...]:
    """(out, where the splits write, their log-sum-exp): with one split the kernel writes out itself."""
    batch = q.shape[0]
    out = torch.empty(batch, num_heads, dv, dtype=torch.float32, device=q.device)
    if splits == 1:
        return out, out, out
    part = torch.empty(batch, num_heads, splits, dv, dtype=torch.float32, device=q.device)
    lse = torch.empty(batch, num_heads, splits, dtype=torch.float32, device=q.device)
    return out, part, lse
