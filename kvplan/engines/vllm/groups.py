"""vLLM 0.33's KV-cache grouping on one worker: module specs, page-size unification, hybrid groups
with padding, and blocks per request.

Follows ``vllm/v1/kv_cache_interface.py`` (page sizes, ``max_memory_usage_bytes``,
``UniformTypeKVCacheSpecs``) and ``vllm/v1/core/kv_cache_planning.py`` (``get_kv_cache_groups``,
``unify_kv_cache_spec_page_size``, ``_get_kv_cache_groups_uniform_page_size``). vLLM pages attention
*modules*: a decoder layer with two caches (``kvplan.specs.Composite``) is two modules here. Pure
arithmetic on frozen values; which backend and block size apply is decided in ``backends.py`` and
``mamba.py``.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.dtypes import KvDtype
from kvplan.errors import InputError
from kvplan.formulas.per_token import StateDtypes, encoder_bytes_per_token, part_bytes_per_token, part_state_bytes
from kvplan.memo import IdentityCache
from kvplan.records import Record
from kvplan.specs import (
    ChunkedAttn,
    CompressedMLA,
    CompressorState,
    CrossAttn,
    LayerSpec,
    LinearState,
    MLAAttn,
    Part,
    SlidingAttn,
    SlidingMLA,
    parts,
)
from kvplan.units import cdiv

# DeepSeek-V4's cache parts (deepseek_v4.py): here so that paging can tell one apart without importing that module
DSV4_PARTS = (CompressedMLA, SlidingMLA, CompressorState)


def is_deepseek_v4(parts: tuple[Part | None, ...]) -> bool:
    return any(isinstance(p, DSV4_PARTS) for p in parts)


class PagedSpec(Record):
    """One cache module on one worker as vLLM pages it: the per-GPU part, the block size it ends with
    and the bytes of one block (FullAttentionSpec, SlidingWindowSpec, MLAAttentionSpec, MambaSpec,
    CrossAttentionSpec, ...). `fixed_blocks`: the blocks one request reserves for a Mamba state,
    whatever its length; `encoder_tokens`: what a cross-attention module reserves per request."""

    spec: Part
    block_size: int
    page_bytes: int  # one block of this module (Mamba: the whole state, padded)
    fixed_blocks: int = 0
    encoder_tokens: int = 0

    @property
    def kind(self) -> str:
        return "mamba" if isinstance(self.spec, LinearState) else self.spec.kind

    @property
    def window(self) -> int:
        if isinstance(self.spec, SLIDING):
            return self.spec.window
        return self.spec.chunk_size if isinstance(self.spec, ChunkedAttn) else 0

    @property
    def family(self) -> str:
        """vLLM's uniform_type_base_spec (single_type_kv_cache_manager.py:2656-2730): MLA latents and
        indexer keys are FullAttentionSpecs; sliding and chunked layers match only on equal windows
        (DeepSeek-V4's sliding latent and compressor states are SlidingWindowSpecs)."""
        if self.kind in ("full", "mla", "indexer", "compressed_mla"):
            return "full"
        kind = "sliding" if isinstance(self.spec, SLIDING) else self.kind
        return f"{kind}:{self.window}" if self.window else kind


class Group(Record):
    """One KV-cache group: a page spec and the layers that share its block ids."""

    spec: PagedSpec
    layers: tuple[int, ...]  # module indices (padding is implicit: width - len)


Specs = tuple[PagedSpec | None, ...]
SLIDING = (SlidingAttn, SlidingMLA, CompressorState)  # vLLM SlidingWindowSpec (and SlidingWindowMLASpec)


class SpecReserve(Record):
    """What speculative decoding adds to one request's reserve (vLLM 0.33): tokens a sliding window keeps below
    itself so multi-module MTP can re-prefill them (``extra_retained_tokens``), and one state block per drafted
    token on Mamba layers (``num_speculative_blocks``)."""

    retained_tokens: int = 0
    state_blocks: int = 0


NO_SPEC = SpecReserve()


class Modules(Record):
    """The cache modules of a model's layers, in order: a composite layer gives one per part, a
    layer without cache one None; `stages` are the PP stages' module index ranges."""

    parts: tuple[Part | None, ...]
    stages: tuple[range, ...]


def modules(specs: tuple[LayerSpec, ...], stage_ranges: tuple[range, ...]) -> Modules:
    flat, starts = _FLAT.get(specs, None, lambda: _flat(specs))
    return Modules(parts=flat, stages=tuple(range(starts[r.start], starts[r.stop]) for r in stage_ranges))


def _flat(specs: tuple[LayerSpec, ...]) -> tuple[tuple[Part | None, ...], tuple[int, ...]]:
    """Every layer's cache modules in a row and where each layer's start, once per specs tuple: a layout of one TP
    shares it at every PP size, so what paging keys on the modules (kinds, paged specs) is found again."""
    out: list[Part | None] = []
    starts = []
    held: dict[int, tuple[Part | None, ...]] = {}  # by id: a layout's layers alike share one spec object
    for spec in specs:
        starts.append(len(out))
        found = held.get(id(spec))
        if found is None:
            found = held[id(spec)] = parts(spec) or (None,)
        out.extend(found)
    starts.append(len(out))
    return tuple(out), tuple(starts)


_FLAT: IdentityCache[tuple[tuple[Part | None, ...], tuple[int, ...]]] = IdentityCache(maxsize=256)


def paged_spec(spec: Part | None, dtype: KvDtype, state_dtypes: StateDtypes, block_size: int) -> PagedSpec | None:
    """A per-rank cache module -> vLLM's paged spec (None: the layer caches nothing)."""
    if spec is None:
        return None
    if isinstance(spec, LinearState):
        return PagedSpec(spec=spec, block_size=1, page_bytes=part_state_bytes(spec, state_dtypes))
    if isinstance(spec, CrossAttn):
        return PagedSpec(spec=spec, block_size=block_size, page_bytes=block_size * encoder_bytes_per_token(spec, dtype))
    return PagedSpec(spec=spec, block_size=block_size, page_bytes=block_size * part_bytes_per_token(spec, dtype))


def unify_page_size(specs: Specs) -> Specs:
    """Hybrids: a smaller page grows its block size by max_page / page when that divides; a Mamba
    page or a non-MLA attention page that does not divide is padded to the largest page
    (kv_cache_planning.py:346-409); an MLA page that does not divide is refused."""
    top = max(s.page_bytes for s in specs if s)
    out = []
    for s in specs:
        if s is None or s.page_bytes == top:
            out.append(s)
        elif s.kind == "mamba" or (top % s.page_bytes and not isinstance(s.spec, MLAAttn)):
            out.append(replace(s, page_bytes=top))
        elif top % s.page_bytes:
            raise InputError(f"vLLM cannot unify KV page sizes {s.page_bytes} and {top} bytes (an MLA page that "
                             "does not divide the largest; NotImplementedError in vLLM)", arg="kv_dtype")
        else:
            out.append(replace(s, block_size=s.block_size * (top // s.page_bytes), page_bytes=top))
    return tuple(out)


def kv_cache_groups(specs: Specs, ratio: float | None = 1.5, strided: bool = True) -> tuple[tuple[Group, ...], bool]:
    """vLLM get_kv_cache_groups -> (groups, uniform_type). uniform_type: one group whose layers
    share a base type and a block size but differ in pages (a block costs the sum of their pages:
    NAS per-layer heads, the MLA latent beside the sparse indexer key). `ratio` and `strided`: the
    release's group size rule and split (``VllmRelease.group_size_ratio``, ``hybrid_groups_strided``)."""
    layers = [(i, s) for i, s in enumerate(specs) if s is not None]
    # the layers share paged spec objects (paging pages each distinct part once): identity settles most cases
    # without hashing each spec
    if (layers and all(s is layers[0][1] for _, s in layers)) or len({s for _, s in layers}) == 1:
        return (Group(spec=layers[0][1], layers=tuple(i for i, _ in layers)),), False
    if len({(s.family, s.block_size) for _, s in layers}) == 1:
        return (Group(spec=layers[0][1], layers=tuple(i for i, _ in layers)),), True
    return _hybrid_groups(unify_page_size(specs), ratio, strided), False


def _hybrid_groups(specs: Specs, ratio: float | None, strided: bool) -> tuple[Group, ...]:
    """Bucket by spec; group size = min type count (max if max < ratio × min: 1.25 in 0.12-0.17, 1.5 from 0.18;
    always min in 0.9.2-0.11); strided split (0.11 on), contiguous before."""
    buckets: dict[PagedSpec, list[int]] = {}
    for i, s in enumerate(specs):
        if s is not None:
            buckets.setdefault(s, []).append(i)
    counts = [len(v) for v in buckets.values()]
    size = max(counts) if ratio is not None and max(counts) < ratio * min(counts) else min(counts)
    groups = []
    for spec, idx in buckets.items():
        n = cdiv(len(idx), size)
        groups += [Group(spec=spec, layers=tuple(idx[g::n] if strided else idx[g * size:(g + 1) * size]))
                   for g in range(n)]
    return tuple(groups)


def group_width(groups: tuple[Group, ...], stage: range) -> int:
    """Layers one block id spans on a worker: the largest group's layer count there (once per groups tuple and
    stage: the planner's groups of a cached layout are one object, counted by the budget, the check and the rows)."""
    return _WIDTHS.get(groups, stage, lambda: max(sum(1 for i in g.layers if i in stage) for g in groups))


_WIDTHS: IdentityCache[int] = IdentityCache()


def stage_block_bytes(groups: tuple[Group, ...], specs: Specs, stage: range, uniform_type: bool) -> int:
    """Bytes one block id takes on a worker of this stage."""
    if uniform_type:
        return sum(s.page_bytes for i, s in enumerate(specs) if s and i in stage)
    return group_width(groups, stage) * groups[0].spec.page_bytes


def blocks_needed(spec: PagedSpec, max_model_len: int, in_flight_tokens: int, dcp: int,
                  reserve: SpecReserve = NO_SPEC) -> int:
    """Blocks one max_model_len request reserves in one group (vLLM max_memory_usage_bytes / page)."""
    bs, m = spec.block_size, max_model_len
    if isinstance(spec.spec, SLIDING):  # the window may straddle a block boundary: +1
        return cdiv(min(spec.window - 1 + reserve.retained_tokens + in_flight_tokens, m), bs) + 1
    if isinstance(spec.spec, ChunkedAttn):
        return cdiv(min(spec.window + in_flight_tokens, m), bs)
    if isinstance(spec.spec, LinearState):  # + one state block per drafted token (0.33, kv_cache_interface.py:1135-1141)
        return spec.fixed_blocks + reserve.state_blocks
    if isinstance(spec.spec, CrossAttn):
        return cdiv(spec.encoder_tokens, bs)
    return cdiv(cdiv(m, dcp) if dcp > 1 else m, bs)
