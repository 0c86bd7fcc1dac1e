"""Attention layers with an index-key cache beside their K/V: MiniMax-M3's sparse layers.

vLLM 0.33 ``models/minimax_m3``: every layer keeps GQA K/V (``nvidia/model.py:562-571``); a layer whose
``sparse_attention_config.sparse_attention_freq[i]`` is not 0 (``:99-107``) also keeps an index key of
``sparse_index_dim`` values per token, one head, in bf16 unless ``--attention-config`` asks for fp8
(``common/indexer.py:102-156``, ``nvidia/model.py:506-509``), the same on every TP rank (an MLAAttentionSpec).
"""

from __future__ import annotations

from typing import Any

from kvplan.errors import ConfigError
from kvplan.specs import Composite, IndexerCache, LayerSpec, parts

INDEX_KEY_BITS = 16  # indexer_kv_dtype "bf16", the default (resolve_indexer_kv_dtype("bf16"))


def sparse_layers(fields: dict[str, Any], n: int, source: str) -> set[int] | None:
    """The layers that keep an index key (None: the config has no sparse_attention_config)."""
    conf = fields.get("sparse_attention_config")
    if not isinstance(conf, dict):
        return None
    freq = conf.get("sparse_attention_freq")
    if freq is None:
        return set()
    if not isinstance(freq, list) or len(freq) < n:
        raise ConfigError(f"{source}: config field 'sparse_attention_config.sparse_attention_freq': expected one entry "
                          f"per layer ({n} layers)")
    return {i for i, f in enumerate(freq[:n]) if f != 0}


def with_index_keys(specs: tuple[LayerSpec, ...], fields: dict[str, Any], source: str) -> tuple[LayerSpec, ...]:
    """The layers' specs with an index key beside the K/V of each sparse layer."""
    layers = sparse_layers(fields, len(specs), source)
    if not layers:
        return specs
    dim = fields["sparse_attention_config"].get("sparse_index_dim")
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise ConfigError(f"{source}: config field 'sparse_attention_config.sparse_index_dim': expected a positive "
                          f"integer, got {dim!r}")
    key = IndexerCache(head_dim=dim, key_bits=INDEX_KEY_BITS, scales=False)
    return tuple(Composite(parts=(*parts(s), key)) if i in layers else s for i, s in enumerate(specs))
