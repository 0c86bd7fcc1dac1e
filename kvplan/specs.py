"""Per-layer KV-cache facts: one frozen spec per decoder layer.

A spec says what a layer stores, never how much memory that takes (``kvplan.formulas`` does).
Specs are hashable, so hybrid models group their layers with ``Counter(specs)``. Sharding
derives new specs (``shard_spec``); nothing is mutated in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.errors import InputError

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class FullAttn:
    """Full attention: K and V for every token. MHA, GQA and MQA differ only in num_kv_heads."""

    num_kv_heads: int
    head_dim: int
    v_head_dim: int

    kind = "full"


@dataclass(frozen=True, slots=True, kw_only=True)
class SlidingAttn:
    """Sliding-window attention: a sequence keeps at most `window` tokens."""

    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    window: int

    kind = "sliding"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkedAttn:
    """Chunked local attention (Llama-4): tokens attend within chunks of `chunk_size`."""

    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    chunk_size: int

    kind = "chunked"


@dataclass(frozen=True, slots=True, kw_only=True)
class MLAAttn:
    """Multi-head latent attention: one latent of kv_lora_rank + qk_rope_head_dim per token,
    shared by all heads, and the same on every TP rank."""

    kv_lora_rank: int
    qk_rope_head_dim: int

    kind = "mla"

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearState:
    """Linear-attention / Mamba layer: a fixed state per sequence, whatever its length.

    conv state: (conv_kernel - 1) × conv_channels elements;
    recurrent state: num_state_heads × state_rows × state_cols elements.
    """

    conv_kernel: int
    conv_channels: int
    num_state_heads: int
    state_rows: int
    state_cols: int

    kind = "linear"

    @property
    def state_elements(self) -> int:
        conv = (self.conv_kernel - 1) * self.conv_channels
        return conv + self.num_state_heads * self.state_rows * self.state_cols


@dataclass(frozen=True, slots=True, kw_only=True)
class NoKV:
    """A layer that caches nothing (e.g. a shared-KV or attention-free layer)."""

    kind = "none"


KvAttn = FullAttn | SlidingAttn | ChunkedAttn
LayerSpec = FullAttn | SlidingAttn | ChunkedAttn | MLAAttn | LinearState | NoKV
LAYER_KINDS = ("full", "sliding", "chunked", "mla", "linear", "none")


def token_limit(spec: LayerSpec) -> int | None:
    """Most tokens of one sequence a layer holds (None: all of them; 0: none, a fixed state)."""
    if isinstance(spec, SlidingAttn):
        return spec.window
    if isinstance(spec, ChunkedAttn):
        return spec.chunk_size
    if isinstance(spec, (LinearState, NoKV)):
        return 0
    return None


# --------------------------------------------------------------------------- building specs

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
            raise InputError(f"invalid --layer-types entry {part!r}: expected FIRST-LAST:KIND with KIND "
                             f"one of {', '.join(LAYER_KINDS)}")
        lo, hi = int(first), int(last) if dash else int(first)
        if not lo <= hi < num_layers:
            raise InputError(f"--layer-types range {lo}-{hi} is outside layers 0-{num_layers - 1}")
        ranges.append((lo, hi, kind))
    return tuple(ranges)


def _kv_heads(model: ModelConfig, ov: Overrides) -> int:
    heads = ov.kv_heads or {"mha": model.num_attention_heads, "mqa": 1}.get(ov.attention or "", model.num_kv_heads)
    if ov.attention == "gqa" and heads in (1, model.num_attention_heads) and not ov.kv_heads:
        raise InputError(f"--attention gqa: the config has {heads} KV heads; give the group count with --kv-heads")
    if heads <= 0 or model.num_attention_heads % heads:
        raise InputError(f"{heads} KV heads do not divide {model.num_attention_heads} attention heads")
    return heads


def _attention_spec(model: ModelConfig, ov: Overrides) -> FullAttn | MLAAttn:
    """The spec of a full-attention layer, after --attention / --kv-heads."""
    if ov.attention == "mla" and not model.is_mla:
        raise InputError(f"--attention mla needs kv_lora_rank and qk_rope_head_dim; {model.model_id} has none")
    if model.is_mla and ov.attention in (None, "mla") and not ov.kv_heads:
        assert model.kv_lora_rank is not None and model.qk_rope_head_dim is not None
        return MLAAttn(kv_lora_rank=model.kv_lora_rank, qk_rope_head_dim=model.qk_rope_head_dim)
    if model.is_mla:  # the decompressed per-head view (older transformers, naive calculators): K = nope + rope, V
        if ov.attention != "mha" or ov.kv_heads:
            raise InputError("an MLA model can be overridden only with --attention mha (decompressed K/V)")
        k_dim = (model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0)
        return FullAttn(num_kv_heads=model.num_attention_heads, head_dim=k_dim,
                        v_head_dim=model.mla_v_head_dim or k_dim)
    return FullAttn(num_kv_heads=_kv_heads(model, ov), head_dim=model.head_dim, v_head_dim=model.v_head_dim)


def _spec_for(kind: str, base: FullAttn | MLAAttn, model: ModelConfig, ov: Overrides) -> LayerSpec:
    if kind == "full" or kind == "mla":
        return base
    if kind == "none":
        return NoKV()
    if kind == "linear":
        if model.linear is None:
            raise InputError(f"{model.model_id} has no linear-attention state dimensions for 'linear' layers")
        d = model.linear
        return LinearState(conv_kernel=d.conv_kernel, conv_channels=d.conv_channels,
                           num_state_heads=d.num_state_heads, state_rows=d.state_rows, state_cols=d.state_cols)
    if isinstance(base, MLAAttn):
        raise InputError(f"{kind} layers with MLA are not supported by the engines kvplan models")
    window = ov.window or (model.sliding_window if kind == "sliding" else model.attention_chunk_size)
    if not window:
        raise InputError(f"{kind} layers need a window: the config has none, pass --window")
    heads = dict(num_kv_heads=base.num_kv_heads, head_dim=base.head_dim, v_head_dim=base.v_head_dim)
    return SlidingAttn(window=window, **heads) if kind == "sliding" else ChunkedAttn(chunk_size=window, **heads)


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
    kinds = {s.kind for s in specs if s.kind != "none"}
    if len(kinds) > 1:
        return "hybrid"
    first = next((s for s in specs if not isinstance(s, NoKV)), None)
    if first is None or isinstance(first, LinearState):
        return "hybrid" if first is not None else "none"
    if isinstance(first, MLAAttn):
        return "MLA"
    heads = first.num_kv_heads
    return "MHA" if heads == num_attention_heads else "MQA" if heads == 1 else "GQA"
