"""Pure KV-cache arithmetic: dtypes, per-token bytes, sharding, sizing. No IO here."""

from __future__ import annotations

from kvplan.formulas.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.per_token import kv_bytes_per_token, page_bytes, state_bytes_per_sequence
from kvplan.formulas.sharding import kv_heads_per_rank, pp_layer_counts, shard_spec
from kvplan.formulas.sizing import KvCacheResult, Layout, build_layout, kv_cache

__all__ = [
    "KvCacheResult", "KvDtype", "Layout", "build_layout", "kv_bytes_per_token", "kv_cache",
    "kv_heads_per_rank", "page_bytes", "pp_layer_counts", "resolve_kv_dtype", "shard_spec",
    "state_bytes_per_sequence",
]
