"""Engine capacity profiles: how vLLM, SGLang, TensorRT-LLM and transformers size the KV cache.

One module per engine; ``REGISTRY`` maps the names users type to the profile class. Adding an
engine (or an engine release) is one module, one row here, and its tests.
"""

from __future__ import annotations

import importlib

from kvplan.engines.base import BudgetSteps, Engine, EnginePlan, GroupRow, Request, Settings
from kvplan.errors import InputError

ENGINE_NAMES = ("vllm", "sglang", "trtllm", "hf")

# name -> (module, class); aliases are rows too.
REGISTRY: dict[str, tuple[str, str]] = {
    "vllm": ("kvplan.engines.vllm", "VllmEngine"),
    "sglang": ("kvplan.engines.sglang", "SglangEngine"),
    "trtllm": ("kvplan.engines.trtllm", "TrtllmEngine"),
    "trt-llm": ("kvplan.engines.trtllm", "TrtllmEngine"),
    "tensorrt-llm": ("kvplan.engines.trtllm", "TrtllmEngine"),
    "hf": ("kvplan.engines.hf", "HfEngine"),
    "transformers": ("kvplan.engines.hf", "HfEngine"),
}


def get_engine(name: str) -> Engine:
    """vllm | sglang | trtllm | hf -> its profile (the module is imported on first use)."""
    row = REGISTRY.get(name.strip().lower())
    if row is None:
        raise InputError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINE_NAMES)}, all")
    profile: Engine = getattr(importlib.import_module(row[0]), row[1])()
    return profile


__all__ = ["ENGINE_NAMES", "REGISTRY", "BudgetSteps", "Engine", "EnginePlan", "GroupRow", "Request", "Settings",
           "get_engine"]
