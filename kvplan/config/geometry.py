"""A config's own per-layer specs: each layer's kind (``layers``) with its geometry.

Most models give every attention layer the same heads; these do not, and the rules are the config
classes' and vLLM's model files':

- Gemma-4: full layers take `global_head_dim` (default 512) and, with `attention_k_eq_v`,
  `num_global_key_value_heads`; K and V are both stored (transformers
  ``configuration_gemma4.py`` ``__post_init__``; vllm/model_executor/models/gemma4.py:576-590). The
  last layer is always full.
- KV sharing (Gemma-3n, Gemma-4): the last `num_kv_shared_layers` layers read an earlier layer's
  cache and hold none (vllm/model_executor/models/gemma3n.py:311-400, gemma4.py:401-493); they still
  count in the PP split.
- NAS (Nemotron-NAS / DeciLM): KV heads = heads // `n_heads_in_group` per block, no cache for a
  no_op block (vllm/model_executor/models/nemotron_nas.py:133-161); `replace_with_linear` is refused.
- DeepSeek sparse attention (`index_topk`): the MLA latent plus an indexer K cache on every layer
  that keeps an indexer (vllm/models/deepseek_v32/attention.py:166-200).
- Two caches per layer: Falcon-H1 (attention ∥ Mamba-2), Zamba2 "hybrid" layers (Mamba-2 plus the
  shared MHA block, head_dim = attention_head_dim), Whisper's decoder (self- plus cross-attention
  over `max_source_positions` encoder frames).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kvplan.config.schema import HFConfig
from kvplan.errors import ConfigError
from kvplan.specs import (
    ChunkedAttn,
    Composite,
    CrossAttn,
    FullAttn,
    IndexerCache,
    LayerSpec,
    LinearState,
    MLAAttn,
    NoKV,
    SlidingAttn,
)

GEMMA4_TYPES = ("gemma4", "gemma4_text")
GEMMA4_GLOBAL_HEAD_DIM = 512  # Gemma4TextConfig: kwargs.pop("global_head_dim", 512)


@dataclass(frozen=True, slots=True, kw_only=True)
class Geometry:
    """What a config says about every attention layer, before per-layer rules."""

    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    mla: MLAAttn | None
    state: LinearState | None


WINDOW_PLUS_ONE_TYPES = ("cohere2", "cohere2_moe")  # Cohere sliding layers see [pos - W, pos]: W + 1 tokens


def sliding_window(cfg: HFConfig) -> int | None:
    """The window of sliding layers: Gemma's bidirectional attention keeps sw // 2 + 1
    (configuration_gemma3/4.py); Cohere2 keeps sliding_window + 1 (vllm/model_executor/models/
    commandr.py:234-244, cohere2_moe.py:250-256)."""
    if cfg.sliding_window and cfg.use_bidirectional_attention in (True, "all"):
        return cfg.sliding_window // 2 + 1
    if cfg.sliding_window and cfg.model_type in WINDOW_PLUS_ONE_TYPES:
        return cfg.sliding_window + 1
    return cfg.sliding_window


def _nas_heads(cfg: HFConfig, index: int, source: str) -> int:
    attention = (cfg.block_configs or [])[index]["attention"]
    group = attention.get("n_heads_in_group")
    if attention.get("replace_with_linear"):
        raise ConfigError(f"{source}: block_configs[{index}].attention.replace_with_linear is not supported "
                          "(vLLM 0.33 builds no such layer)")
    if not isinstance(group, int) or isinstance(group, bool) or group <= 0 or cfg.num_attention_heads % group:
        raise ConfigError(f"{source}: block_configs[{index}].attention.n_heads_in_group must divide "
                          f"{cfg.num_attention_heads} heads, got {group!r}")
    return cfg.num_attention_heads // group


def _attention(cfg: HFConfig, geo: Geometry, kind: str, index: int, source: str) -> FullAttn:
    """The full-attention geometry of layer `index` (windows are added by the caller)."""
    heads, head_dim, v_dim = geo.num_kv_heads, geo.head_dim, geo.v_head_dim
    if cfg.block_configs is not None:
        heads = _nas_heads(cfg, index, source)
    if cfg.model_type in GEMMA4_TYPES and kind == "full":
        head_dim = v_dim = cfg.global_head_dim or GEMMA4_GLOBAL_HEAD_DIM
        if cfg.attention_k_eq_v is not False and cfg.num_global_kv_heads:
            heads = cfg.num_global_kv_heads
    return FullAttn(num_kv_heads=heads, head_dim=head_dim, v_head_dim=v_dim)


def _has_indexer(cfg: HFConfig, index: int) -> bool:
    """IndexCache: a layer keeps an indexer unless index_topk_pattern says "S" or the frequency skips it."""
    if cfg.index_topk_pattern is not None:
        return not (index < len(cfg.index_topk_pattern) and cfg.index_topk_pattern[index] == "S")
    offset, freq = cfg.index_skip_topk_offset if cfg.index_skip_topk_offset is not None else 2, cfg.index_topk_freq or 1
    return max(index - offset + 1, 0) % freq == 0


def _mla(cfg: HFConfig, mla: MLAAttn, index: int, source: str) -> LayerSpec:
    if cfg.index_topk is None:
        return mla
    if not cfg.index_head_dim:
        raise ConfigError(f"{source}: index_topk is set (DeepSeek sparse attention) but index_head_dim is missing")
    sparse = replace(mla, sparse=True)
    if not _has_indexer(cfg, index):
        return sparse
    return Composite(parts=(sparse, IndexerCache(head_dim=cfg.index_head_dim)))


def _windowed(cfg: HFConfig, kind: str, attn: FullAttn) -> LayerSpec:
    heads = dict(num_kv_heads=attn.num_kv_heads, head_dim=attn.head_dim, v_head_dim=attn.v_head_dim)
    if kind == "sliding":
        return SlidingAttn(window=sliding_window(cfg) or 0, **heads)
    assert cfg.attention_chunk_size
    return ChunkedAttn(chunk_size=cfg.attention_chunk_size, **heads)


def _layer(cfg: HFConfig, geo: Geometry, kind: str, index: int, source: str) -> LayerSpec:
    if kind == "none":
        return NoKV()
    if kind == "linear":
        assert geo.state is not None
        return geo.state
    if geo.mla is not None:
        if kind not in ("full", "mla"):
            raise ConfigError(f"{source}: {kind} layers with MLA are not supported by the engines kvplan models")
        return _mla(cfg, geo.mla, index, source)
    attn = _attention(cfg, geo, kind, index, source)
    return attn if kind == "full" else _two_caches(cfg, geo, kind, attn) or _windowed(cfg, kind, attn)


def _two_caches(cfg: HFConfig, geo: Geometry, kind: str, attn: FullAttn) -> LayerSpec | None:
    if kind == "parallel":  # Falcon-H1: attention beside the Mamba-2 mixer
        assert geo.state is not None
        return Composite(parts=(attn, geo.state))
    if kind == "hybrid":  # Zamba2: Mamba-2 mixer plus the shared attention block (MHA)
        assert geo.state is not None
        mha = FullAttn(num_kv_heads=cfg.num_attention_heads, head_dim=attn.head_dim, v_head_dim=attn.v_head_dim)
        return Composite(parts=(geo.state, mha))
    if kind == "image_cross":  # mllama: a layer whose only cache is the image tokens' K/V
        return image_cross(cfg, attn)
    if kind == "cross":  # Whisper decoder: self-attention, then cross-attention over the encoder's frames
        frames = cfg.max_source_positions or 0
        return Composite(parts=(attn, CrossAttn(encoder_tokens=frames, num_kv_heads=attn.num_kv_heads,
                                                head_dim=attn.head_dim, v_head_dim=attn.v_head_dim)))
    return None


PATCH = 14  # mllama's vision patch (vllm 0.10.1.1 model_executor/models/mllama.py:89-92 asserts image_size % 14 == 0)


def image_cross(cfg: HFConfig, attn: FullAttn) -> CrossAttn:
    """mllama's cross-attention cache: the K/V of one image's tiles, max_num_tiles × ((image_size / 14)² + 1) tokens
    (vllm 0.10.1.1 mllama.py:89-121), with the self-attention layers' heads (mllama.py:848-910)."""
    vision = cfg.vision_config or {}
    tiles, size = vision.get("max_num_tiles", 4), vision.get("image_size", 560)  # MllamaVisionConfig defaults
    return CrossAttn(encoder_tokens=tiles * ((size // PATCH) ** 2 + 1), num_kv_heads=attn.num_kv_heads,
                     head_dim=attn.head_dim, v_head_dim=attn.v_head_dim)


def kv_shared_layers(cfg: HFConfig, source: str) -> int:
    shared = cfg.num_kv_shared_layers or 0
    if shared >= cfg.num_layers:
        raise ConfigError(f"{source}: num_kv_shared_layers {shared} leaves no layer with its own cache "
                          f"({cfg.num_layers} layers)")
    return shared


def build_layer_specs(cfg: HFConfig, kinds: tuple[str, ...], geo: Geometry, source: str) -> tuple[LayerSpec, ...]:
    """One spec per decoder layer; KV-shared layers (the last num_kv_shared_layers) hold none."""
    first_shared = cfg.num_layers - kv_shared_layers(cfg, source)
    made: dict[tuple[str, Any], LayerSpec] = {}
    specs = []
    for i, kind in enumerate(kinds):
        key = (kind, i if cfg.block_configs is not None or cfg.index_topk is not None else None)
        spec = made.get(key) or made.setdefault(key, _layer(cfg, geo, kind, i, source))
        specs.append(NoKV() if i >= first_shared else spec)
    return tuple(specs)
