"""Pure KV-cache arithmetic: layer specs from a config, per-token bytes, sharding, the layout, sizing.

No file IO here: a ``ModelConfig`` comes in (``kvplan.config`` reads it), frozen results go out.
"""

from __future__ import annotations

from kvplan.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.layers import Overrides, attention_kind, layer_specs
from kvplan.formulas.layout import DEFAULT_POLICY, Group, Layout, LayoutPolicy, Load, build_layout
from kvplan.formulas.per_token import kv_bytes_per_token, page_bytes, state_bytes_per_sequence
from kvplan.formulas.request import DEFAULT_BLOCK_SIZE, FALLBACK_MAX_MODEL_LEN, CacheRequest, cache_request
from kvplan.formulas.sharding import kv_heads_per_rank, pp_layer_counts, shard_spec
from kvplan.formulas.sizing import KvCacheResult, kv_cache

__all__ = [
    "DEFAULT_BLOCK_SIZE", "DEFAULT_POLICY", "FALLBACK_MAX_MODEL_LEN", "CacheRequest", "Group", "KvCacheResult", "KvDtype", "Layout", "LayoutPolicy", "Load",
    "Overrides", "attention_kind", "build_layout", "cache_request", "kv_bytes_per_token", "kv_cache", "kv_heads_per_rank",
    "layer_specs", "page_bytes", "pp_layer_counts", "resolve_kv_dtype", "shard_spec", "state_bytes_per_sequence",
]
