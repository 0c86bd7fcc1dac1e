"""vLLM 0.33's paged spec of every cache module on one worker: backend and block size, Mamba
alignment and padding (``mamba.py``), the blocks a request reserves for its fixed caches.

Cross-attention (Whisper) reserves ``cdiv(max_num_encoder_input_tokens, block)`` blocks, and
``max_num_encoder_input_tokens`` is ``max_num_batched_tokens`` (vllm/v1/kv_cache_interface.py:1220-1228,
vllm/config/scheduler.py:306), which an encoder-decoder model, having no chunked prefill, raises to
at least max_model_len (vllm/engine/arg_utils.py:3190-3199).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kvplan.engines.base import Request
from kvplan.engines.vllm.backends import DEFAULT_BLOCK_SIZE, attention_backend, is_hopper
from kvplan.engines.vllm.groups import Modules, PagedSpec, Specs, is_deepseek_v4, modules, paged_spec
from kvplan.engines.vllm.releases import NEWEST, RELEASES, VllmRelease
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout
from kvplan.formulas.per_token import StateDtypes
from kvplan.memo import IdentityCache
from kvplan.records import Record

if TYPE_CHECKING:  # mamba.py and deepseek_v4.py are imported where a model has such caches (most have none)
    from kvplan.engines.vllm.mamba import MambaRules
from kvplan.specs import AttnSpec, CrossAttn, IndexerCache, LayerSpec, LinearState, MLAAttn, Part, parts

MAX_NUM_BATCHED_TOKENS = 8192  # vLLM 0.33 `vllm serve` default on an H100
MAMBA_ALIGN_BLOCK = 16  # attention-free models in align mode: mamba_block_size = cache_config.block_size


class Paging(Record):
    """The paged specs of one worker's cache modules, and how their block size was chosen."""

    specs: Specs
    stages: tuple[range, ...]  # module indices of each PP stage
    backend: str
    block_size: int  # of attention layers, after any Mamba alignment
    mamba_alignment: int | None  # set when a Mamba hybrid's alignment set the block size
    mamba_align_mode: bool = False
    packed: tuple[int, ...] | None = None  # block-outermost packing (DeepSeek-V4): each module's stride alignment


def max_num_batched_tokens(req: Request) -> int:
    batched = req.settings.max_num_batched_tokens or MAX_NUM_BATCHED_TOKENS
    encoder_decoder = any(isinstance(p, CrossAttn) for s in req.model.layer_specs for p in parts(s))
    if encoder_decoder and not req.settings.max_num_batched_tokens:
        return max(batched, req.max_model_len)
    return batched


def prefix_caching(req: Request, layout: Layout, rel: VllmRelease = RELEASES[NEWEST]) -> bool:
    """vLLM's default: on, except for attention-free models (pure Mamba), encoder-decoders, and hybrids before 0.28
    (ModelConfig.is_prefix_caching_supported: hybrids out in 0.12.0 config/model.py:1839-1843 to 0.25.0 :1883-1887,
    in from 0.26 where 0.26-0.27 engine/arg_utils.py:2519-2522 leave them out of the default; 0.28.0
    engine/arg_utils.py:2650, config/model.py:2072-2074)."""
    if req.settings.vllm.prefix_caching is not None:
        return req.settings.vllm.prefix_caching
    kinds = {type(p) for s in layout.specs for p in parts(s)}
    hybrid = LinearState in kinds and len(kinds) > 1
    return bool(kinds - {LinearState}) and CrossAttn not in kinds and (rel.hybrid_prefix_caching or not hybrid)


def mamba_rules(req: Request, layout: Layout, rel: VllmRelease, states: list[LinearState]) -> MambaRules:
    """The release's Mamba cache mode for this request: "align" where prefix caching is on and the release has
    it (0.15 on), else one state block per request; a model vLLM gives mode "all" is refused (not modelled)."""
    from kvplan.engines.vllm.mamba import MambaRules

    cached = prefix_caching(req, layout, rel)
    archs = req.model.raw.get("architectures") or []
    all_mode = [a for a in archs if a in rel.mamba_all_mode_architectures]
    if cached and all_mode:
        raise InputError(f"{rel.label} caches {all_mode[0]}'s Mamba states per block under prefix caching "
                         "(0.15-0.27 mamba_cache_mode 'all', model_executor/models/config.py), which kvplan does not model; "
                         "plan it with prefix caching off", arg="prefix_caching")
    return MambaRules(align=cached and rel.mamba_align_mode, gdn_flashinfer=_gdn_flashinfer(req, states),
                      legacy=rel.hybrid_block_legacy, checkpoints=rel.mamba_checkpoint_mixers)


def _deepseek_v4_paging(req: Request, layout: Layout, mods: Modules) -> Paging:
    """DeepSeek-V4's compressed caches and their packed pages (kvplan.engines.vllm.deepseek_v4, imported for it)."""
    from kvplan.engines.vllm import deepseek_v4

    specs, name, block, aligns = deepseek_v4.paged_specs(req, mods.parts, layout.kv_dtype)
    return Paging(specs=specs, stages=mods.stages, backend=name, block_size=block, mamba_alignment=None, packed=aligns)


def paging(req: Request, layout: Layout, rel: VllmRelease = RELEASES[NEWEST]) -> Paging:
    """Backend and block size, then every module's paged spec (Mamba hybrids raise the block size).

    `rel`: the release's Mamba cache mode (``mamba_rules``) and hybrid block rule; before 0.29 the hybrid
    block is 16 · cdiv(state page, 16 · attention page per token) (vllm 0.11 model_executor/models/config.py:
    315-400). A draft's KV layers follow the target's on the last stage: they register in the same forward
    context and share its pool (speculative.py). The FlashMLA block releases before 0.18 force on Hopper:
    0.11 platforms/cuda.py:161-167 whatever the size, 0.12-0.17 unless a multiple (``_forced_mla_block``)."""
    own = layout.specs_per_gpu  # the cached layout's tuple: the same object call after call (_MODULES' key)
    per_gpu, stages = _with_draft(req, layout, rel) if req.draft else (own, layout.stage_ranges)
    bounds = tuple((r.start, r.stop) for r in stages)  # not the ranges: two empty ranges are equal
    mods = _MODULES.get(per_gpu, bounds, lambda: modules(per_gpu, stages))
    kinds = _KINDS.get(mods.parts, (), lambda: _kinds(mods.parts))
    if kinds.deepseek_v4:
        return _deepseek_v4_paging(req, layout, mods)
    backend, bs, kernel = _backend(req, layout, kinds, rel)
    dtypes = StateDtypes(layout.state_dtype, layout.ssm_state_dtype)
    specs = _SPECS.get(mods.parts, (layout.kv_dtype, dtypes, bs), lambda: _paged_specs(mods.parts, layout, dtypes, bs))
    if kinds.cross:
        specs = _with_cross_blocks(specs, max_num_batched_tokens(req))
    states = [s.spec for s in specs if s and isinstance(s.spec, LinearState)] if kinds.linear else []
    if not states:
        return Paging(specs=specs, stages=mods.stages, backend=backend, block_size=bs, mamba_alignment=None)
    from kvplan.engines.vllm.mamba import checkpoint_alignment, hybrid_block_size

    rules = mamba_rules(req, layout, rel, states)
    attention = [s for s in specs if s and not isinstance(s.spec, (LinearState, CrossAttn, IndexerCache))]
    if not attention:  # attention-free: unpadded states, block = 16 (align) or max_model_len
        block = MAMBA_ALIGN_BLOCK if rules.align else req.max_model_len
        return Paging(specs=_states(specs, rules, block, None), stages=mods.stages, backend=backend, block_size=block,
                      mamba_alignment=None, mamba_align_mode=rules.align)
    per_token = attention[0].page_bytes // attention[0].block_size
    state_page = max(s.page_bytes for s in specs if s and isinstance(s.spec, LinearState))
    alignment = checkpoint_alignment(states, rules)
    block = hybrid_block_size(bs, kernel, per_token, state_page, kinds.mla, alignment, rules.legacy)
    raised = tuple(replace(s, block_size=block, page_bytes=s.page_bytes // s.block_size * block)
                   if s and not isinstance(s.spec, LinearState) else s for s in specs)
    return Paging(specs=_states(raised, rules, block if rules.align else req.max_model_len, block * per_token),
                  stages=mods.stages, backend=backend, block_size=block, mamba_alignment=alignment,
                  mamba_align_mode=rules.align)


def _with_draft(req: Request, layout: Layout, rel: VllmRelease) -> tuple[tuple[LayerSpec, ...], tuple[range, ...]]:
    """A draft's layers after the target's, on the last stage (speculative.py, imported for a draft only)."""
    from kvplan.engines.vllm import speculative

    assert req.draft is not None
    own = (*layout.specs_per_gpu, *req.draft.specs_per_gpu)
    return speculative.with_draft_conv_rows(own, req, rel), speculative.worker_stages(req, layout)


def kept_block_size(req: Request, rel: VllmRelease, pages: Paging) -> int:
    """The block size vLLM keeps after planning: from 0.18 the smallest group block (0.18.0 v1/engine/core.py:271-275);
    before, the config's, which the hybrid alignment raises but an attention-free model leaves as asked (16)."""
    attention_free = all(s is None or s.kind == "mamba" for s in pages.specs)
    if rel.block_size_from_groups or not attention_free or rel.generation == "V0":
        return pages.block_size
    return req.cache.block_size or DEFAULT_BLOCK_SIZE


def _forced_mla_block(req: Request, dense_mla: bool, rel: VllmRelease) -> int | None:
    asked, size = req.cache.block_size, rel.mla_block_forced
    if size is None or not dense_mla or not is_hopper(req.gpu_name):
        return asked
    return asked if asked and (asked == size or (rel.mla_block_multiples and asked % size == 0)) else size


class Kinds(Record):
    """What the backend choice and the paging ask of a worker's cache modules, read once per modules tuple."""

    mla: bool
    sparse_mla: bool
    head_size: int  # the widest attention head (0: none)
    diff_kv: bool  # an attention module whose V width differs from its K width
    index_key: bool  # a sparse-attention indexer key without scales
    cross: bool  # cross-attention (Whisper): its reserve follows max_num_batched_tokens
    linear: bool  # a linear-attention / Mamba state
    deepseek_v4: bool


def _kinds(parts_: tuple[Part | None, ...]) -> Kinds:
    mla = [p for p in parts_ if isinstance(p, MLAAttn)]
    heads = [p for p in parts_ if isinstance(p, AttnSpec)]
    return Kinds(mla=bool(mla), sparse_mla=any(p.sparse for p in mla),
                 head_size=max((p.head_dim for p in heads), default=0),
                 diff_kv=any(p.v_head_dim != p.head_dim for p in heads),
                 index_key=any(isinstance(p, IndexerCache) and not p.scales for p in parts_),
                 cross=any(isinstance(p, CrossAttn) for p in parts_), linear=any(isinstance(p, LinearState) for p in parts_),
                 deepseek_v4=is_deepseek_v4(parts_))


# A cached layout pages the same modules on every call (fit: the same model on many GPUs and layouts): its modules,
# what they hold and their paged specs are computed once per tuple (kvplan.memo: by identity, bounded).
_MODULES: IdentityCache[Modules] = IdentityCache()
_KINDS: IdentityCache[Kinds] = IdentityCache()
_SPECS: IdentityCache[Specs] = IdentityCache()


def _paged_specs(parts_: tuple[Part | None, ...], layout: Layout, dtypes: StateDtypes, block_size: int) -> Specs:
    """Each module's paged spec, once per part object: a layout's layers alike share one per-GPU part."""
    found: dict[int, PagedSpec | None] = {}  # by id: parts_ holds every part while this runs
    for p in parts_:
        if id(p) not in found:
            found[id(p)] = paged_spec(p, layout.kv_dtype, dtypes, block_size)
    return tuple(found[id(p)] for p in parts_)


def _backend(req: Request, layout: Layout, kinds: Kinds, rel: VllmRelease) -> tuple[str, int, int]:
    asked = _forced_mla_block(req, kinds.mla and not kinds.sparse_mla, rel)
    return attention_backend(kinds.mla, layout.kv_dtype, asked, req.gpu_name, sparse=kinds.sparse_mla,
                             head_size=kinds.head_size, diff_kv=kinds.diff_kv,
                             capability=req.device.compute_capability if req.device else None,
                             index_key=kinds.index_key)


def _gdn_flashinfer(req: Request, states: list[LinearState]) -> bool:
    from kvplan.engines.vllm.mamba import gdn_flashinfer

    key_dim = req.model.raw.get("linear_key_head_dim")
    return any(s.mixer == "gdn" for s in states) and gdn_flashinfer(req.gpu_name, key_dim or 0)


def _states(specs: Specs, rules: MambaRules, block: int, padded: int | None) -> Specs:
    """State pages padded to the attention page (hybrids), with their block size and reserve."""
    from kvplan.engines.vllm.mamba import state_blocks

    def state(s: PagedSpec) -> PagedSpec:
        assert isinstance(s.spec, LinearState)
        return replace(s, block_size=block, page_bytes=padded or s.page_bytes, fixed_blocks=state_blocks(s.spec, rules))
    return tuple(state(s) if s and isinstance(s.spec, LinearState) else s for s in specs)


def _with_cross_blocks(specs: Specs, encoder_tokens: int) -> Specs:
    return tuple(replace(s, encoder_tokens=encoder_tokens) if s and isinstance(s.spec, CrossAttn) else s
                 for s in specs)
