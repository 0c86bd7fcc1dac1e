"""The layout of a model's cache: everything about it that does not depend on seq_len or batch.

``build_layout`` chains the pure steps once: config -> one spec per layer (``layers``) -> the
per-GPU spec of each layer under TP (``sharding``) -> groups of identical layers with their bytes
per token and per sequence -> the load one GPU of each PP stage carries. ``kvplan size``, every
engine profile, the workflows and the probe read the same frozen ``Layout``.

Engines lay a cache out differently in a few ways only; ``LayoutPolicy`` names them as data (the
defaults are vLLM's, which ``kvplan size`` follows):
- ``head_split``: KV heads per TP rank, floor with replication (vLLM, SGLang) or ceil (TRT-LLM);
- ``attention_tp``: the TP size heads are split over (SGLang DP attention: tp // dp);
- ``mla``: the latent (engines) or the decompressed per-head K/V (transformers);
- ``windows``: tokens a sliding/chunked layer keeps: its window (vLLM; SGLang's hybrid-SWA pool),
  window − 1 (transformers' DynamicSlidingWindowLayer), or every token (TRT-LLM without
  max_attention_window; vLLM with the hybrid KV cache manager disabled; SGLang's other models);
- ``v_as_k``: V heads stored as wide as K (a release that pads a narrower V);
- ``cross_as_self``: a layer whose only cache is cross-attention (mllama) holds a page of every block, as
  vLLM's V0 ``CacheEngine`` gives every attention layer (0.10.1.1 worker/cache_engine.py:121-145).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Literal, NamedTuple

from kvplan.config.model import ModelConfig
from kvplan.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.layers import Overrides, attention_kind, layer_specs
from kvplan.formulas.per_token import (
    StateDtypes,
    encoder_bytes_per_token,
    kv_bytes_per_token,
    part_bytes_per_state,
    state_bytes_per_sequence,
    state_dtypes,
    tokens_per_state,
)
from kvplan.formulas.request import DEFAULT_BLOCK_SIZE, CacheRequest, cache_request
from kvplan.formulas.sharding import HeadSplit, check_parallel, pp_ranges, shard_spec
from kvplan.memo import IdentityCache
from kvplan.records import Record
from kvplan.specs import (
    AttnSpec,
    Composite,
    CrossAttn,
    FullAttn,
    LayerSpec,
    LinearState,
    Part,
    WindowAttn,
    parts,
    token_limit,
    window_tokens,
)
from kvplan.units import cdiv

WindowRule = Literal["window", "window-1", "full"]


class LayoutPolicy(Record):
    """How an engine lays out the cache where engines differ (see the module docstring)."""

    head_split: HeadSplit = "floor"
    attention_tp: int | None = None
    mla: Literal["latent", "decompressed"] = "latent"
    windows: WindowRule = "window"
    v_as_k: bool = False  # V stored at the K width (vLLM 0.14-0.19 pads MiMo-V2's V to its head_dim)
    cross_as_self: bool = False  # a cross-attention layer paged as any other layer (vLLM's V0 CacheEngine)


DEFAULT_POLICY = LayoutPolicy()


def held_tokens(limit: int | None, tokens: int) -> int:
    """Tokens of a `tokens`-long sequence a layer holds: all (None), or at most its limit."""
    return tokens if limit is None else min(tokens, limit)


def paged(tokens: int, block_size: int) -> int:
    """Token slots of whole blocks: cdiv(tokens, block) × block (block 0: no paging)."""
    return cdiv(tokens, block_size) * block_size if block_size else tokens


class PartLoad(NamedTuple):
    """One cache of a layer as a Load counts it: tokens it keeps (None: all), tokens per stored entry (1, or a
    compressed cache's ratio) and the bytes of one entry, whole and per GPU (0: no per-token bytes)."""

    token_limit: int | None
    tokens_per_state: int
    bytes_per_state: int
    bytes_per_state_per_gpu: int


class Group(Record):
    """Identical layers of one model: how much one layer holds, whole and per GPU."""

    spec: LayerSpec
    spec_per_gpu: LayerSpec
    num_layers: int
    token_limit: int | None  # tokens of a sequence a layer keeps (None: all; 0: a fixed state)
    bytes_per_token_per_layer: int
    bytes_per_token_per_layer_per_gpu: int
    state_bytes_per_layer: int  # per sequence, linear/Mamba layers
    state_bytes_per_layer_per_gpu: int
    stage_layers: tuple[int, ...]  # layers of this group on each PP stage
    encoder_tokens: int = 0  # cross-attention: encoder tokens a sequence keeps (Whisper)
    encoder_bytes_per_token_per_layer: int = 0
    encoder_bytes_per_token_per_layer_per_gpu: int = 0
    part_loads: tuple[PartLoad, ...] = ()  # each cache of the layer (a composite's caches keep their own windows)

    @property
    def window(self) -> int | None:
        """The config's window or chunk (what a table shows), whatever the engine keeps."""
        return window_tokens(self.spec)


class Load(Record, kw_only=False):
    """Bytes a set of layers holds for one sequence: full layers, windowed layers, fixed state,
    cross-attention caches of the encoder's tokens, and compressed caches (one entry per `ratio` tokens)."""

    full_bytes_per_token: int
    windowed: tuple[tuple[int, int], ...]  # (tokens kept, bytes per token)
    state_bytes: int
    encoder: tuple[tuple[int, int], ...] = ()  # (encoder tokens, bytes per encoder token)
    compressed: tuple[tuple[int, int, int], ...] = ()  # (tokens per entry, bytes per entry, layers)

    def bytes_per_token(self) -> int:
        """Bytes one more token adds to every layer (a compressed cache: its entry / ratio, rounded up per layer)."""
        compressed = sum(n * cdiv(b, r) for r, b, n in self.compressed)
        return self.full_bytes_per_token + sum(b for _, b in self.windowed) + compressed

    def sequence_bytes(self, tokens: int, block_size: int = 0) -> int:
        """full × t + Σ window bytes × min(t, W) + state + Σ entry bytes × cdiv(t, ratio), each rounded up to
        blocks if paged."""
        held = paged(tokens, block_size)
        compressed = sum(n * b * cdiv(held, r) for r, b, n in self.compressed)
        return self.full_bytes_per_token * held + self.bounded_bytes(tokens, block_size) + compressed

    def bounded_bytes(self, tokens: int, block_size: int = 0) -> int:
        """What does not grow past a window: Σ window bytes × min(t, W) (paged if asked) + state
        + encoder tokens × cross bytes (paged if asked)."""
        encoder = sum(b * paged(t, block_size) for t, b in self.encoder)
        return sum(b * paged(min(tokens, w), block_size) for w, b in self.windowed) + self.state_bytes + encoder


class Layout(Record):
    """Everything about a cache that does not depend on seq_len or batch."""

    model: ModelConfig
    specs: tuple[LayerSpec, ...]  # one per layer, as the engine stores it (whole model)
    specs_per_gpu: tuple[LayerSpec, ...]  # one per layer, on one TP rank
    attention: str
    kv_dtype: KvDtype
    state_dtype: KvDtype  # vLLM mamba_cache_dtype: conv states (and the recurrent one unless ssm_state_dtype)
    ssm_state_dtype: KvDtype | None  # vLLM mamba_ssm_cache_dtype; None: auto (per layer, see StateDtypes)
    tp: int
    pp: int
    dcp: int
    block_size: int
    policy: LayoutPolicy
    groups: tuple[Group, ...]
    whole: Load  # the unsharded model
    stages: tuple[Load, ...]  # one GPU of each PP stage
    stage_ranges: tuple[range, ...]  # the layers of each PP stage

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp

    def heaviest_stage(self, tokens: int, block_size: int = 0) -> int:
        """The PP stage whose GPU holds the most bytes for one sequence (the first of equals)."""
        if len(self.stages) == 1:
            return 0
        return max(range(len(self.stages)), key=lambda s: (self.stages[s].sequence_bytes(tokens, block_size), -s))

    def sequence_bytes_per_gpu(self, tokens: int, block_size: int = 0) -> int:
        """Bytes one sequence of `tokens` takes on the most loaded GPU (paged when block_size > 0)."""
        return max(stage.sequence_bytes(tokens, block_size) for stage in self.stages)


def _load(groups: tuple[Group, ...], counts: list[int], per_gpu: bool) -> Load:
    full, windowed, state, encoder, compressed = 0, [], 0, [], []
    for group, count in zip(groups, counts, strict=True):
        state += count * (group.state_bytes_per_layer_per_gpu if per_gpu else group.state_bytes_per_layer)
        cross = group.encoder_bytes_per_token_per_layer_per_gpu if per_gpu else group.encoder_bytes_per_token_per_layer
        if cross and count:
            encoder.append((group.encoder_tokens, count * cross))
        for part in group.part_loads:
            one = part.bytes_per_state_per_gpu if per_gpu else part.bytes_per_state
            entry = count * one
            if not entry:
                continue
            if part.tokens_per_state > 1:
                compressed.append((part.tokens_per_state, one, count))
            elif part.token_limit is None:
                full += entry
            else:
                windowed.append((part.token_limit, entry))
    return Load(full, tuple(windowed), state, tuple(encoder), tuple(compressed))


def _engine_specs(model: ModelConfig, overrides: Overrides | None, policy: LayoutPolicy) -> tuple[LayerSpec, ...]:
    """layer_specs, with the MLA and window rules of the engine's policy applied."""
    if policy.mla == "decompressed" and model.is_mla and overrides is None:
        overrides = Overrides(attention="mha")
    specs = layer_specs(model, overrides)
    if policy.v_as_k:
        specs = tuple(replace(s, v_head_dim=s.head_dim) if isinstance(s, AttnSpec) else s for s in specs)
    if policy.cross_as_self:
        specs = tuple(FullAttn(num_kv_heads=s.num_kv_heads, head_dim=s.head_dim, v_head_dim=s.v_head_dim)
                      if isinstance(s, CrossAttn) else s for s in specs)
    if policy.windows != "full":
        return specs
    return tuple(_unwindowed(s) for s in specs)


def _unwindowed(spec: LayerSpec) -> LayerSpec:
    """A window layer as full attention (engines that keep every token on every layer)."""
    if isinstance(spec, Composite):
        return Composite(parts=tuple(_unwindowed(p) for p in spec.parts))  # type: ignore[misc]
    if isinstance(spec, WindowAttn):
        return FullAttn(num_kv_heads=spec.num_kv_heads, head_dim=spec.head_dim, v_head_dim=spec.v_head_dim)
    return spec


def _token_limit(spec: LayerSpec, policy: LayoutPolicy) -> int | None:
    limit = token_limit(spec)
    if policy.windows == "window-1" and isinstance(spec, AttnSpec) and limit:
        return limit - 1
    return limit


def _part_loads(spec: LayerSpec, per_gpu: LayerSpec, dtype: KvDtype, policy: LayoutPolicy) -> tuple[PartLoad, ...]:
    """Each cache of a layer with its own token limit (cross-attention and states hold no per-token bytes)."""
    return tuple(PartLoad(_token_limit(p, policy), tokens_per_state(p), _entry_bytes(p, dtype), _entry_bytes(g, dtype))
                 for p, g in zip(parts(spec), parts(per_gpu), strict=True))


def _entry_bytes(part: Part, dtype: KvDtype) -> int:
    return 0 if isinstance(part, (CrossAttn, LinearState)) else part_bytes_per_state(part, dtype)


def build_layout(model: ModelConfig, request: CacheRequest | None = None, policy: LayoutPolicy = DEFAULT_POLICY,
                 *, unpaged: bool = False, **fields: Any) -> Layout:
    """Specs -> per-GPU specs -> groups of identical layers -> per-GPU loads of every PP stage, for a
    CacheRequest or its fields as keywords (``build_layout(m, tp=4, kv_dtype="fp8")``); `unpaged`: block size 0
    whatever the request's, as an engine is handed the layout to page itself.

    One layout per (model, the request's layout fields, policy), cached: lengths and batches do not change it.
    """
    if fields or request is None:
        request = cache_request(request, **fields)
    block = 0 if unpaged else request.paged_in(DEFAULT_BLOCK_SIZE)
    key = (model, request.shape_fields, block, policy)
    try:
        return _LAYOUTS[key]
    except KeyError:
        if len(_LAYOUTS) >= MAX_CACHED_LAYOUTS:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = _build_layout(model, request, policy, block)
        return layout


MAX_CACHED_LAYOUTS = 4096
_LAYOUTS: dict[tuple[ModelConfig, tuple[Any, ...], int, LayoutPolicy], Layout] = {}


def _build_layout(model: ModelConfig, request: CacheRequest, policy: LayoutPolicy, block_size: int) -> Layout:
    specs = _engine_specs(model, request.overrides, policy)
    tp, pp, dcp = request.tp, request.pp, request.dcp
    check_parallel(specs, model.num_attention_heads, tp, pp, dcp)
    dtype = resolve_kv_dtype(request.kv_dtype, model.dtype, request.quant_group, checkpoint=model.kv_cache_dtype)
    dtypes = state_dtypes(request.state_dtype, request.ssm_state_dtype, model.dtype)
    shard_tp = policy.attention_tp or tp
    distinct, kind_of = _kinds(specs)
    per_gpu, specs_per_gpu = _sharded(specs, (distinct, kind_of), shard_tp, policy.head_split)
    ranges = pp_ranges(len(specs), pp)
    counts = [Counter(kind_of[r.start : r.stop]) for r in ranges]
    totals = Counter(kind_of)
    groups = tuple(_group(spec, totals[k], per_gpu[k], dtype, dtypes, [c[k] for c in counts], policy)
                   for k, spec in enumerate(distinct))
    return Layout(
        model=model, specs=specs, specs_per_gpu=specs_per_gpu,
        attention=_ATTENTION.get(specs, model.num_attention_heads,
                                 lambda: attention_kind(specs, model.num_attention_heads)), kv_dtype=dtype, state_dtype=dtypes.conv,
        ssm_state_dtype=dtypes.ssm, tp=tp, pp=pp, dcp=dcp, block_size=block_size,
        policy=policy, groups=groups, stage_ranges=ranges,
        whole=_load(groups, [g.num_layers for g in groups], per_gpu=False),
        stages=tuple(_load(groups, [g.stage_layers[s] for g in groups], per_gpu=True) for s in range(pp)),
    )


def _kinds(specs: tuple[LayerSpec, ...]) -> tuple[tuple[LayerSpec, ...], tuple[int, ...]]:
    """The distinct specs in first-seen order and each layer's index among them, once per specs tuple: a spec's
    hash walks its fields, and fit lays out one model's specs again for every layout it tries."""
    def compute() -> tuple[tuple[LayerSpec, ...], tuple[int, ...]]:
        first: dict[LayerSpec, int] = {}
        kind_of = tuple(first.setdefault(s, len(first)) for s in specs)
        return tuple(first), kind_of
    return _KINDS.get(specs, None, compute)


_KINDS: IdentityCache[tuple[tuple[LayerSpec, ...], tuple[int, ...]]] = IdentityCache(maxsize=64)
def _sharded(specs: tuple[LayerSpec, ...], kinds: tuple[tuple[LayerSpec, ...], tuple[int, ...]], tp: int,
             split: HeadSplit) -> tuple[tuple[LayerSpec, ...], tuple[LayerSpec, ...]]:
    """(each distinct spec on one GPU, each layer's), once per specs tuple, TP and head split: the layouts of one TP
    at every PP size share them, and the engine's paging, keyed on the per-GPU tuple's identity, finds them again."""
    distinct, kind_of = kinds

    def compute() -> tuple[tuple[LayerSpec, ...], tuple[LayerSpec, ...]]:
        per_gpu = tuple(shard_spec(s, tp, split) for s in distinct)
        return per_gpu, tuple(per_gpu[k] for k in kind_of)
    return _SHARDED.get(specs, (tp, split), compute)


_SHARDED: IdentityCache[tuple[tuple[LayerSpec, ...], tuple[LayerSpec, ...]]] = IdentityCache(maxsize=256)
_ATTENTION: IdentityCache[str] = IdentityCache(maxsize=64)  # attention_kind, once per specs tuple (every layout reads it)


def _group(spec: LayerSpec, count: int, per_gpu: LayerSpec, dtype: KvDtype, states: StateDtypes,
           stage_layers: list[int], policy: LayoutPolicy) -> Group:
    cross = next((p for p in parts(spec) if isinstance(p, CrossAttn)), None)
    return Group(
        spec=spec, spec_per_gpu=per_gpu, num_layers=count, token_limit=_token_limit(spec, policy),
        bytes_per_token_per_layer=kv_bytes_per_token(spec, dtype),
        bytes_per_token_per_layer_per_gpu=kv_bytes_per_token(per_gpu, dtype),
        state_bytes_per_layer=state_bytes_per_sequence(spec, states),
        state_bytes_per_layer_per_gpu=state_bytes_per_sequence(per_gpu, states),
        stage_layers=tuple(stage_layers), encoder_tokens=cross.encoder_tokens if cross else 0,
        encoder_bytes_per_token_per_layer=encoder_bytes_per_token(spec, dtype),
        encoder_bytes_per_token_per_layer_per_gpu=encoder_bytes_per_token(per_gpu, dtype),
        part_loads=_part_loads(spec, per_gpu, dtype, policy),
    )


def with_block_size(layout: Layout, block_size: int) -> Layout:
    """The same layout paged in blocks of another size (an engine's final block size)."""
    return layout if block_size == layout.block_size else replace(layout, block_size=block_size)
