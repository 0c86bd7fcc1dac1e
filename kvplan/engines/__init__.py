"""Engine capacity profiles: how vLLM, SGLang, TensorRT-LLM and transformers size the KV cache.

One module per engine, one profile per release it follows (a release is a row of data in that
module). ``REGISTRY`` maps the names users type (``vllm``, ``vllm@0.11``, ``sglang@0.5.2``) to the
profile class and the release row; a bare name is the newest release kvplan follows. Adding an
engine release is one row in its module, one row here, and its tests.
"""

from __future__ import annotations

import importlib
import re

from kvplan.engines.base import (
    BudgetRules,
    BudgetSteps,
    BudgetTerm,
    Device,
    Engine,
    EnginePlan,
    GroupRow,
    ProfileRun,
    Refusal,
    Request,
)
from kvplan.engines.settings import Settings, SglangSettings, TrtllmSettings, VllmSettings, settings_from
from kvplan.errors import InputError

ENGINE_NAMES = ("vllm", "sglang", "trtllm", "hf")  # `--engine all`: the newest release of each

_VLLM, _SGLANG = ("kvplan.engines.vllm", "VllmEngine"), ("kvplan.engines.sglang", "SglangEngine")
_TRTLLM, _HF = ("kvplan.engines.trtllm", "TrtllmEngine"), ("kvplan.engines.hf", "HfEngine")
# name -> (module, class, release key)
REGISTRY: dict[str, tuple[str, str, str]] = {
    "vllm": (*_VLLM, "0.33"), "vllm@0.33": (*_VLLM, "0.33"), "vllm@0.11": (*_VLLM, "0.11"),
    "vllm@0.10": (*_VLLM, "0.10"), "vllm@0.9": (*_VLLM, "0.9"), "vllm@0.8": (*_VLLM, "0.8"),
    "vllm@0.8-v0": (*_VLLM, "0.8-v0"), "vllm@0.7": (*_VLLM, "0.7"), "vllm@0.6.6": (*_VLLM, "0.6.6"),
    "vllm@0.6.5": (*_VLLM, "0.6.5"), "vllm@0.6.4": (*_VLLM, "0.6.4"),
    "sglang": (*_SGLANG, "0.5.23"), "sglang@0.5": (*_SGLANG, "0.5.23"), "sglang@0.5.23": (*_SGLANG, "0.5.23"),
    "sglang@0.5.2": (*_SGLANG, "0.5.2"), "sglang@0.4": (*_SGLANG, "0.4"),
    "trtllm": (*_TRTLLM, "1"), "trtllm@1": (*_TRTLLM, "1"),
    "hf": (*_HF, "5"), "hf@5": (*_HF, "5"),
}
ALIASES = {"trt-llm": "trtllm", "tensorrt-llm": "trtllm", "transformers": "hf"}


def _lookup(name: str) -> tuple[str, str, str] | None:
    """`vllm@v0.10.1.1` -> the row of `vllm@0.10`: the longest dotted prefix of the version that has a row."""
    base, at, version = name.strip().lower().partition("@")
    base = ALIASES.get(base, base)
    if not at:
        return REGISTRY.get(base)
    parts = re.sub(r"^v(?=\d)", "", version).split(".")
    for end in range(len(parts), 0, -1):
        row = REGISTRY.get(f"{base}@{'.'.join(parts[:end])}")
        if row:
            return row
    return None


def get_engine(name: str) -> Engine:
    """vllm | vllm@0.11 | sglang@0.5.2 | trtllm | hf ... -> its profile (the module is imported on first use)."""
    row = _lookup(name)
    if row is None:
        known = ", ".join(n for n in REGISTRY if "@" in n)
        raise InputError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINE_NAMES)} (the newest releases), "
                         f"{known}, all")
    profile: Engine = getattr(importlib.import_module(row[0]), row[1])(row[2])
    return profile


__all__ = ["ENGINE_NAMES", "REGISTRY", "BudgetRules", "BudgetSteps", "BudgetTerm", "Device", "Engine", "EnginePlan",
           "GroupRow", "ProfileRun", "Refusal", "Request", "Settings", "SglangSettings", "TrtllmSettings",
           "VllmSettings", "get_engine", "settings_from"]
