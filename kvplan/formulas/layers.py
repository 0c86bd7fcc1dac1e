"""A normalized config's own per-layer specs, with the user's overrides applied on top.

``kvplan.config`` builds one spec per decoder layer from the config (``ModelConfig.layer_specs``:
per-layer geometry, windows, states, shared and no-op layers). This module applies ``Overrides``
(``--attention``, ``--kv-heads``, ``--layer-types``, ``--window``) to them. Pure: no IO.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.records import Record
from kvplan.specs import (
    LAYER_KINDS,
    AttnSpec,
    ChunkedAttn,
    Composite,
    CrossAttn,
    FullAttn,
    IndexerCache,
    LayerSpec,
    LinearState,
    MLAAttn,
    NoKV,
    Part,
    SlidingAttn,
    parts,
)

ATTENTION_OVERRIDES = ("mha", "gqa", "mqa", "mla")


class Overrides(Record):
    """User overrides of what the config says: attention kind, KV heads, layer kinds, window."""

    attention: str | None = None  # mha | gqa | mqa | mla
    kv_heads: int | None = None
    layer_kinds: tuple[tuple[int, int, str], ...] = ()  # (first, last, kind), inclusive ranges
    window: int | None = None


NO_OVERRIDES = Overrides()


def parse_layer_ranges(text: str, num_layers: int | None = None) -> tuple[tuple[int, int, str], ...]:
    """"0-15:full,16-31:sliding" -> ((0, 15, "full"), (16, 31, "sliding")), within `num_layers` when given
    (layer_specs checks them against the model's layers in any case)."""
    ranges: list[tuple[int, int, str]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        span, sep, kind = part.partition(":")
        first, dash, last = span.partition("-")
        if not sep or kind not in LAYER_KINDS or not first.strip().isdigit() or (dash and not last.strip().isdigit()):
            raise InputError(f"invalid layer_types entry {part!r}: expected FIRST-LAST:KIND with KIND "
                             f"one of {', '.join(LAYER_KINDS)}", arg="layer_types")
        lo, hi = int(first), int(last) if dash else int(first)
        if lo > hi or (num_layers is not None and hi >= num_layers):
            raise InputError(f"layer_types range {lo}-{hi} is outside layers 0-{(num_layers or hi + 1) - 1}"
                             if lo <= hi else f"layer_types range {lo}-{hi} runs backwards", arg="layer_types")
        _no_overlap(ranges, lo, hi)
        ranges.append((lo, hi, kind))
    return tuple(ranges)


def _no_overlap(ranges: list[tuple[int, int, str]], lo: int, hi: int) -> None:
    """Two ranges naming one layer: a conflict (exit 2, both named), never the later one silently."""
    for first, last, kind in ranges:
        if lo <= last and first <= hi:
            raise InputError(f"layer_types ranges {first}-{last}:{kind} and {lo}-{hi} overlap "
                             f"(layers {max(lo, first)}-{min(hi, last)}): give each layer one kind", arg="layer_types")


def _kv_heads(model: ModelConfig, ov: Overrides, own: int) -> int:
    heads = ov.kv_heads or {"mha": model.num_attention_heads, "mqa": 1}.get(ov.attention or "", own)
    if ov.attention == "gqa" and heads in (1, model.num_attention_heads) and not ov.kv_heads:
        raise InputError(f"attention gqa: the config has {heads} KV heads; give the group count with kv_heads",
                         arg=("attention", "kv_heads"))
    if heads <= 0 or model.num_attention_heads % heads:
        raise InputError(f"{heads} KV heads do not divide {model.num_attention_heads} attention heads",
                         arg="kv_heads")
    return heads


def _decompressed(model: ModelConfig, ov: Overrides) -> FullAttn:
    """An MLA layer as the decompressed per-head view (--attention mha: K = nope + rope, V)."""
    if ov.attention != "mha" or ov.kv_heads:
        raise InputError("an MLA model can be overridden only with attention mha (decompressed K/V)", arg="attention")
    k_dim = (model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0)
    return FullAttn(num_kv_heads=model.num_attention_heads, head_dim=k_dim, v_head_dim=model.mla_v_head_dim or k_dim)


def _retarget(part: Part, model: ModelConfig, ov: Overrides) -> Part | None:
    """One cache after the attention / kv_heads / window overrides (None: the part goes away)."""
    if isinstance(part, MLAAttn):
        return part if ov.attention in (None, "mla") and not ov.kv_heads else _decompressed(model, ov)
    if isinstance(part, IndexerCache):
        return part if ov.attention in (None, "mla") and not ov.kv_heads else None
    if isinstance(part, AttnSpec) and not isinstance(part, CrossAttn):
        heads = _kv_heads(model, ov, part.num_kv_heads) if ov.attention or ov.kv_heads else part.num_kv_heads
        part = replace(part, num_kv_heads=heads)
        if ov.window and isinstance(part, SlidingAttn):
            return replace(part, window=ov.window)
        if ov.window and isinstance(part, ChunkedAttn):
            return replace(part, chunk_size=ov.window)
    return part


def _apply(spec: LayerSpec, model: ModelConfig, ov: Overrides) -> LayerSpec:
    new = tuple(p for p in (_retarget(p, model, ov) for p in parts(spec)) if p is not None)
    if not new:
        return NoKV()
    return new[0] if len(new) == 1 and not isinstance(spec, Composite) else Composite(parts=new)


def _base_attention(model: ModelConfig) -> FullAttn | MLAAttn:
    """The model-level attention geometry, for layers an override turns into attention."""
    if model.is_mla:
        assert model.kv_lora_rank is not None and model.qk_rope_head_dim is not None
        return MLAAttn(kv_lora_rank=model.kv_lora_rank, qk_rope_head_dim=model.qk_rope_head_dim)
    return FullAttn(num_kv_heads=model.num_kv_heads, head_dim=model.head_dim, v_head_dim=model.v_head_dim)


def _windowed(kind: str, base: AttnSpec, model: ModelConfig, ov: Overrides) -> SlidingAttn | ChunkedAttn:
    window = ov.window or (model.sliding_window if kind == "sliding" else model.attention_chunk_size)
    if not window:
        raise InputError(f"{kind} layers need a window: the config has none, pass window", arg="window")
    heads = dict(num_kv_heads=base.num_kv_heads, head_dim=base.head_dim, v_head_dim=base.v_head_dim)
    return SlidingAttn(window=window, **heads) if kind == "sliding" else ChunkedAttn(chunk_size=window, **heads)


def _spec_of_kind(kind: str, model: ModelConfig, ov: Overrides) -> LayerSpec:
    """A layer that --layer-types sets to `kind`, with the model-level geometry."""
    base = _base_attention(model)
    if kind in ("full", "mla"):
        return base
    if kind == "none":
        return NoKV()
    if kind == "linear":
        if model.linear is None:
            raise InputError(f"{model.model_id} has no linear-attention state dimensions for 'linear' layers",
                             arg="layer_types")
        return model.linear
    if isinstance(base, MLAAttn):
        raise InputError(f"{kind} layers with MLA are not supported by the engines kvplan models", arg="layer_types")
    return _windowed(kind, base, model, ov)


def layer_specs(model: ModelConfig, overrides: Overrides | None = None) -> tuple[LayerSpec, ...]:
    """One spec per decoder layer: the config's own, with the user's overrides applied."""
    ov = overrides or NO_OVERRIDES
    if ov == NO_OVERRIDES:
        return model.layer_specs
    if ov.attention == "mla" and not model.is_mla:
        raise InputError(f"attention mla needs kv_lora_rank and qk_rope_head_dim; {model.model_id} has none",
                         arg="attention")
    specs = list(model.layer_specs)
    made: dict[str, LayerSpec] = {}
    for lo, hi, kind in ov.layer_kinds:
        if hi >= len(specs):
            raise InputError(f"layer_types range {lo}-{hi} is outside layers 0-{len(specs) - 1}", arg="layer_types")
        spec = made.get(kind) or made.setdefault(kind, _spec_of_kind(kind, model, ov))
        specs[lo : hi + 1] = [spec] * (hi - lo + 1)
    done: dict[LayerSpec, LayerSpec] = {}
    return tuple(done.get(s) or done.setdefault(s, _apply(s, model, ov)) for s in specs)


def attention_kind(specs: tuple[LayerSpec, ...], num_attention_heads: int) -> str:
    """MLA | MHA | MQA | GQA for uniform models, "hybrid" when layers differ in kind. An indexer
    or a cross-attention cache does not make a model hybrid; per-layer KV heads do not either
    (GQA when any layer groups its heads)."""
    main = [p for s in specs for p in parts(s) if not isinstance(p, (IndexerCache, CrossAttn))]
    kinds = {p.kind for p in main}
    if len(kinds) > 1 or any(isinstance(p, LinearState) for p in main):
        return "hybrid"
    if not main:
        return "none"
    if isinstance(main[0], MLAAttn):
        return "MLA"
    heads = {p.num_kv_heads for p in main if isinstance(p, AttnSpec)}
    if heads == {num_attention_heads}:
        return "MHA"
    return "MQA" if heads == {1} else "GQA"
