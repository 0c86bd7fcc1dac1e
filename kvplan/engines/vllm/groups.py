"""vLLM 0.33's KV-cache grouping on one worker: Mamba block alignment, page-size unification,
hybrid groups with padding, and blocks per request.

Follows ``vllm/v1/kv_cache_interface.py`` (page sizes, ``max_memory_usage_bytes``) and
``vllm/v1/core/kv_cache_utils.py`` (``get_kv_cache_groups``, ``unify_kv_cache_spec_page_size``,
``get_num_blocks``). Pure arithmetic on frozen values; which backend and block size apply is
decided in ``backends.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kvplan.dtypes import KvDtype
from kvplan.errors import InputError
from kvplan.formulas.per_token import kv_bytes_per_token, state_bytes_per_sequence
from kvplan.specs import ChunkedAttn, LayerSpec, LinearState, NoKV, SlidingAttn, window_tokens
from kvplan.units import cdiv

MAMBA_KERNEL_ALIGN_TOKENS = 16  # FLASH_ATTN kernel block alignment on Hopper (HybridAttentionMambaModelConfig)
DEFAULT_MAMBA_CHUNK_TOKENS = 64  # FLA gated-DeltaNet / Mamba2 chunk when the config names none


@dataclass(frozen=True, slots=True)
class PagedSpec:
    """One layer's KV spec on one worker as vLLM pages it: the per-GPU layer spec, the block size it
    ends with and the bytes of one block (FullAttentionSpec, SlidingWindowSpec, MambaSpec, ...)."""

    spec: LayerSpec
    block_size: int
    page_bytes: int  # one block of this layer (Mamba: the whole state, padded)

    @property
    def kind(self) -> str:
        return "mamba" if isinstance(self.spec, LinearState) else self.spec.kind

    @property
    def window(self) -> int:
        return window_tokens(self.spec) or 0


@dataclass(frozen=True, slots=True)
class Group:
    spec: PagedSpec
    layers: tuple[int, ...]  # global layer indices (padding is implicit: width - len)


Specs = tuple[PagedSpec | None, ...]


@dataclass(frozen=True, slots=True)
class SpecReserve:
    """What speculative decoding adds to one request's reserve (vLLM 0.33): tokens a sliding window keeps below
    itself so multi-module MTP can re-prefill them (``extra_retained_tokens``), and one state block per drafted
    token on Mamba layers (``num_speculative_blocks``)."""

    retained_tokens: int = 0
    state_blocks: int = 0


NO_SPEC = SpecReserve()


def paged_spec(spec: LayerSpec, dtype: KvDtype, state_dtype: KvDtype, block_size: int) -> PagedSpec | None:
    """A per-rank layer spec -> vLLM's paged spec (None: the layer caches nothing)."""
    if isinstance(spec, NoKV):
        return None
    if isinstance(spec, LinearState):
        return PagedSpec(spec, 1, state_bytes_per_sequence(spec, state_dtype))
    return PagedSpec(spec, block_size, block_size * kv_bytes_per_token(spec, dtype))


def mamba_block_size(specs: Specs, chunk_tokens: int, prefix_caching: bool) -> int | None:
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


def align_mamba(specs: Specs, block_size: int) -> Specs:
    """Attention layers take the raised block size; Mamba pages are padded to the attention page."""
    def attn(s: PagedSpec | None) -> PagedSpec | None:
        if s is None or s.kind == "mamba":
            return s
        return replace(s, block_size=block_size, page_bytes=s.page_bytes // s.block_size * block_size)
    raised = [attn(s) for s in specs]
    page = max(s.page_bytes for s in raised if s and s.kind != "mamba")
    # vLLM's MambaSpec takes the attention block size too (the tokens one state page stands for)
    return tuple(replace(s, page_bytes=page, block_size=block_size) if s and s.kind == "mamba" else s for s in raised)


def unify_page_size(specs: Specs) -> Specs:
    """Hybrids: smaller pages grow their block size by max_page / page (must divide)."""
    top = max(s.page_bytes for s in specs if s)
    out = []
    for s in specs:
        if s is None or s.page_bytes == top:
            out.append(s)
            continue
        if top % s.page_bytes or s.kind == "mamba":
            raise InputError(f"vLLM cannot unify KV page sizes {s.page_bytes} and {top} bytes "
                             "(NotImplementedError in vLLM); try disabling the hybrid KV cache manager",
                             arg="hybrid_kv_cache_manager")
        out.append(replace(s, block_size=s.block_size * (top // s.page_bytes), page_bytes=top))
    return tuple(out)


def kv_cache_groups(specs: Specs) -> tuple[tuple[Group, ...], bool]:
    """vLLM get_kv_cache_groups -> (groups, uniform_type). uniform_type: one group whose layers
    differ only in page size (a block costs the sum of their pages)."""
    layers = [(i, s) for i, s in enumerate(specs) if s is not None]
    if len({s for _, s in layers}) == 1:
        return (Group(layers[0][1], tuple(i for i, _ in layers)),), False
    if len({(s.kind, s.block_size, s.window) for _, s in layers}) == 1:
        return (Group(layers[0][1], tuple(i for i, _ in layers)),), True
    return _hybrid_groups(unify_page_size(specs)), False


def _hybrid_groups(specs: Specs) -> tuple[Group, ...]:
    """Bucket by spec; group size = min type count (max if max < 1.5 × min); strided split."""
    buckets: dict[PagedSpec, list[int]] = {}
    for i, s in enumerate(specs):
        if s is not None:
            buckets.setdefault(s, []).append(i)
    counts = [len(v) for v in buckets.values()]
    size = max(counts) if max(counts) < 1.5 * min(counts) else min(counts)
    groups = []
    for spec, idx in buckets.items():
        n = cdiv(len(idx), size)
        groups += [Group(spec, tuple(idx[g::n])) for g in range(n)]
    return tuple(groups)


def group_width(groups: tuple[Group, ...], stage: range) -> int:
    """Layers one block id spans on a worker: the largest group's layer count there."""
    return max(sum(1 for i in g.layers if i in stage) for g in groups)


def stage_block_bytes(groups: tuple[Group, ...], specs: Specs, stage: range, uniform_type: bool) -> int:
    """Bytes one block id takes on a worker of this stage."""
    if uniform_type:
        return sum(s.page_bytes for i, s in enumerate(specs) if s and i in stage)
    return group_width(groups, stage) * groups[0].spec.page_bytes


def blocks_needed(spec: PagedSpec, max_model_len: int, in_flight_tokens: int, dcp: int, prefix_caching: bool,
                  reserve: SpecReserve = NO_SPEC) -> int:
    """Blocks one max_model_len request reserves in one group (vLLM max_memory_usage_bytes / page)."""
    bs, m = spec.block_size, max_model_len
    if isinstance(spec.spec, SlidingAttn):  # the window may straddle a block boundary: +1
        return cdiv(min(spec.window - 1 + reserve.retained_tokens + in_flight_tokens, m), bs) + 1
    if isinstance(spec.spec, ChunkedAttn):
        return cdiv(min(spec.window + in_flight_tokens, m), bs)
    if isinstance(spec.spec, LinearState):  # mamba_cache_mode align (prefix caching): state + one checkpoint
        return (2 if prefix_caching else 1) + reserve.state_blocks
    return cdiv(cdiv(m, dcp) if dcp > 1 else m, bs)
