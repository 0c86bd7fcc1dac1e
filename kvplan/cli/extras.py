"""The options of what shares the GPU with the KV cache, common to `kvplan capacity` and `kvplan fit`:
speculative decoding, LoRA slots, multimodal inputs, weights in host memory and the host KV tier."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from kvplan.units import GIB, parse_bytes

SpecModel = Annotated[str | None, typer.Option("--speculative-model", help="Draft checkpoint (id, config.json or "
                                               "folder): its weights and KV layers run beside the target's.")]
SpecMethod = Annotated[str | None, typer.Option("--speculative-method", help="draft_model | eagle | eagle3 | mtp | "
                                                "ngram (default: from the draft's architectures; mtp without one).")]
SpecTokens = Annotated[int | None, typer.Option("--num-speculative-tokens", help="K tokens drafted per step (MTP "
                                                "default: its layers).")]
MaxLoras = Annotated[int | None, typer.Option("--max-loras", help="LoRA slots on the GPU (vLLM --max-loras, 1; "
                                              "SGLang --max-loras-per-batch, 8).")]
LoraModules = Annotated[str | None, typer.Option("--lora-target-modules", help="Comma list (q_proj,v_proj) or all "
                                                 "(default: every linear module).")]
CpuLoras = Annotated[int | None, typer.Option("--max-cpu-loras", help="vLLM adapters cached in host memory.")]
MmLimit = Annotated[int | None, typer.Option("--limit-mm-per-prompt", help="vLLM images per prompt (999); 0: text "
                                             "only, no encoder cache.")]
CpuOffload = Annotated[str | None, typer.Option("--cpu-offload-gb", help="Weights kept in host memory per GPU "
                                                "(vLLM/SGLang), GiB or a size: 10 or 10GiB.")]
KvOffload = Annotated[str | None, typer.Option("--kv-offloading-size", help="Host KV tier: vLLM 0.33 "
                                               "--kv-offloading-size (all ranks), SGLang --hicache-size and TRT-LLM "
                                               "host_cache_size (per rank); GiB or a size (100GB = 10^11 B).")]
HicacheRatio = Annotated[float | None, typer.Option("--hicache-ratio", help="SGLang HiCache host pool = ratio × "
                                                    "device pool (2.0).")]
LmcacheSize = Annotated[str | None, typer.Option("--lmcache-cpu-size", help="LMCache max_local_cpu_size, "
                                                 "allocated by every rank; GiB or a size.")]


OPTIONS = ("speculative_model", "speculative_method", "num_speculative_tokens", "max_loras", "lora_target_modules",
           "max_cpu_loras", "limit_mm_per_prompt", "cpu_offload_gb", "kv_offloading_size", "hicache_ratio",
           "lmcache_cpu_size")


def size_gib(text: str | None) -> int | None:
    """A bare number is GiB (vLLM's and LMCache's unit); a size keeps its unit."""
    if text is None:
        return None
    return int(float(text) * GIB) if re.fullmatch(r"\s*\d+(\.\d+)?\s*", text) else parse_bytes(text)


def modules(text: str | None) -> tuple[str, ...] | None:
    names = tuple(n.strip() for n in (text or "").split(",") if n.strip())
    return None if not names or names == ("all",) else names


def extras_settings(o: dict[str, Any]) -> dict[str, Any]:
    """These options -> Settings keyword arguments (an option a command does not have: not given)."""
    o = {**dict.fromkeys(OPTIONS), **o}
    return dict(speculative_model=o["speculative_model"], speculative_method=o["speculative_method"],
                num_speculative_tokens=o["num_speculative_tokens"], max_loras=o["max_loras"],
                lora_target_modules=modules(o["lora_target_modules"]), max_cpu_loras=o["max_cpu_loras"],
                limit_mm_per_prompt=o["limit_mm_per_prompt"], cpu_offload_bytes=size_gib(o["cpu_offload_gb"]) or 0,
                kv_offloading_bytes=size_gib(o["kv_offloading_size"]), hicache_ratio=o["hicache_ratio"],
                lmcache_cpu_bytes=size_gib(o["lmcache_cpu_size"]))
