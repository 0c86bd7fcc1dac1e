"""DeepSeek-V4's caches as vLLM 0.33 stores them: per layer and part, one raw uint8 page per block id,
viewed as ``[num_blocks, entries, cell_bytes]`` rows (vLLM binds ``[B, H=1, N, C]`` and squeezes H:
``models/deepseek_v4/attention.py:853-855``, ``:907-909``, ``compressor.py:174-176``, ``sparse_swa.py:120-122``).

A part's block holds its own number of tokens (the compressed latent and the indexer key: the cache block, 256
by default; the sliding latent 64, ``sparse_swa.py:85``; the compressor states 4 (ratio 4) and 8 (ratio 128),
``compressor.py:163-172``) and ``tokens // tokens_per_state`` entries (``v1/kv_cache_interface.py:270-275``,
``:590-595``); the page is rounded up to 576 bytes with fp8_ds_mla, 512 otherwise (``:719-726``; the alignments:
``attention.py:877``, ``:923``, ``compressor.py:184-187``, ``sparse_swa.py:139``).

The cell of one entry is derived here from the spec's dimensions, apart from ``kvplan.formulas``:
- a latent (compressed or sliding), fp8_ds_mla: (head_dim − rope_dim) fp8 NoPE values + rope_dim bf16 values +
  8 bytes of UE8M0 scales (``attention.py:880-882``: 448 + 128 + 8 = 584); bf16 rows: head_dim × 2 bytes;
- a compressor state: kv and score states of ``coff × head_dim`` fp32 values each (``compressor.py:276-281``,
  ``state_dim = 2 · coff · head_dim``; ``dtype == float32``, ``:157``);
- the indexer key: head_dim fp8 values + one fp32 scale per 128 (``attention.py:1024-1030``: 128 + 4 = 132).
The block sizes and alignments are kvplan's engine constants (``kvplan.engines.vllm.deepseek_v4``), the same
ones the prediction uses: the probe checks the cells and the arithmetic, not those constants.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kvplan.dtypes import KvDtype
from kvplan.engines.vllm.deepseek_v4 import ALIGN_PACKED, ALIGN_ROWS, KERNEL_BLOCK, module_block
from kvplan.errors import InputError
from kvplan.probe.compare import is_compressed
from kvplan.specs import CompressedMLA, CompressorState, IndexerCache, Part, SlidingMLA
from kvplan.units import cdiv

__all__ = ["cache_block", "cell_bytes", "entries_per_block", "is_compressed", "rows"]

Allocator = Callable[[tuple[int, ...], torch.dtype], torch.Tensor]
UE8M0_SCALE_BYTES = 8  # 448 NoPE values / 64 per scale = 7 one-byte scales, padded to 8 (attention.py:880-882)
INDEXER_QUANT_BLOCK = 128  # one fp32 scale per 128 key values (attention.py:1007)


def cell_bytes(part: Part, dtype: KvDtype) -> int:
    """Bytes of one stored entry, from the part's dimensions (see the module docstring)."""
    if isinstance(part, (CompressedMLA, SlidingMLA)):
        if dtype.name.startswith("fp8"):
            return (part.head_dim - part.rope_dim) + part.rope_dim * 2 + UE8M0_SCALE_BYTES
        return part.head_dim * dtype.element_bits // 8
    if isinstance(part, CompressorState):
        return 2 * part.coff * part.head_dim * 4
    if isinstance(part, IndexerCache):
        return part.head_dim * part.key_bits // 8 + (part.head_dim // INDEXER_QUANT_BLOCK * 4 if part.scales else 0)
    raise TypeError(f"not a DeepSeek-V4 cache part: {part!r}")


def entries_per_block(part: Part, cache_block: int) -> int:
    ratio = part.ratio if isinstance(part, (CompressedMLA, IndexerCache)) else 1
    return module_block(part, cache_block) // ratio


def cache_block(block_size: int | None) -> int:
    """The latent's and indexer's block: 256 unless set; vLLM refuses one that is no multiple of 256
    (``v1/worker/utils.py:551-558``)."""
    block = block_size or KERNEL_BLOCK
    if block % KERNEL_BLOCK:
        raise InputError(f"vLLM 0.33 pages DeepSeek-V4's latent and indexer in blocks of a multiple of "
                         f"{KERNEL_BLOCK}, not {block} (vllm/v1/worker/utils.py:551-558)", arg="block_size")
    return block


def rows(part: Part, num_blocks: int, cache_block_tokens: int, dtype: KvDtype, new: Allocator) -> torch.Tensor:
    """The part's pages of one layer: raw (num_blocks, aligned page) bytes, viewed as (blocks, entries, cell)."""
    entries, cell = entries_per_block(part, cache_block_tokens), cell_bytes(part, dtype)
    align = ALIGN_PACKED if dtype.name.startswith("fp8") else ALIGN_ROWS
    raw = new((num_blocks, cdiv(entries * cell, align) * align), torch.uint8)
    return raw[:, : entries * cell].view(num_blocks, entries, cell)
