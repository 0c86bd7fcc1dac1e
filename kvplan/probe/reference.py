"""Torch references for the probe's kernels: plain indexing and scaled_dot_product_attention.

These are what the Triton kernels are checked against, and what runs instead when triton is
missing. They gather through the same block tables, so a wrong address shows up as a mismatch.
"""

from __future__ import annotations

import torch


def reshape_and_cache(src: torch.Tensor, slot_mapping: torch.Tensor, cache: torch.Tensor) -> None:
    """cache[slot // bs, slot % bs] = src[t] for every token t with slot >= 0."""
    keep = slot_mapping >= 0
    slots = slot_mapping[keep]
    block_size = cache.shape[1]
    cache[slots // block_size, slots % block_size] = src[keep]


def gather(cache: torch.Tensor, block_row: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The first seq_len cached rows of one sequence: (seq_len, H, W), read through its block table row."""
    block_size = cache.shape[1]
    num_blocks = -(-seq_len // block_size)
    return cache[block_row[:num_blocks].long()].flatten(0, 1)[:seq_len]


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """Gather each sequence's K/V, repeat KV heads for GQA/MQA, and run SDPA in fp32 -> (B, Hq, Dv)."""
    outs = []
    num_heads = q.shape[1]
    for b, seq_len in enumerate(seq_lens.tolist()):
        k = gather(k_cache, block_table[b], seq_len).float()
        v = gather(v_cache, block_table[b], seq_len).float()
        group = num_heads // k.shape[1]
        k = k.repeat_interleave(group, dim=1).transpose(0, 1)  # (Hq, T, Dk)
        v = v.repeat_interleave(group, dim=1).transpose(0, 1)
        qb = q[b].float().unsqueeze(1)  # (Hq, 1, Dk)
        outs.append(torch.nn.functional.scaled_dot_product_attention(qb, k, v, scale=scale).squeeze(1))
    return torch.stack(outs)


def paged_decode_mla(q_latent: torch.Tensor, latent_cache: torch.Tensor, kv_lora_rank: int,
                     block_table: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    pages = latent_cache.unsqueeze(2)
    return paged_decode(q_latent, pages, pages[..., :kv_lora_rank], block_table, seq_lens, scale)
