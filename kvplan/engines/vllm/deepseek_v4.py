"""vLLM 0.33's paged specs of DeepSeek-V4's cache modules on one worker.

Backend (``models/deepseek_v4/nvidia/model.py:537-568``, no ``--attention-backend``): compute capability 12.x
takes FlashInfer's SM120 class, every other CUDA GPU FlashMLA (``FLASHMLA_SPARSE_DSV4``). Both store the packed
``fp8_ds_mla`` cell: ``auto`` and every fp8 name become it, anything else is refused with vLLM's message
(``models/deepseek_v4/attention.py:94-126``).

Pages (``v1/kv_cache_interface.py:586-603``, ``:719-726``): states per block × bytes per state, rounded up to 576
bytes with fp8_ds_mla (512 otherwise). Block sizes: the compressed latent and the indexer key take the cache
block (256 when none is given: the only kernel block their backends declare, ``sparse_mla.py:292-298``,
``indexer.py:334-357``; the worker refuses a block no multiple of 256, ``v1/worker/utils.py:515-558``); the
sliding latent keeps 64 (``sparse_swa.py:85``), the compressor states 4 (ratio 4) and 8 (ratio 128)
(``compressor.py:163-172``). The latent and indexer specs carry a block-stride alignment of
``MultipleOf(256)`` (``v1/worker/utils.py:476-486``): none at a block of 256, the page of a 256-token block at a
larger multiple (``kv_cache_interface.py:224-234``). Groups: block-outermost packing (``packed.py``); one block
id's bytes by release (the row's ``dsv4_block_layout``, ``dsv4_concurrency``).
"""

from __future__ import annotations

import math

from kvplan.dtypes import KvDtype
from kvplan.engines.base import Request
from kvplan.engines.vllm import packed
from kvplan.engines.vllm.groups import DSV4_PARTS as DSV4_PARTS  # its parts, there for paging's cheap check
from kvplan.engines.vllm.groups import Group, PagedSpec, Specs
from kvplan.engines.vllm.groups import is_deepseek_v4 as is_deepseek_v4
from kvplan.engines.vllm.row import VllmRelease
from kvplan.engines.vllm.spelling import KV_DTYPES
from kvplan.errors import InputError
from kvplan.formulas.per_token import part_bytes_per_state, tokens_per_state
from kvplan.specs import CompressedMLA, CompressorState, IndexerCache, Part, SlidingMLA
from kvplan.units import cdiv

KERNEL_BLOCK = 256  # FLASHMLA_SPARSE_DSV4, FLASHINFER_MLA_SPARSE_DSV4, DEEPSEEK_V4_INDEXER: [256]
SLIDING_BLOCK = 64
STATE_BLOCK = {4: 4, 128: 8}
ALIGN_PACKED, ALIGN_ROWS = 576, 512
# How a release sizes one block id of DeepSeek-V4's groups (the row's dsv4_block_layout; bisected over the releases):
# 0.29 on, block-outermost packing (v1/core/kv_cache_planning.py:574-606, 914-1041); 0.23-0.28, one tensor slot per
# page size and position, every group's pages first padded up to the nearest page of the compressed-latent group
# (0.25 v1/core/kv_cache_utils.py:1277-1312 _get_kv_cache_config_packed, 1230-1252 _bucket_layers_by_page_size,
# 1618-1640 the padding): Σ page × the most members of that page in one group; 0.20-0.22 "layer tuples" (0.22
# v1/core/kv_cache_utils.py:1179-1244: the most members of one page in any group × the latent group's page sizes).
# Blocks one request reserves in the concurrency (the row's dsv4_concurrency): 0.27 on Σ per group (0.27
# kv_cache_utils.py:937-959); 0.20-0.26 cdiv(Σ group blocks × the group's page sum, the latent group's page sum)
# (0.25 kv_cache_utils.py:919-937).


def backend(req: Request) -> str:
    major = req.device.compute_capability[0] if req.device and req.device.compute_capability else 9
    if major not in (9, 10, 12):
        raise InputError(f"vLLM 0.33 serves DeepSeek-V4 on CUDA compute capability 9.x and 10.x (FlashMLA) and 12.x "
                         f"(FlashInfer); {req.gpu_name} is {major}.x (vllm/models/deepseek_v4/sparse_mla.py:292-298)",
                         arg="gpu")
    return "FLASHINFER_MLA_SPARSE_DSV4" if major == 12 else "FLASHMLA_SPARSE_DSV4"


def check_kv_dtype(req: Request, dtype: KvDtype) -> None:
    """vLLM's default DeepSeek-V4 backends store fp8_ds_mla only."""
    if dtype.name.startswith("fp8"):
        return
    asked = req.cache.kv_dtype_name.spelled(KV_DTYPES)  # vLLM's name of it, as vLLM says it
    raise InputError(f"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got {asked}. Please set "
                     "`--kv-cache-dtype fp8` or select a backend that supports bfloat16 KV cache. (vLLM 0.33, "
                     "vllm/models/deepseek_v4/attention.py:111-116)", arg="kv_dtype")


def cache_block(req: Request) -> int:
    block = req.cache.block_size or KERNEL_BLOCK
    if block % KERNEL_BLOCK:
        raise InputError(f"No common block size for {block} (FLASHMLA_SPARSE_DSV4: [{KERNEL_BLOCK}]; "
                         f"DEEPSEEK_V4_INDEXER: [{KERNEL_BLOCK}]). (vLLM 0.33's worker, vllm/v1/worker/utils.py:551-558:"
                         f" DeepSeek-V4's latent and indexer take blocks of a multiple of {KERNEL_BLOCK})",
                         arg="block_size")
    return block


def module_block(part: Part, block: int) -> int:
    if isinstance(part, SlidingMLA):
        return SLIDING_BLOCK
    if isinstance(part, CompressorState):
        return STATE_BLOCK[part.ratio]
    return block


def page(part: Part, dtype: KvDtype, block: int) -> int:
    """States in a block × bytes per state, rounded up to the layout's alignment."""
    align = ALIGN_PACKED if dtype.name.startswith("fp8") else ALIGN_ROWS
    raw = block // tokens_per_state(part) * part_bytes_per_state(part, dtype)
    return cdiv(raw, align) * align


def stride_alignment(part: Part, dtype: KvDtype, block: int) -> int:
    """MultipleOf(256) on the latent and the indexer key: none when the block is a divisor of 256."""
    if not isinstance(part, (CompressedMLA, IndexerCache)):
        return 1
    kernel = math.gcd(KERNEL_BLOCK, block)
    return 1 if kernel == block else page(part, dtype, kernel)


def paged_specs(req: Request, parts: tuple[Part | None, ...], dtype: KvDtype) -> tuple[Specs, str, int, tuple[int, ...]]:
    """(paged specs, backend, cache block, each module's block-stride alignment)."""
    name = backend(req)
    check_kv_dtype(req, dtype)
    block = cache_block(req)
    specs = tuple(None if p is None else PagedSpec(spec=p, block_size=module_block(p, block),
                                                         page_bytes=page(p, dtype, module_block(p, block)))
                  for p in parts)
    aligns = tuple(1 if p is None else stride_alignment(p, dtype, block) for p in parts)
    return specs, name, block, aligns


def _padded_pages(groups: tuple[Group, ...], specs: Specs, stage: range) -> list[list[int]]:
    """Each group's pages on this stage, a non-latent group's padded up to the nearest latent page
    (0.25 v1/core/kv_cache_utils.py:1618-1640: page_size_padded)."""
    pages = [[s.page_bytes for i in g.layers if i in stage and (s := specs[i]) is not None] for g in groups]
    latent = sorted(set(next(p for g, p in zip(groups, pages, strict=True) if isinstance(g.spec.spec, CompressedMLA))))
    return [p if isinstance(g.spec.spec, CompressedMLA) else [min((x for x in latent if x >= b), default=b) for b in p]
            for g, p in zip(groups, pages, strict=True)]


def block_bytes(rel: VllmRelease, groups: tuple[Group, ...], specs: Specs, stage: range, aligns: tuple[int, ...]) -> int:
    """One block id's bytes on a worker of this stage, by the release's rule."""
    layout = rel.dsv4_block_layout
    if layout == "packed":
        return packed.block_bytes(groups, specs, stage, dict(enumerate(aligns)))
    pages = _padded_pages(groups, specs, stage)
    if layout == "buckets":
        return sum(size * max(p.count(size) for p in pages) for size in {x for p in pages for x in p})
    latent = next(p for g, p in zip(groups, pages, strict=True) if isinstance(g.spec.spec, CompressedMLA))
    tuples = max(max(p.count(x) for x in p) for p in pages if p)
    return tuples * sum(set(latent))


def blocks_per_request(rel: VllmRelease, groups: tuple[Group, ...], specs: Specs, need: tuple[int, ...],
                       stage: range) -> int:
    """Blocks one max-length request reserves in the logged concurrency, by the release's rule."""
    if rel.dsv4_concurrency == "blocks":
        return sum(need)
    sums = [sum(p) for p in _padded_pages(groups, specs, stage)]
    latent = next(s for g, s in zip(groups, sums, strict=True) if isinstance(g.spec.spec, CompressedMLA))
    return cdiv(sum(n * s for n, s in zip(need, sums, strict=True)), latent)
