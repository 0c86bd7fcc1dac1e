"""The public functions' keywords -> the library's question: the model, a ``CacheRequest``, ``Settings`` and
``Memory`` (each part checks itself, with the CLI's messages), as ``kvplan.cli.options`` builds them from flags.

A keyword left at its default leaves the question as it is: a ``CapacityRequest`` given as the model keeps its
values, and a part's default (the engine release's, the model's) stays the part's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.formulas.layers import ATTENTION_OVERRIDES, Overrides, parse_layer_ranges
from kvplan.formulas.request import CacheRequest, cache_request
from kvplan.planning.request import CapacityRequest, capacity_request

OVERRIDE_KEYS = ("attention", "kv_heads", "layer_types", "window")
MODEL_KEYS = ("revision", "dtype")
# keywords that are no field of the question (the function's own) or say a field another way
NOT_FIELDS = frozenset({"model", "request", "engine", "gpus_per_node", "max_replicas", "max_gpus", "nodes", "prices", "progress",
                        *OVERRIDE_KEYS, *MODEL_KEYS})


def load(model: Any, revision: str | None = None, dtype: str = "auto", *, request: bool = True) -> Any:
    """A ModelConfig (or, where `request`, a CapacityRequest) from what a script passes as the model."""
    if isinstance(model, (ModelConfig, CapacityRequest)) and (request or isinstance(model, ModelConfig)):
        return model if dtype == "auto" or isinstance(model, CapacityRequest) else _served(model, dtype)
    if not isinstance(model, str) or not model.strip():
        kinds = "a model id (str), a ModelConfig" + (" or a CapacityRequest" if request else "")
        shown = repr(model) if len(repr(model)) <= 60 else repr(model)[:57] + "..."
        raise InputError(f"model must be {kinds}, got {type(model).__name__} {shown}", arg="model")
    from kvplan.config import load_model

    return _served(load_model(model, revision=revision), dtype)


def _served(model: ModelConfig, dtype: str) -> ModelConfig:
    from kvplan.config import with_dtype

    return with_dtype(model, dtype)


@functools.cache
def defaults(func: Callable[..., Any]) -> dict[str, Any]:
    return {name: p.default for name, p in inspect.signature(func).parameters.items()}


def changed(func: Callable[..., Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords away from `func`'s defaults."""
    known = defaults(func)
    return {k: x for k, x in values.items() if k in known and k not in ("model", "models", "request", "log") and x is not known[k]
            and x != known[k]}


def overrides(given: Mapping[str, Any]) -> Overrides | None:
    """attention, kv_heads, layer_types, window -> Overrides (None when nothing is overridden)."""
    attention, kv_heads = given.get("attention"), given.get("kv_heads")
    layer_types, window = given.get("layer_types"), given.get("window")
    if attention is not None and attention.lower() not in ATTENTION_OVERRIDES:
        raise InputError(f"unknown attention {attention!r}; choose one of: {', '.join(ATTENTION_OVERRIDES)}",
                         arg="attention")
    if kv_heads is not None and kv_heads <= 0:
        raise InputError(f"kv_heads must be positive, got {kv_heads}", arg="kv_heads")
    if not any((attention, kv_heads, layer_types, window)):
        return None
    return Overrides(attention=attention.lower() if attention else None, kv_heads=kv_heads,
                     layer_kinds=parse_layer_ranges(layer_types) if layer_types else (), window=window)


def fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """Keywords -> the question's field names (the switches say the negation; LoRA modules `all` is every one)."""
    out = {k: x for k, x in given.items() if k not in NOT_FIELDS}
    if "disable_hybrid_kv_cache_manager" in out:
        out["hybrid_kv_cache_manager"] = not out.pop("disable_hybrid_kv_cache_manager")
    if "no_async_scheduling" in out:
        out["async_scheduling"] = False if out.pop("no_async_scheduling") else None
    if out.get("lora_target_modules") == ("all",):
        out["lora_target_modules"] = None
    if any(given.get(k) is not None for k in OVERRIDE_KEYS):
        out["overrides"] = overrides(given)
    return out


def question(func: Callable[..., Any], model: Any, values: Mapping[str, Any]) -> CapacityRequest:
    """The CapacityRequest `func`'s keywords ask (`values`: its arguments)."""
    given = changed(func, values)
    asked = load(model, values.get("revision"), values.get("dtype", "auto"))
    return capacity_request(asked, **fields(given))


def cache_question(func: Callable[..., Any], request: CacheRequest | None, values: Mapping[str, Any]) -> CacheRequest:
    """The CacheRequest `func`'s keywords ask, on top of `request`."""
    if request is not None and not isinstance(request, CacheRequest):
        raise InputError(f"request must be a CacheRequest or None, got {type(request).__name__}", arg="request")
    return cache_request(request, **fields(changed(func, values)))
