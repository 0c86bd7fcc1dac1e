"""Per-layer KV-cache facts: one frozen spec per decoder layer.

A spec says what a layer stores, never how much memory that takes (``kvplan.formulas`` does) nor
how it is built from a config (``kvplan.formulas.layers``). Specs are hashable, so hybrid models
group their layers with ``Counter(specs)``; sharding derives new specs (``shard_spec``), nothing is
mutated in place. The three attention kinds share their head fields through ``AttnSpec``; code
dispatches on the types (``isinstance(spec, AttnSpec)``, ``match``), and ``kind`` is the name a
spec has in payloads and tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True, kw_only=True)
class AttnSpec:
    """K and V heads per token: MHA, GQA and MQA differ only in num_kv_heads."""

    num_kv_heads: int
    head_dim: int
    v_head_dim: int

    kind: ClassVar[str] = "full"


@dataclass(frozen=True, slots=True, kw_only=True)
class FullAttn(AttnSpec):
    """Full attention: K and V for every token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SlidingAttn(AttnSpec):
    """Sliding-window attention: a sequence keeps at most `window` tokens."""

    window: int

    kind: ClassVar[str] = "sliding"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkedAttn(AttnSpec):
    """Chunked local attention (Llama-4): tokens attend within chunks of `chunk_size`."""

    chunk_size: int

    kind: ClassVar[str] = "chunked"


@dataclass(frozen=True, slots=True, kw_only=True)
class MLAAttn:
    """Multi-head latent attention: one latent of kv_lora_rank + qk_rope_head_dim per token,
    shared by all heads, and the same on every TP rank."""

    kv_lora_rank: int
    qk_rope_head_dim: int

    kind: ClassVar[str] = "mla"

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

    kind: ClassVar[str] = "linear"

    @property
    def state_elements(self) -> int:
        conv = (self.conv_kernel - 1) * self.conv_channels
        return conv + self.num_state_heads * self.state_rows * self.state_cols


@dataclass(frozen=True, slots=True, kw_only=True)
class NoKV:
    """A layer that caches nothing (e.g. a shared-KV or attention-free layer)."""

    kind: ClassVar[str] = "none"


WindowAttn = SlidingAttn | ChunkedAttn
LayerSpec = FullAttn | SlidingAttn | ChunkedAttn | MLAAttn | LinearState | NoKV
LAYER_KINDS = ("full", "sliding", "chunked", "mla", "linear", "none")


def window_tokens(spec: LayerSpec) -> int | None:
    """The window (sliding) or chunk (chunked) of an attention layer; None for every other layer."""
    if isinstance(spec, SlidingAttn):
        return spec.window
    if isinstance(spec, ChunkedAttn):
        return spec.chunk_size
    return None


def token_limit(spec: LayerSpec) -> int | None:
    """Most tokens of one sequence a layer holds (None: all of them; 0: none, a fixed state)."""
    if isinstance(spec, (LinearState, NoKV)):
        return 0
    return window_tokens(spec)
