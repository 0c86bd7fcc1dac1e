"""A normalized config -> one spec per decoder layer, after the user's overrides.

The config says which kind each layer is (``ModelConfig.layer_kinds``, read by
``kvplan.config.layers``); this module turns kinds into specs with the model's head geometry, and
applies ``Overrides`` (``--attention``, ``--kv-heads``, ``--layer-types``, ``--window``). Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.specs import (
    LAYER_KINDS,
    AttnSpec,
    ChunkedAttn,
    FullAttn,
    LayerSpec,
    LinearState,
    MLAAttn,
    NoKV,
    SlidingAttn,
)

ATTENTION_OVERRIDES = ("mha", "gqa", "mqa", "mla")


@dataclass(frozen=True, slots=True, kw_only=True)
class Overrides:
    """User overrides of what the config says: attention kind, KV heads, layer kinds, window."""

    attention: str | None = None  # mha | gqa | mqa | mla
    kv_heads: int | None = None
    layer_kinds: tuple[tuple[int, int, str], ...] = ()  # (first, last, kind), inclusive ranges
    window: int | None = None


def parse_layer_ranges(text: str, num_layers: int) -> tuple[tuple[int, int, str], ...]:
    """"0-15:full,16-31:sliding" -> ((0, 15, "full"), (16, 31, "sliding"))."""
    ranges = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        span, sep, kind = part.partition(":")
        first, dash, last = span.partition("-")
        if not sep or kind not in LAYER_KINDS or not first.strip().isdigit() or (dash and not last.strip().isdigit()):
            raise InputError(f"invalid layer_types entry {part!r}: expected FIRST-LAST:KIND with KIND "
                             f"one of {', '.join(LAYER_KINDS)}", arg="layer_types")
        lo, hi = int(first), int(last) if dash else int(first)
        if not lo <= hi < num_layers:
            raise InputError(f"layer_types range {lo}-{hi} is outside layers 0-{num_layers - 1}", arg="layer_types")
        ranges.append((lo, hi, kind))
    return tuple(ranges)


def _kv_heads(model: ModelConfig, ov: Overrides) -> int:
    heads = ov.kv_heads or {"mha": model.num_attention_heads, "mqa": 1}.get(ov.attention or "", model.num_kv_heads)
    if ov.attention == "gqa" and heads in (1, model.num_attention_heads) and not ov.kv_heads:
        raise InputError(f"attention gqa: the config has {heads} KV heads; give the group count with kv_heads",
                         arg=("attention", "kv_heads"))
    if heads <= 0 or model.num_attention_heads % heads:
        raise InputError(f"{heads} KV heads do not divide {model.num_attention_heads} attention heads")
    return heads


def _mla_or_decompressed(model: ModelConfig, ov: Overrides) -> FullAttn | MLAAttn:
    """An MLA model: the latent, or the decompressed per-head view (--attention mha: K = nope + rope, V)."""
    if ov.attention in (None, "mla") and not ov.kv_heads:
        assert model.kv_lora_rank is not None and model.qk_rope_head_dim is not None
        return MLAAttn(kv_lora_rank=model.kv_lora_rank, qk_rope_head_dim=model.qk_rope_head_dim)
    if ov.attention != "mha" or ov.kv_heads:
        raise InputError("an MLA model can be overridden only with attention mha (decompressed K/V)", arg="attention")
    k_dim = (model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0)
    return FullAttn(num_kv_heads=model.num_attention_heads, head_dim=k_dim, v_head_dim=model.mla_v_head_dim or k_dim)


def _attention_spec(model: ModelConfig, ov: Overrides) -> FullAttn | MLAAttn:
    """The spec of a full-attention layer, after the attention / kv_heads overrides."""
    if ov.attention == "mla" and not model.is_mla:
        raise InputError(f"attention mla needs kv_lora_rank and qk_rope_head_dim; {model.model_id} has none",
                         arg="attention")
    if model.is_mla:
        return _mla_or_decompressed(model, ov)
    return FullAttn(num_kv_heads=_kv_heads(model, ov), head_dim=model.head_dim, v_head_dim=model.v_head_dim)


def _windowed(kind: str, base: AttnSpec, model: ModelConfig, ov: Overrides) -> SlidingAttn | ChunkedAttn:
    window = ov.window or (model.sliding_window if kind == "sliding" else model.attention_chunk_size)
    if not window:
        raise InputError(f"{kind} layers need a window: the config has none, pass window", arg="window")
    heads = dict(num_kv_heads=base.num_kv_heads, head_dim=base.head_dim, v_head_dim=base.v_head_dim)
    return SlidingAttn(window=window, **heads) if kind == "sliding" else ChunkedAttn(chunk_size=window, **heads)


def _spec_for(kind: str, base: FullAttn | MLAAttn, model: ModelConfig, ov: Overrides) -> LayerSpec:
    if kind in ("full", "mla"):
        return base
    if kind == "none":
        return NoKV()
    if kind == "linear":
        if model.linear is None:
            raise InputError(f"{model.model_id} has no linear-attention state dimensions for 'linear' layers")
        return model.linear
    if isinstance(base, MLAAttn):
        raise InputError(f"{kind} layers with MLA are not supported by the engines kvplan models")
    return _windowed(kind, base, model, ov)


def layer_specs(model: ModelConfig, overrides: Overrides | None = None) -> tuple[LayerSpec, ...]:
    """One spec per decoder layer, from the config's layer kinds and the user's overrides."""
    ov = overrides or Overrides()
    kinds = list(model.layer_kinds)
    for lo, hi, kind in ov.layer_kinds:
        kinds[lo : hi + 1] = [kind] * (hi - lo + 1)
    base = _attention_spec(model, ov)
    cache: dict[str, LayerSpec] = {}
    return tuple(cache.get(k) or cache.setdefault(k, _spec_for(k, base, model, ov)) for k in kinds)


def attention_kind(specs: tuple[LayerSpec, ...], num_attention_heads: int) -> str:
    """MLA | MHA | MQA | GQA for uniform models, "hybrid" when layers differ in kind."""
    kinds = {s.kind for s in specs if not isinstance(s, NoKV)}
    if len(kinds) > 1:
        return "hybrid"
    first = next((s for s in specs if not isinstance(s, NoKV)), None)
    if first is None or isinstance(first, LinearState):
        return "hybrid" if first is not None else "none"
    if isinstance(first, MLAAttn):
        return "MLA"
    heads = first.num_kv_heads
    return "MHA" if heads == num_attention_heads else "MQA" if heads == 1 else "GQA"
