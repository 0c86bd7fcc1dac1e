"""Torch references for the probe's kernels: plain indexing, dequantization and scaled_dot_product_attention.

These are what the Triton kernels are checked against, and what runs instead when triton is
missing. They gather through the same block tables, so a wrong address shows up as a mismatch.
Quantized caches are dequantized to fp32 here with the encodings the kernels document
(``kvplan.probe.kernels.tiles``): int4 two's complement and nvfp4 e2m1, low nibble first; nvfp4
byte scales as e4m3; fp8_ds_mla rows as 512 fp8 + 4 fp32 scales (one per 128) + 64 bf16.
"""

from __future__ import annotations

import torch

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


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


def _fp8(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.float8_e4m3fn) if t.dtype == torch.uint8 else t


def _nibbles(packed: torch.Tensor) -> torch.Tensor:
    """(…, n) bytes -> (…, 2n) 4-bit codes, the low nibble first."""
    p = packed.to(torch.int32)
    return torch.stack([p & 15, p >> 4], dim=-1).flatten(-2)


def dequantize(data: torch.Tensor, scales: torch.Tensor | None, quant: str, quant_group: int = 0) -> torch.Tensor:
    """The fp32 values of a cache (…, stored) with its scales: quant none | group | nvfp4 | per_token_head."""
    if quant == "none":
        return data.float()
    assert scales is not None, f"quant {quant!r} needs scales"
    if quant == "per_token_head":
        return _fp8(data).float() * scales.float()
    if quant == "nvfp4":
        codes = _nibbles(data)
        values = torch.tensor(E2M1, device=data.device)[codes & 7] * (1 - 2 * (codes >> 3)).float()
        return values * scales.view(torch.float8_e4m3fn).float().repeat_interleave(16, dim=-1)
    values = data.float() if data.dtype == torch.int8 else (_nibbles(data) ^ 8).float() - 8  # signed int4
    return values * scales.float().repeat_interleave(quant_group, dim=-1)


def ds_mla_values(rows: torch.Tensor, kv_lora_rank: int, rope_dim: int) -> torch.Tensor:
    """fp8_ds_mla rows (…, 656 B) -> (…, rank + rope) fp32: fp8 × its 128-value scale, then bf16 rope."""
    nope_bytes = kv_lora_rank + kv_lora_rank // 128 * 4
    nope = rows[..., :kv_lora_rank].view(torch.float8_e4m3fn).float()
    scales = rows[..., kv_lora_rank:nope_bytes].contiguous().view(torch.float32)
    rope = rows[..., nope_bytes:nope_bytes + 2 * rope_dim].contiguous().view(torch.bfloat16).float()
    return torch.cat([nope * scales.repeat_interleave(128, dim=-1), rope], dim=-1)


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, scale: float, *, quant: str = "none", k_scales: torch.Tensor | None = None,
                 v_scales: torch.Tensor | None = None, quant_group: int = 0, k_scale: float = 1.0,
                 v_scale: float = 1.0, **_: object) -> torch.Tensor:
    """Dequantize, gather each sequence's K/V, repeat KV heads for GQA/MQA, and run SDPA in fp32."""
    k_all = dequantize(k_cache, k_scales, quant, quant_group) * k_scale
    v_all = dequantize(v_cache, v_scales, quant, quant_group) * v_scale
    outs = []
    num_heads = q.shape[1]
    for b, seq_len in enumerate(seq_lens.tolist()):
        k = gather(k_all, block_table[b], seq_len)
        v = gather(v_all, block_table[b], seq_len)
        group = num_heads // k.shape[1]
        k = k.repeat_interleave(group, dim=1).transpose(0, 1)  # (Hq, T, Dk)
        v = v.repeat_interleave(group, dim=1).transpose(0, 1)
        qb = q[b].float().unsqueeze(1)  # (Hq, 1, Dk)
        outs.append(torch.nn.functional.scaled_dot_product_attention(qb, k, v, scale=scale).squeeze(1))
    return torch.stack(outs)


def paged_decode_mla(q_latent: torch.Tensor, latent_cache: torch.Tensor, kv_lora_rank: int,
                     block_table: torch.Tensor, seq_lens: torch.Tensor, scale: float, *, quant: str = "none",
                     latent_scales: torch.Tensor | None = None, quant_group: int = 0, **_: object) -> torch.Tensor:
    """MLA: K = the whole (dequantized) latent, V = its first kv_lora_rank values, one shared KV head."""
    if quant == "ds_mla":
        values = ds_mla_values(latent_cache, kv_lora_rank, q_latent.shape[-1] - kv_lora_rank)
    else:
        values = dequantize(latent_cache, latent_scales, quant, quant_group)
    pages = values.unsqueeze(2)
    return paged_decode(q_latent, pages, pages[..., :kv_lora_rank], block_table, seq_lens, scale)
