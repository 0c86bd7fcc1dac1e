"""kvplan: exact KV-cache memory planning for LLM inference.

    import kvplan
    m = kvplan.load_model("Qwen/Qwen3-8B")
    r = kvplan.kv_cache(m, tp=2, seq_len=32768, batch=8)
    r.bytes_per_sequence_per_gpu
"""

from __future__ import annotations

from kvplan.config import ModelConfig, load_model
from kvplan.errors import CapacityError, ConfigError, InputError, KvplanError, ShardingError
from kvplan.formulas import KvCacheResult, Layout, LayoutPolicy, Overrides, build_layout, kv_cache, layer_specs

load_config = load_model

__version__ = "0.1.0"
__all__ = [
    "CapacityError", "ConfigError", "InputError", "KvCacheResult", "KvplanError", "Layout", "LayoutPolicy",
    "ModelConfig", "Overrides", "ShardingError", "build_layout", "kv_cache", "layer_specs", "load_config",
    "load_model",
]
