"""Engine capacity profiles: how vLLM, SGLang, TensorRT-LLM and transformers size the KV cache."""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, Engine, EnginePlan, GroupRow, Request, Settings
from kvplan.errors import InputError

ENGINE_NAMES = ("vllm", "sglang", "trtllm", "hf")


def get_engine(name: str) -> Engine:
    """vllm | sglang | trtllm | hf -> its profile."""
    key = name.strip().lower()
    if key == "vllm":
        from kvplan.engines.vllm import VllmEngine

        return VllmEngine()
    if key == "sglang":
        from kvplan.engines.sglang import SglangEngine

        return SglangEngine()
    if key in ("trtllm", "trt-llm", "tensorrt-llm"):
        from kvplan.engines.trtllm import TrtllmEngine

        return TrtllmEngine()
    if key in ("hf", "transformers"):
        from kvplan.engines.hf import HfEngine

        return HfEngine()
    raise InputError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINE_NAMES)}, all")


__all__ = ["ENGINE_NAMES", "BudgetSteps", "Engine", "EnginePlan", "GroupRow", "Request", "Settings", "get_engine"]
