"""vLLM 0.33's KV-cache grouping: per-layer specs on a worker, Mamba block alignment, page-size
unification, hybrid groups with padding, and blocks per request (engines.md §1.5, §1.6, §1.9).

Pure arithmetic on frozen values. Which backend/block size applies is decided in ``vllm.py``;
this module takes the block size as given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kvplan.errors import InputError
from kvplan.formulas.dtypes import KvDtype
from kvplan.formulas.per_token import kv_bytes_per_token, state_bytes_per_sequence
from kvplan.specs import ChunkedAttn, LayerSpec, LinearState, MLAAttn, NoKV, SlidingAttn
from kvplan.units import cdiv

MAMBA_KERNEL_ALIGN_TOKENS = 16  # FLASH_ATTN kernel block alignment on Hopper (engines.md §1.9)
DEFAULT_MAMBA_CHUNK_TOKENS = 64  # FLA gated-DeltaNet / Mamba2 chunk when the config names none


@dataclass(frozen=True, slots=True)
class VSpec:
    """One layer's KV spec on one worker: vLLM's FullAttentionSpec, SlidingWindowSpec, ..."""

    kind: str  # full | mla | sliding | chunked | mamba
    block_size: int
    page_bytes: int  # one block of this layer (Mamba: the whole state, padded)
    window: int = 0  # sliding window or chunk size, tokens


@dataclass(frozen=True, slots=True)
class VGroup:
    spec: VSpec
    layers: tuple[int, ...]  # global layer indices (padding is implicit: width - len)


def layer_vspec(spec: LayerSpec, dtype: KvDtype, state_dtype: KvDtype, block_size: int,
                hybrid_manager: bool) -> VSpec | None:
    """A per-rank core spec -> vLLM's spec (None: the layer caches nothing)."""
    if isinstance(spec, NoKV):
        return None
    if isinstance(spec, LinearState):
        return VSpec("mamba", 1, state_bytes_per_sequence(spec, state_dtype))
    page = block_size * kv_bytes_per_token(spec, dtype)
    if isinstance(spec, MLAAttn):
        return VSpec("mla", block_size, page)
    if hybrid_manager and isinstance(spec, SlidingAttn):
        return VSpec("sliding", block_size, page, spec.window)
    if hybrid_manager and isinstance(spec, ChunkedAttn):
        return VSpec("chunked", block_size, page, spec.chunk_size)
    return VSpec("full", block_size, page)  # --disable-hybrid-kv-cache-manager: windows become full


def mamba_block_size(specs: tuple[VSpec | None, ...], chunk_tokens: int, prefix_caching: bool) -> int | None:
    """Attention block size that makes one attention page hold one Mamba state (None: no Mamba).

    a = lcm(chunk, 16) with prefix caching (16 without); block = a · cdiv(mamba_page, a · attn_page_1tok).
    """
    mamba = [s.page_bytes for s in specs if s and s.kind == "mamba"]
    attn = [s for s in specs if s and s.kind != "mamba"]
    if not mamba or not attn:
        return None
    align = math.lcm(chunk_tokens, MAMBA_KERNEL_ALIGN_TOKENS) if prefix_caching else MAMBA_KERNEL_ALIGN_TOKENS
    per_token = attn[0].page_bytes // attn[0].block_size
    return align * cdiv(max(mamba), align * per_token)


def align_mamba(specs: tuple[VSpec | None, ...], block_size: int) -> tuple[VSpec | None, ...]:
    """Attention layers take the raised block size; Mamba pages are padded to the attention page."""
    def one(s: VSpec | None) -> VSpec | None:
        if s is None or s.kind == "mamba":
            return s
        return replace(s, block_size=block_size, page_bytes=s.page_bytes // s.block_size * block_size)
    attn = [one(s) for s in specs]
    page = max(s.page_bytes for s in attn if s and s.kind != "mamba")
    # vLLM's MambaSpec takes the attention block size too (the tokens one state page stands for)
    return tuple(replace(s, page_bytes=page, block_size=block_size) if s and s.kind == "mamba" else s for s in attn)


def unify_page_size(specs: tuple[VSpec | None, ...]) -> tuple[VSpec | None, ...]:
    """Hybrids: smaller pages grow their block size by max_page / page (must divide)."""
    top = max(s.page_bytes for s in specs if s)
    out = []
    for s in specs:
        if s is None or s.page_bytes == top:
            out.append(s)
            continue
        if top % s.page_bytes or s.kind == "mamba":
            raise InputError(f"vLLM cannot unify KV page sizes {s.page_bytes} and {top} bytes "
                             "(NotImplementedError in vLLM); try --disable-hybrid-kv-cache-manager")
        ratio = top // s.page_bytes
        out.append(replace(s, block_size=s.block_size * ratio, page_bytes=top))
    return tuple(out)


def kv_cache_groups(specs: tuple[VSpec | None, ...]) -> tuple[tuple[VGroup, ...], bool]:
    """vLLM get_kv_cache_groups -> (groups, uniform_type). uniform_type: one group whose layers
    differ only in page size (a block costs the sum of their pages)."""
    layers = [(i, s) for i, s in enumerate(specs) if s is not None]
    kinds = {s for _, s in layers}
    if len(kinds) == 1:
        return (VGroup(layers[0][1], tuple(i for i, _ in layers)),), False
    shape = {(s.kind, s.block_size, s.window) for _, s in layers}
    if len(shape) == 1:
        return (VGroup(layers[0][1], tuple(i for i, _ in layers)),), True
    return _hybrid_groups(unify_page_size(specs)), False


def _hybrid_groups(specs: tuple[VSpec | None, ...]) -> tuple[VGroup, ...]:
    """Bucket by spec; group size = min type count (max if max < 1.5 × min); strided split."""
    buckets: dict[VSpec, list[int]] = {}
    for i, s in enumerate(specs):
        if s is not None:
            buckets.setdefault(s, []).append(i)
    counts = [len(v) for v in buckets.values()]
    size = max(counts) if max(counts) < 1.5 * min(counts) else min(counts)
    groups = []
    for spec, idx in buckets.items():
        n = cdiv(len(idx), size)
        groups += [VGroup(spec, tuple(idx[g::n])) for g in range(n)]
    return tuple(groups)


def group_width(groups: tuple[VGroup, ...], stage: range) -> int:
    """Layers one block id spans on a worker: the largest group's layer count there."""
    return max(sum(1 for i in g.layers if i in stage) for g in groups)


def stage_block_bytes(groups: tuple[VGroup, ...], specs: tuple[VSpec | None, ...], stage: range,
                      uniform_type: bool) -> int:
    """Bytes one block id takes on a worker of this stage."""
    if uniform_type:
        return sum(s.page_bytes for i, s in enumerate(specs) if s and i in stage)
    return group_width(groups, stage) * groups[0].spec.page_bytes


def blocks_needed(spec: VSpec, max_model_len: int, in_flight_tokens: int, dcp: int, prefix_caching: bool) -> int:
    """Blocks one max_model_len request reserves in one group (vLLM max_memory_usage_bytes / page)."""
    bs, m = spec.block_size, max_model_len
    if spec.kind == "sliding":  # the window may straddle a block boundary: +1
        return cdiv(min(spec.window - 1 + in_flight_tokens, m), bs) + 1
    if spec.kind == "chunked":
        return cdiv(min(spec.window + in_flight_tokens, m), bs)
    if spec.kind == "mamba":  # mamba_cache_mode align (prefix caching): state + one checkpoint
        return 2 if prefix_caching else 1
    return cdiv(cdiv(m, dcp) if dcp > 1 else m, bs)
