# mypy: allow-untyped-decorators
# (triton ships no type information; @triton.jit kernels take untyped pointer arguments)
"""Triton kernels that prove a paged cache is real and correctly addressed.

- ``reshape_and_cache``: copy the rows of new tokens (K, V, the MLA latent, or the bytes of a
  quantized cache and its scales) into their slots; ``slot = block_id × block_size + offset``.
- ``paged_decode``: one query token per sequence attends over its cached tokens, read through the
  block table. GQA/MQA: query head h reads KV head ``h // (Hq // Hkv)``; one program serves up to
  64 query heads of one KV head (``tl.dot`` tiles, so block_size must be at least 16 on a GPU).
  The MLA latent variant is the same kernel with one KV head, K = the whole latent and V = its
  first ``kv_lora_rank`` values (a narrowed view of the same pages).

Caches are passed as 4-D views ``(num_blocks, block_size, heads, width)`` with arbitrary strides,
so the vLLM layout and the four ppl.nn layouts run through the same code. This module imports
triton: import it only after ``TRITON_INTERPRET`` is set when running on CPU.
"""

from __future__ import annotations

from typing import Any

import torch
import triton  # type: ignore[import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-untyped, unused-ignore]


@triton.jit
def _reshape_and_cache_kernel(src_ptr, slot_ptr, cache_ptr, num_heads, width,  # type: ignore[no-untyped-def]
                              s_tok, s_head, c_blk, c_off, c_head,
                              BLOCK_SIZE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    tok = tl.program_id(0)
    slot = tl.load(slot_ptr + tok)
    if slot >= 0:  # negative slots are padding tokens: nothing to write
        blk = slot // BLOCK_SIZE
        off = slot % BLOCK_SIZE
        h = tl.arange(0, BLOCK_H)[:, None]
        w = tl.arange(0, BLOCK_W)[None, :]
        mask = (h < num_heads) & (w < width)
        row = tl.load(src_ptr + tok * s_tok + h * s_head + w, mask=mask)
        tl.store(cache_ptr + blk * c_blk + off * c_off + h * c_head + w, row, mask=mask)


@triton.jit
def _paged_decode_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, scale, group, dk, dv,  # type: ignore[no-untyped-def]
                         q_seq, q_head, k_blk, k_off, k_head, v_blk, v_off, v_head, t_seq, o_seq, o_head,
                         BLOCK_SIZE: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_DK: tl.constexpr,
                         BLOCK_DV: tl.constexpr):
    # one program: one sequence, one KV head, BLOCK_G of the query heads that share it (GQA/MQA/MLA)
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    g = tl.program_id(2) * BLOCK_G + tl.arange(0, BLOCK_G)
    g_ok = g < group
    head = kv_head * group + g
    seq_len = tl.load(lens_ptr + seq)
    dk_idx = tl.arange(0, BLOCK_DK)
    dv_idx = tl.arange(0, BLOCK_DV)
    tok = tl.arange(0, BLOCK_SIZE)
    q_rows = q_ptr + seq * q_seq + head[:, None] * q_head + dk_idx[None, :]
    q = tl.load(q_rows, mask=g_ok[:, None] & (dk_idx[None, :] < dk), other=0.0).to(tl.float32)
    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_DV], tl.float32)
    for i in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):
        blk = tl.load(table_ptr + seq * t_seq + i).to(tl.int64)
        valid = i * BLOCK_SIZE + tok < seq_len
        k_rows = k_ptr + blk * k_blk + tok[:, None] * k_off + kv_head * k_head + dk_idx[None, :]
        k = tl.load(k_rows, mask=valid[:, None] & (dk_idx[None, :] < dk), other=0.0).to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale  # (BLOCK_G, BLOCK_SIZE)
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        v_rows = v_ptr + blk * v_blk + tok[:, None] * v_off + kv_head * v_head + dv_idx[None, :]
        v = tl.load(v_rows, mask=valid[:, None] & (dv_idx[None, :] < dv), other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    out = acc / l_i[:, None]
    o_rows = out_ptr + seq * o_seq + head[:, None] * o_head + dv_idx[None, :]
    tl.store(o_rows, out.to(out_ptr.dtype.element_ty), mask=g_ok[:, None] & (dv_idx[None, :] < dv))


def _pow2(n: int) -> int:
    return int(triton.next_power_of_2(max(n, 1)))


def _last_dim_unit(*tensors: torch.Tensor) -> None:
    for t in tensors:
        if t.stride(-1) != 1:
            raise ValueError(f"the last dimension must be contiguous, got strides {t.stride()}")


def reshape_and_cache(src: torch.Tensor, slot_mapping: torch.Tensor, cache: torch.Tensor) -> None:
    """cache[slot // bs, slot % bs] = src[t] for every token t; src (T, H, W), cache (NB, BS, H, W)."""
    _last_dim_unit(src, cache)
    num_tokens, num_heads, width = src.shape
    block_size = cache.shape[1]
    if src.dtype != cache.dtype or cache.shape[2:] != src.shape[1:]:
        raise ValueError(f"src {tuple(src.shape)} {src.dtype} does not fit cache {tuple(cache.shape)} {cache.dtype}")
    if num_tokens == 0:
        return
    _reshape_and_cache_kernel[(num_tokens,)](
        src, slot_mapping, cache, num_heads, width, src.stride(0), src.stride(1),
        cache.stride(0), cache.stride(1), cache.stride(2),
        BLOCK_SIZE=block_size, BLOCK_H=_pow2(num_heads), BLOCK_W=_pow2(width))


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """Attention of q (B, Hq, Dk) over the cached K (NB, BS, Hkv, Dk) / V (NB, BS, Hkv, Dv) -> (B, Hq, Dv)."""
    _last_dim_unit(q, k_cache, v_cache)
    batch, num_heads, dk = q.shape
    num_kv_heads, dv = k_cache.shape[2], v_cache.shape[3]
    if num_heads % num_kv_heads:
        raise ValueError(f"{num_heads} query heads are not a multiple of {num_kv_heads} KV heads")
    group = num_heads // num_kv_heads
    block_g = min(max(16, _pow2(group)), 64)  # tl.dot needs at least 16 rows; larger groups take several programs
    out = torch.empty(batch, num_heads, dv, dtype=torch.float32, device=q.device)
    grid: Any = (batch, num_kv_heads, -(-group // block_g))
    _paged_decode_kernel[grid](
        q, k_cache, v_cache, block_table, seq_lens, out, scale, group, dk, dv,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2), block_table.stride(0), out.stride(0), out.stride(1),
        BLOCK_SIZE=k_cache.shape[1], BLOCK_G=block_g, BLOCK_DK=_pow2(dk), BLOCK_DV=_pow2(dv),
        num_warps=8 if _pow2(dk) >= 512 else 4)  # the MLA latent (576 wide) needs more registers
    return out


def paged_decode_mla(q_latent: torch.Tensor, latent_cache: torch.Tensor, kv_lora_rank: int,
                     block_table: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """MLA (absorbed) decode: K = latent (NB, BS, Dl), V = latent[..., :kv_lora_rank], one shared KV head."""
    pages = latent_cache.unsqueeze(2)
    return paged_decode(q_latent, pages, pages[..., :kv_lora_rank], block_table, seq_lens, scale)
