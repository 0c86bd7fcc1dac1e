"""The engine options of `kvplan capacity`, `fit` and `report`: the GPU, the budget and each engine's knobs.

Each option takes the engine's own flag name (vLLM's where vLLM has the knob; SGLang's and trtllm-serve's
spellings are rewritten to it, see ``kvplan.cli.common.FLAG_ALIASES``). ``engine_settings`` turns them into
``kvplan.engines.Settings``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvplan.cli.common import BLOCK_NAMES
from kvplan.cli.extras import extras_settings
from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.units import parse_positive_tokens

Gpu = Annotated[str | None, typer.Option("--gpu", help="GPU type: H100, H200, A100-80G, ... (default H100).")]
GpuMem = Annotated[str | None, typer.Option("--gpu-mem", help="Override the GPU's memory, e.g. 79GiB.")]
Engines = Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | hf | all (the newest releases), or "
                                      "a release: vllm@0.33, vllm@0.11, vllm@0.10, vllm@0.9, vllm@0.8, vllm@0.7, "
                                      "vllm@0.6.4, sglang@0.5.2, ...; a comma list compares them side by side.")]
Overhead = Annotated[str | None, typer.Option("--overhead", help="Per-GPU overhead instead of kvplan's estimate.")]
BlockSizeOpt = Annotated[int | None, typer.Option(
    *BLOCK_NAMES, help="vLLM block / SGLang page (also --page-size) / TRT-LLM tokens_per_block (default: the "
                       "engine's).")]
KvBudget = Annotated[str | None, typer.Option("--kv-budget", help="KV memory per GPU as the engine logs it (20GiB; "
                                              "or 12.13GiB,11GiB per PP stage); skips the estimate.")]
WeightsDtype = Annotated[str | None, typer.Option("--weights-dtype", help="What-if weights: bf16, fp16, fp32, fp8, "
                                                  "int8, int4 (default: the checkpoint's).")]
Quantization = Annotated[str | None, typer.Option("--quantization", "-q", help="vLLM --quantization: the checkpoint's "
                                                  "own method, or fp8 (quantized at load).")]
GpuUtil = Annotated[float | None, typer.Option("--gpu-memory-utilization", help="vLLM fraction of total memory (0.92 "
                                               "in 0.33, 0.9 before).")]
MemFraction = Annotated[float | None, typer.Option("--mem-fraction-static", help="SGLang fraction of free memory "
                                                   "incl. weights (default: from the GPU's memory and its reserve).")]
FreeFraction = Annotated[float | None, typer.Option("--free-gpu-memory-fraction", help="TRT-LLM fraction of memory "
                                                    "free after load (0.9; also --kv_cache_free_gpu_memory_fraction).")]
Batched = Annotated[str | None, typer.Option("--max-num-batched-tokens", help="vLLM profile-run "
                                             "tokens (default: the release's, by GPU class and entry point; 8192 for "
                                             "vllm serve on an H100); TRT-LLM max_num_tokens.")]
MaxSeqs = Annotated[int | None, typer.Option("--max-num-seqs", help="vLLM sampler rows of the profile run (default "
                                             "by GPU class: 1024 on an H100, 256 below 70 GiB).")]
EntryPoint = Annotated[str, typer.Option("--entry-point", help="vLLM: serve (vllm serve) or llm (the LLM class): "
                                         "their scheduler defaults differ.")]
Sampler = Annotated[str | None, typer.Option("--sampler", help="vLLM profile-run sampler: sort (38 B/logit) or "
                                             "flashinfer (~15 B/logit); default: the release's.")]
Eager = Annotated[bool, typer.Option("--enforce-eager", help="vLLM/TRT-LLM: no CUDA graphs, eager profile forward.")]
MoeBackend = Annotated[str | None, typer.Option("--moe-backend", help="vLLM MXFP4 experts: marlin (padded) or triton.")]
LoraRank = Annotated[int | None, typer.Option("--max-lora-rank", help="--enable-lora: LoRA slots of this rank "
                                              "(vLLM default 16) are allocated with the weights.")]
NonTorch = Annotated[str | None, typer.Option("--non-torch", help="Non-torch memory per GPU instead of kvplan's "
                                              "estimate (context, NCCL), e.g. 2.1GiB as vLLM logs it.")]
Dp = Annotated[int, typer.Option("--dp", help="SGLang DP-attention size (also --dp-size).")]
NoHybrid = Annotated[bool, typer.Option("--disable-hybrid-kv-cache-manager", help="vLLM: windows kept in full.")]
NoAsync = Annotated[bool, typer.Option("--no-async-scheduling", help="vLLM: one batch fewer in flight.")]

FRACTIONS = ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction")
DEFAULTS: dict[str, Any] = {**dict.fromkeys(("max_num_seqs", "sampler", "moe_backend", "max_lora_rank", "block_size",
                                             "max_num_batched_tokens", *FRACTIONS)),
                            "enforce_eager": False, "entry_point": "serve", "dp": 1,
                            "disable_hybrid_kv_cache_manager": False, "no_async_scheduling": False}


def engine_settings(o: dict[str, Any]) -> Settings:
    """A command's engine options -> Settings (None: the release's default). Options a command does not have
    are taken as not given."""
    o = {**DEFAULTS, **o}
    for name in FRACTIONS:
        if o[name] is not None and not 0 < o[name] <= 1:
            raise InputError(f"{name} must be in (0, 1], got {o[name]}", arg=name)
    batched = o["max_num_batched_tokens"]
    return Settings(block_size=o["block_size"], gpu_memory_utilization=o["gpu_memory_utilization"],
                    mem_fraction_static=o["mem_fraction_static"], free_gpu_memory_fraction=o["free_gpu_memory_fraction"],
                    dp=o["dp"], hybrid_kv_cache_manager=not o["disable_hybrid_kv_cache_manager"],
                    async_scheduling=False if o["no_async_scheduling"] else None, entry_point=o["entry_point"],
                    max_num_batched_tokens=parse_positive_tokens(batched, "--max-num-batched-tokens") if batched else None,
                    max_num_seqs=o["max_num_seqs"], sampler=o["sampler"], enforce_eager=o["enforce_eager"],
                    moe_backend=o["moe_backend"], max_lora_rank=o["max_lora_rank"], **extras_settings(o))


def weights_option(model: Any, weights_dtype: str | None, quantization: str | None) -> str | None:
    """--weights-dtype or vLLM's --quantization (not both) -> the weights_dtype the library reads."""
    from kvplan.planning.weights import weights_for_quantization

    if quantization is None:
        return weights_dtype
    if weights_dtype is not None:
        raise InputError("give --quantization (what vLLM runs) or --weights-dtype (a what-if), not both")
    return weights_for_quantization(model, quantization)
