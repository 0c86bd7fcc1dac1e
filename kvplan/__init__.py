"""kvplan: exact KV-cache memory planning for LLM inference.

    import kvplan
    m = kvplan.load_model("Qwen/Qwen3-8B")
    r = kvplan.kv_cache(m, tp=2, seq_len=32768, batch=8)
    r.bytes_per_sequence_per_gpu

The names below are imported on first use, so `import kvplan.cli` (and `kvplan --help`) does not
load the config reader and pydantic before the command needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvplan.config import ModelConfig, load_model
    from kvplan.errors import CapacityError, ConfigError, InputError, KvplanError, ShardingError
    from kvplan.formulas import KvCacheResult, Layout, LayoutPolicy, Overrides, build_layout, kv_cache, layer_specs

    load_config = load_model

__version__ = "0.1.0"
_EXPORTS = {
    "ModelConfig": "kvplan.config", "load_model": "kvplan.config", "load_config": "kvplan.config",
    "CapacityError": "kvplan.errors", "ConfigError": "kvplan.errors", "InputError": "kvplan.errors",
    "KvplanError": "kvplan.errors", "ShardingError": "kvplan.errors",
    "KvCacheResult": "kvplan.formulas", "Layout": "kvplan.formulas", "LayoutPolicy": "kvplan.formulas",
    "Overrides": "kvplan.formulas", "build_layout": "kvplan.formulas", "kv_cache": "kvplan.formulas",
    "layer_specs": "kvplan.formulas",
}
__all__ = [
    "CapacityError", "ConfigError", "InputError", "KvCacheResult", "KvplanError", "Layout", "LayoutPolicy",
    "ModelConfig", "Overrides", "ShardingError", "build_layout", "kv_cache", "layer_specs", "load_config",
    "load_model",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kvplan' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), "load_model" if name == "load_config" else name)
    globals()[name] = value
    return value
