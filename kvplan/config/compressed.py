"""DeepSeek-V4's layers: which compression each layer applies, and the caches that makes it keep.

The per-layer ratio (transformers 5 ``DeepseekV4Config.__post_init__``, read back by vLLM 0.33's
``transformers_utils/deepseek_v4_utils.py:6-18`` and ``models/deepseek_v4/attention.py:238-242``):
- the legacy ``compress_ratios`` list of 0 / 4 / 128 (0: sliding attention only; 4: compressed sparse
  attention; 128: heavily compressed), one per layer plus the MTP layers, cut to ``num_hidden_layers``;
- else ``layer_types`` (``sliding_attention``, ``compressed_sparse_attention``,
  ``heavily_compressed_attention``) with ``compress_rates`` (default {CSA: 4, HCA: 128});
- else transformers' default: two HCA layers, then CSA and HCA in turn (HCA first).

Caches of one layer (vLLM 0.33, module order; ``kvplan.specs``): the compressed latent (ratio > 1,
``attention.py:860-884``), the sliding latent of the last ``sliding_window`` tokens on every layer
(``v1/attention/backends/mla/sparse_swa.py:76-147``), the latent's compressor state (ratio > 1,
``compressor.py:139-193``), and on ratio-4 layers the indexer: its compressed key and its compressor
(``attention.py:302-320``, ``:886-930``, ``:1037-1046``). vLLM's compressor takes ratios 4 and 128 only
(``compressor.py:158``).
"""

from __future__ import annotations

from typing import Any

from kvplan.config.schema import HFConfig
from kvplan.errors import ConfigError
from kvplan.specs import Composite, CompressedMLA, CompressorState, IndexerCache, LayerSpec, Part, SlidingMLA

DSV4_TYPES = ("deepseek_v4",)
RATIO_OF_TYPE = {"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
DEFAULT_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
SERVED_RATIOS = (1, 4, 128)  # 1: the sliding latent alone; vLLM's compressor asserts 4 or 128
INDEXER_RATIO = 4  # only compressed sparse attention layers keep an indexer
DEFAULTS = {"head_dim": 512, "qk_rope_head_dim": 64, "sliding_window": 128, "index_head_dim": 128}  # DeepseekV4Config


def is_deepseek_v4(cfg: HFConfig) -> bool:
    """A DeepSeek-V4 config: its model_type, or the legacy compress_ratios field."""
    return cfg.model_type in DSV4_TYPES or cfg.compress_ratios is not None


def _ratio_list(fields: dict[str, Any], n: int, source: str) -> list[int]:
    legacy = fields.get("compress_ratios")
    if legacy is not None:
        if not isinstance(legacy, list) or len(legacy) < n or not all(r in (0, 4, 128) for r in legacy[:n]):
            raise ConfigError(f"{source}: config field 'compress_ratios': expected 0, 4 or 128 for each of the {n} "
                              "layers (transformers' DeepseekV4Config)")
        return [int(r) for r in legacy[:n]]
    names = fields.get("layer_types")
    if names is None:  # transformers' default: 2 × HCA, then HCA / CSA in turn
        names = ["heavily_compressed_attention"] * min(n, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(max(n - 2, 0))]
    if not isinstance(names, list) or len(names) < n or not all(t in RATIO_OF_TYPE for t in names[:n]):
        raise ConfigError(f"{source}: config field 'layer_types': expected one of {', '.join(RATIO_OF_TYPE)} for "
                          f"each of the {n} layers (DeepSeek-V4)")
    rates = fields.get("compress_rates") or DEFAULT_RATES
    if not isinstance(rates, dict):
        raise ConfigError(f"{source}: config field 'compress_rates': expected an object, got {rates!r}")
    return [rates.get(t, 0) if t != "sliding_attention" else 0 for t in names[:n]]


def compress_ratios(fields: dict[str, Any], n: int, source: str) -> tuple[int, ...]:
    """One ratio per decoder layer: max(1, rate) as vLLM takes it (1: sliding latent only)."""
    ratios = tuple(max(1, r) if isinstance(r, int) and not isinstance(r, bool) else -1
                   for r in _ratio_list(fields, n, source))
    bad = sorted({r for r in ratios if r not in SERVED_RATIOS})
    if bad:
        raise ConfigError(f"{source}: DeepSeek-V4 compression ratio(s) {bad}: vLLM's compressor takes 4 and 128 only "
                          "(vllm/models/deepseek_v4/compressor.py:158)")
    return ratios


def _dims(cfg: HFConfig, fields: dict[str, Any]) -> tuple[int, int, int, int]:
    head = cfg.head_dim or DEFAULTS["head_dim"]
    factor = fields.get("partial_rotary_factor")
    rope = cfg.qk_rope_head_dim or (int(head * factor) if isinstance(factor, (int, float)) and factor else 0)
    return head, rope or DEFAULTS["qk_rope_head_dim"], cfg.sliding_window or DEFAULTS["sliding_window"], \
        cfg.index_head_dim or DEFAULTS["index_head_dim"]


def _layer(ratio: int, head: int, rope: int, window: int, index_head: int) -> LayerSpec:
    sliding = SlidingMLA(head_dim=head, rope_dim=rope, window=window)
    if ratio == 1:
        return sliding
    caches: tuple[Part, ...] = (CompressedMLA(head_dim=head, rope_dim=rope, ratio=ratio), sliding,
                                CompressorState(head_dim=head, ratio=ratio))
    if ratio == INDEXER_RATIO:
        caches += (IndexerCache(head_dim=index_head, ratio=ratio), CompressorState(head_dim=index_head, ratio=ratio))
    return Composite(parts=caches)


def deepseek_v4_specs(cfg: HFConfig, fields: dict[str, Any], source: str) -> tuple[LayerSpec, ...]:
    """One spec per decoder layer (the MTP layers are not decoder layers: vLLM adds them only with MTP
    speculative decoding)."""
    head, rope, window, index_head = _dims(cfg, fields)
    made: dict[int, LayerSpec] = {}
    ratios = compress_ratios(fields, cfg.num_layers, source)
    return tuple(made.get(r) or made.setdefault(r, _layer(r, head, rope, window, index_head)) for r in ratios)
