"""kvplan: exact KV-cache memory planning for LLM inference.

    import kvplan
    m = kvplan.load_model("Qwen/Qwen3-8B")
    r = kvplan.kv_cache(m, tp=2, max_model_len=32768, batch=8)
    r.bytes_per_sequence_per_gpu
    c = kvplan.capacity("Qwen/Qwen3-8B", gpu="H100", tp=2, gpu_memory_utilization=0.9)
    c.plan.kv_tokens
    d = kvplan.diff("Qwen/Qwen3-8B", engines=("vllm@0.25", "vllm@0.29"), gpu="H100")
    d.changed, d.causes_of("kv_tokens")

Every question is a frozen request (``CacheRequest``; with the engine knobs and the GPU, a
``CapacityRequest``), given whole or as its fields' keywords; each part checks itself when it is made.

The names below are imported on first use, so `import kvplan.cli` (and `kvplan --help`) does not
load the config reader and pydantic before the command needs them.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvplan.api.planning import capacity, capacity_all, diff, fit, kv_cache, size
    from kvplan.api.workflows import compare, reconcile, sweep
    from kvplan.config import ModelConfig, load_model
    from kvplan.engines import Settings
    from kvplan.errors import CapacityError, ConfigError, InputError, KvplanError, Refused, ShardingError
    from kvplan.formulas import CacheRequest, KvCacheResult, Layout, LayoutPolicy, Overrides, build_layout, layer_specs
    from kvplan.planning.capacity import CapacityResult
    from kvplan.planning.fit import FitResult
    from kvplan.planning.request import CapacityRequest, Memory
    from kvplan.workflows.diff import Diff
    from kvplan.workflows.sweep import Sweep

    load_config = load_model

__version__ = "0.1.0"
_EXPORTS = {
    "ModelConfig": "kvplan.config", "load_model": "kvplan.config", "load_config": "kvplan.config",
    "CapacityError": "kvplan.errors", "ConfigError": "kvplan.errors", "InputError": "kvplan.errors",
    "KvplanError": "kvplan.errors", "Refused": "kvplan.errors", "ShardingError": "kvplan.errors",
    "KvCacheResult": "kvplan.formulas", "Layout": "kvplan.formulas", "LayoutPolicy": "kvplan.formulas",
    "Overrides": "kvplan.formulas", "build_layout": "kvplan.formulas", "kv_cache": "kvplan.api.planning",
    "size": "kvplan.api.planning", "layer_specs": "kvplan.formulas", "CacheRequest": "kvplan.formulas",
    "Settings": "kvplan.engines", "CapacityRequest": "kvplan.planning.request", "Memory": "kvplan.planning.request",
    "capacity": "kvplan.api.planning", "capacity_all": "kvplan.api.planning",
    "CapacityResult": "kvplan.planning.capacity",
    "fit": "kvplan.api.planning", "FitResult": "kvplan.planning.fit",
    "sweep": "kvplan.api.workflows", "compare": "kvplan.api.workflows", "reconcile": "kvplan.api.workflows",
    "Sweep": "kvplan.workflows.sweep", "diff": "kvplan.api.planning", "Diff": "kvplan.workflows.diff",
}
__all__ = [
    "CacheRequest", "CapacityError", "CapacityRequest", "CapacityResult", "ConfigError", "Diff", "FitResult", "InputError",
    "KvCacheResult", "KvplanError", "Layout", "LayoutPolicy", "Memory", "ModelConfig", "Overrides", "Refused",
    "Settings", "ShardingError", "Sweep", "build_layout", "capacity", "capacity_all", "compare", "diff", "fit", "kv_cache",
    "layer_specs", "load_config", "load_model", "reconcile", "size", "sweep",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kvplan' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), "load_model" if name == "load_config" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The exports too (they are imported on first use): what an editor and dir(kvplan) offer."""
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """``kvplan.reconcile`` is the library function, and kvplan/reconcile/ a subpackage of the same name: Python
    binds a subpackage on its parent once it is imported, which would shadow the function after any code imported
    it. That binding is not kept for an exported name (``from kvplan.reconcile import ...`` reads sys.modules)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
