"""Per-layer KV-cache facts: one frozen spec per decoder layer.

A spec says what a layer stores, never how much memory that takes (``kvplan.formulas`` does) nor
how it is built from a config (``kvplan.config`` builds the model's own specs, ``kvplan.formulas.layers``
applies the user's overrides). Specs are hashable, so hybrid models group their layers with
``Counter(specs)``; sharding derives new specs (``shard_spec``), nothing is mutated in place. Code
dispatches on the types (``isinstance(spec, AttnSpec)``, ``match``), and ``kind`` is the name a spec
has in payloads and tables. Each spec class is a ``Record`` (kvplan.records): a frozen keyword-only dataclass
whose methods are generated when the class is first called, so a model pays only for the kinds it has.

A decoder layer that keeps more than one cache (Falcon-H1: attention beside a Mamba mixer; Zamba2:
a Mamba mixer plus the shared attention block; DeepSeek-V3.2: the MLA latent plus the indexer's K
cache; a Whisper decoder layer: self- and cross-attention) is one ``Composite`` of parts: the PP
split stays by decoder layer, and every formula sums over ``parts(spec)``. vLLM pages each part as a
module of its own (``kvplan.engines.vllm``).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from kvplan.records import Record


class AttnSpec(Record):
    """K and V heads per token: MHA, GQA and MQA differ only in num_kv_heads."""

    num_kv_heads: int
    head_dim: int
    v_head_dim: int

    kind: ClassVar[str] = "full"


class FullAttn(AttnSpec):
    """Full attention: K and V for every token."""


class SlidingAttn(AttnSpec):
    """Sliding-window attention: a sequence keeps at most `window` tokens."""

    window: int

    kind: ClassVar[str] = "sliding"


class ChunkedAttn(AttnSpec):
    """Chunked local attention (Llama-4): tokens attend within chunks of `chunk_size`."""

    chunk_size: int

    kind: ClassVar[str] = "chunked"


class CrossAttn(AttnSpec):
    """Cross-attention of an encoder-decoder decoder layer (Whisper): K and V of the encoder's
    output, `encoder_tokens` of them per sequence, whatever the decoder's length."""

    encoder_tokens: int

    kind: ClassVar[str] = "cross"


class MLAAttn(Record):
    """Multi-head latent attention: one latent of kv_lora_rank + qk_rope_head_dim per token,
    shared by all heads, and the same on every TP rank. `sparse`: DeepSeek sparse attention
    (V3.2, GLM-5), served by vLLM's sparse MLA backends (fp8 becomes the fp8_ds_mla layout)."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    sparse: bool = False

    kind: ClassVar[str] = "mla"

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


class IndexerCache(Record):
    """A sparse-attention indexer's key cache, whatever the KV dtype, the same on every TP rank: DeepSeek's fp8 key
    of `head_dim` plus one fp32 scale per 128 values, one per token (V3.2, GLM-5) or one per `ratio` tokens
    (DeepSeek-V4's compressed indexer, ratio 4); MiniMax-M3's bf16 key without scales."""

    head_dim: int
    ratio: int = 1
    key_bits: int = 8  # 16: MiniMax-M3's bf16 index key
    scales: bool = True  # one fp32 scale per 128 values (DeepSeek's fp8 keys); MiniMax-M3's keys have none

    kind: ClassVar[str] = "indexer"

    @property
    def bytes_per_state(self) -> int:
        """One key: its values plus, for DeepSeek's fp8 keys, one fp32 scale per 128."""
        return self.head_dim * self.key_bits // 8 + (self.head_dim // 128 * 4 if self.scales else 0)

    @property
    def bytes_per_token(self) -> int:
        """Bytes per token when every token keeps a key (ratio 1); compressed keys: see ``bytes_per_state``."""
        return self.bytes_per_state


class CompressedMLA(Record):
    """DeepSeek-V4's compressed latent: one `head_dim` latent (the last `rope_dim` values rotary) per
    `ratio` tokens of a sequence (ratio 4: compressed sparse attention, 128: heavily compressed), the
    same on every TP rank (vllm/models/deepseek_v4/attention.py:860-884, ``tokens_per_state``)."""

    head_dim: int
    rope_dim: int
    ratio: int

    kind: ClassVar[str] = "compressed_mla"


class SlidingMLA(Record):
    """DeepSeek-V4's sliding-window latent, on every layer: one `head_dim` latent per token of the last
    `window` tokens, the same on every TP rank (vllm/v1/attention/backends/mla/sparse_swa.py:76-147)."""

    head_dim: int
    rope_dim: int
    window: int

    kind: ClassVar[str] = "sliding_mla"


class CompressorState(Record):
    """DeepSeek-V4's compressor buffer beside a compressed cache (the latent's, width 512, or the
    indexer's, 128): fp32 kv and score rows of `2 · coff · head_dim` values for each of the last
    `coff · ratio` tokens, coff = 2 where windows overlap (ratio 4), else 1
    (vllm/models/deepseek_v4/compressor.py:139-193, :238-287). The same on every TP rank."""

    head_dim: int
    ratio: int

    kind: ClassVar[str] = "compressor"

    @property
    def coff(self) -> int:
        return 2 if self.ratio == 4 else 1

    @property
    def width(self) -> int:
        """fp32 values per token: the kv state and the score state."""
        return 2 * self.coff * self.head_dim

    @property
    def window(self) -> int:
        return self.coff * self.ratio


Mixer = Literal["gdn", "olmo_gdn", "kda", "mamba1", "mamba2", "short_conv", "lightning"]


class LinearState(Record):
    """Linear-attention / Mamba / short-conv layer: a fixed state per sequence, whatever its length.

    conv state: (conv_kernel - 1) × (conv_channels + num_groups × group_channels) elements (Mamba-2
    keeps its B/C groups apart: they shard differently); recurrent state: num_state_heads ×
    state_rows × state_cols elements. `mixer` names the layer class (vLLM's rules differ by it);
    `ssm_dtype` is the recurrent state's dtype when left at auto, where the config or the layer sets
    one (Qwen3.5 `mamba_ssm_dtype`, Nemotron-H `mamba_ssm_cache_dtype`, KDA fp32).
    """

    conv_kernel: int
    conv_channels: int
    num_state_heads: int
    state_rows: int
    state_cols: int
    num_groups: int = 0
    group_channels: int = 0
    mixer: Mixer = "gdn"
    ssm_dtype: str | None = None

    kind: ClassVar[str] = "linear"

    @property
    def conv_elements(self) -> int:
        return max(self.conv_kernel - 1, 0) * (self.conv_channels + self.num_groups * self.group_channels)

    @property
    def ssm_elements(self) -> int:
        return self.num_state_heads * self.state_rows * self.state_cols

    @property
    def state_elements(self) -> int:
        return self.conv_elements + self.ssm_elements


class NoKV(Record):
    """A layer that caches nothing (an attention-free block, a NAS no_op, a KV-shared layer)."""

    kind: ClassVar[str] = "none"


Part = (FullAttn | SlidingAttn | ChunkedAttn | CrossAttn | MLAAttn | IndexerCache | LinearState | CompressedMLA
        | SlidingMLA | CompressorState)
# Caches that hold the same bytes on every TP rank (one latent or key per token, not split by heads).
REPLICATED_PARTS = (MLAAttn, IndexerCache, CompressedMLA, SlidingMLA, CompressorState)


class Composite(Record):
    """A decoder layer with several caches, in module order (see the module docstring)."""

    parts: tuple[Part, ...]

    @property
    def kind(self) -> str:
        return "+".join(p.kind for p in self.parts)


WindowAttn = SlidingAttn | ChunkedAttn
LayerSpec = (FullAttn | SlidingAttn | ChunkedAttn | CrossAttn | MLAAttn | IndexerCache | LinearState | CompressedMLA
             | SlidingMLA | CompressorState | NoKV | Composite)
LAYER_KINDS = ("full", "sliding", "chunked", "mla", "linear", "none")  # what --layer-types sets


def parts(spec: LayerSpec) -> tuple[Part, ...]:
    """The caches of one decoder layer: a composite's parts, a plain spec itself, none for NoKV."""
    if isinstance(spec, Composite):
        return spec.parts
    if isinstance(spec, NoKV):
        return ()
    return (spec,)


def window_tokens(spec: LayerSpec) -> int | None:
    """The window (sliding) or chunk (chunked) of an attention layer; None for every other layer."""
    for part in parts(spec):
        if isinstance(part, (SlidingAttn, SlidingMLA)):
            return part.window
        if isinstance(part, ChunkedAttn):
            return part.chunk_size
    return None


def token_limit(spec: LayerSpec) -> int | None:
    """Most decoder tokens of one sequence a cache holds (None: all of them; 0: none, a fixed
    state or the encoder's tokens)."""
    if isinstance(spec, (LinearState, NoKV, CrossAttn)):
        return 0
    if isinstance(spec, CompressorState):
        return spec.window
    if isinstance(spec, Composite):
        limits = [token_limit(p) for p in spec.parts]
        return None if None in limits else max(limits, key=lambda x: x or 0)
    return window_tokens(spec)
