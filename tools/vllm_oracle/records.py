"""Turn vLLM objects (specs, groups, configs) into plain JSON values.

The first keys of every dict are the ones of tests/data/vllm-oracle-sample.json;
everything else a spec dataclass carries follows, so new spec types need no code.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import torch

from . import compat

SAMPLE_SPEC_KEYS = ("block_size", "num_kv_heads", "head_size", "head_size_v",
                    "sliding_window", "dtype", "page_size_bytes")


def jsonable(value: Any) -> Any:
    """torch dtypes as 'bfloat16', enums by name, dataclasses/tuples recursively."""
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def spec_dict(spec: Any) -> dict[str, Any]:
    """Sample keys first (None where a spec type lacks one), then every field."""
    out: dict[str, Any] = {"type": type(spec).__name__}
    for key in SAMPLE_SPEC_KEYS:
        out[key] = jsonable(getattr(spec, key, None))
    for field in dataclasses.fields(spec):
        if field.name not in out and field.name != "kv_cache_specs":
            out[field.name] = jsonable(getattr(spec, field.name))
    for extra in ("real_page_size_bytes", "state_content_size_bytes"):
        if hasattr(spec, extra):
            out[extra] = getattr(spec, extra)
    block = getattr(spec, "block_size", 0)
    if "num_kv_heads" in out and out["num_kv_heads"] is not None and block:
        out["page_size_bytes_per_token"] = spec.page_size_bytes / block
    return out


def count_specs(specs: dict[str, Any]) -> list[dict[str, Any]]:
    """Distinct specs in first-layer order, each with its layer count."""
    counted: list[dict[str, Any]] = []
    for layer_spec in specs.values():
        entry = spec_dict(layer_spec)
        for seen in counted:
            if {k: v for k, v in seen.items() if k != "count"} == entry:
                seen["count"] += 1
                break
        else:
            counted.append({"type": entry.pop("type"), "count": 1, **entry})
    return counted


def group_dict(config: Any, worker_group: Any, scheduler_group: Any) -> dict[str, Any]:
    """A KV cache group as the scheduler sees it (one representative layer)."""
    spec = scheduler_group.kv_cache_spec
    max_bytes = spec.max_memory_usage_bytes(config)
    return {
        "spec_type": type(worker_group.kv_cache_spec).__name__,
        "layer_spec_type": type(spec).__name__,
        "num_layers": len(worker_group.layer_names),
        "block_size": spec.block_size,
        "page_size_bytes": spec.page_size_bytes,
        "sliding_window": getattr(spec, "sliding_window", None),
        "max_memory_usage_bytes": max_bytes,
        "blocks_per_request": compat.require("cdiv")(max_bytes, spec.page_size_bytes),
        "group_page_size_bytes": worker_group.kv_cache_spec.page_size_bytes,
        "attention_chunk_size": getattr(spec, "attention_chunk_size", None),
        "layer_names": list(worker_group.layer_names),
    }


# Settings read as `object.attribute`; a release without one records null.
SETTINGS = {
    "max_num_seqs": "scheduler.max_num_seqs", "async_scheduling": "scheduler.async_scheduling",
    "max_in_flight_tokens": "config.max_in_flight_tokens", "use_v2_model_runner": "config.use_v2_model_runner",
    "enable_prefix_caching": "cache.enable_prefix_caching",
    "enable_chunked_prefill": "scheduler.enable_chunked_prefill",
    "disable_hybrid_kv_cache_manager": "scheduler.disable_hybrid_kv_cache_manager",
    "kv_cache_layout": "cache.kv_cache_layout", "is_hybrid": "model.is_hybrid",
    "mamba_cache_mode": "cache.mamba_cache_mode", "mamba_cache_dtype": "cache.mamba_cache_dtype",
    "mamba_ssm_cache_dtype": "cache.mamba_ssm_cache_dtype", "mamba_block_size": "cache.mamba_block_size",
    "mamba_page_size_padded": "cache.mamba_page_size_padded",
}


def settings_dict(config: Any) -> dict[str, Any]:
    """The vLLM settings that decide KV sizing, after the engine resolved them."""
    owners = {"config": config, "cache": config.cache_config, "scheduler": config.scheduler_config,
              "model": config.model_config}
    out: dict[str, Any] = {"model_dtype": jsonable(config.model_config.dtype)}
    for key, path in SETTINGS.items():
        owner, attr = path.split(".")
        try:
            value = getattr(owners[owner], attr, None)
        except Exception:  # a property that a release computes from missing state
            value = None
        out[key] = jsonable(value)
    return out
