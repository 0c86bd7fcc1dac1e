"""The options of the commands that plan on a GPU (capacity, fit, compare, sweep, report, reconcile, probe): the
engine's knobs, the GPU and its memory, and what sits beside the cache. Defined once here, as kvplan.cli.options
defines the model, parallelism, cache and output options (its docstring says how an option becomes an object);
apart from those so that `kvplan size` neither imports nor builds them.
"""

from __future__ import annotations

from typing import Annotated, Any

from kvplan.cli.expand import Expand
from kvplan.cli.options import ENGINE, EXTRAS, MEMORY, option, switch
from kvplan.errors import InputError
from kvplan.units import parse_gib_size, parse_memory_size, parse_positive_tokens


def gpus_completed(incomplete: str) -> list[str]:
    from kvplan.planning.gpus import gpu_names

    return [name for name in gpu_names() if name.lower().startswith(incomplete.lower())]


def engines_completed(incomplete: str) -> list[str]:
    from kvplan.engines import ENGINE_NAMES, registry

    return [name for name in dict.fromkeys((*ENGINE_NAMES, "all", *registry())) if name.startswith(incomplete.lower())]


# Engine.
ENGINES = option("--engine", "vllm, sglang, trtllm, hf, all, or a release: vllm@0.19; all: the newest releases; "
                 "kvplan engines lists the releases; a comma list or repeated compares them (fit, reconcile: "
                 "one).", ENGINE, "ENGINE", autocompletion=engines_completed)
Engines = Annotated[list[str] | None, ENGINES]
GpuUtil = Annotated[float | None, option("--gpu-memory-utilization", "vLLM: fraction of total memory (0.92 from "
                                         "0.20, 0.9 before).", ENGINE, "FRACTION")]
MemFraction = Annotated[float | None, option("--mem-fraction-static", "SGLang: fraction of free memory, weights "
                                             "included (default: by GPU memory and its reserve).", ENGINE, "FRACTION")]
FreeFraction = Annotated[float | None, option("--free-gpu-memory-fraction", "TRT-LLM: fraction of the memory free "
                                              "after load (0.9; trtllm-serve's spelling works too).", ENGINE,
                                              "FRACTION")]
Batched = Annotated[str | None, option("--max-num-batched-tokens", "vLLM profile-run tokens (default by release, GPU "
                                       "and entry point; 8192 for serve on an H100); TRT-LLM max_num_tokens.", ENGINE,
                                       "TOKENS")]
MaxSeqs = Annotated[int | None, option("--max-num-seqs", "vLLM sampler rows of the profile run (default by GPU: "
                                       "1024 on an H100, 256 below 70 GiB).", ENGINE, "N")]
EntryPoint = Annotated[str, option("--entry-point", "vLLM: serve (vllm serve) or llm (the LLM class); their "
                                   "scheduler defaults differ.", ENGINE, "NAME")]
Sampler = Annotated[str | None, option("--sampler", "vLLM profile-run sampler (default: the release's); "
                                       "sort, flashinfer, triton, flashinfer+triton, gumbel or bf16.", ENGINE, "NAME")]
Eager = Annotated[bool, switch("--enforce-eager", "vLLM/TRT-LLM: no CUDA graphs, eager profile forward.", ENGINE)]
MoeBackend = Annotated[str | None, option("--moe-backend", "vLLM MXFP4 experts: marlin, triton, flashinfer_trtllm "
                                          "or deepgemm (default: the release's pick for the GPU).", ENGINE, "NAME")]
NoHybrid = Annotated[bool, switch("--disable-hybrid-kv-cache-manager", "vLLM: sliding windows kept in full.", ENGINE)]
NoAsync = Annotated[bool, switch("--no-async-scheduling", "vLLM: one batch fewer in flight.", ENGINE)]

# GPU memory.
GPU = option("--gpu", "GPU type: H100, H200, A100-80G, L40S, ... (default H100); a comma list where a command "
             "ranks them; fit: default every GPU of the catalog; probe: the local CUDA device's index.", MEMORY, "GPU", autocompletion=gpus_completed)
Gpu = Annotated[str | None, GPU]
GpuIndex = Annotated[int | None, GPU]
GpuMem = Annotated[str | None, option("--gpu-mem", "The GPU's memory instead of the catalog's, e.g. 79GiB.",
                                      MEMORY, "SIZE")]
KvBudget = Annotated[str | None, option("--kv-budget", "KV memory per GPU as the engine logs it (20GiB, or "
                                        "12.13GiB,11GiB per PP stage): no estimate.", MEMORY, "SIZE")]
Overhead = Annotated[str | None, option("--overhead", "Everything but the weights per GPU, measured, instead of the "
                                        "budget terms.", MEMORY, "SIZE")]
NonTorch = Annotated[str | None, option("--non-torch", "Non-torch memory per GPU (context, NCCL) as vLLM logs it, "
                                        "e.g. 2.1GiB.", MEMORY, "SIZE")]
WeightsDtype = Annotated[str | None, option("--weights-dtype", "What-if weights: bf16, fp16, fp32, fp8, int8, int4 "
                                            "(default: the checkpoint's).", MEMORY, "DTYPE")]
HostMem = Annotated[str | None, option("--host-mem", "One node's RAM (default: the GPU's usual server); the "
                                       "pinned host tier and offloaded weights of its ranks must fit in it.", MEMORY,
                                       "SIZE")]
Quantization = Annotated[str | None, option("--quantization", "vLLM --quantization (also -q): the checkpoint's own "
                                            "method, or fp8 quantized at load.", MEMORY, "METHOD")]

# Beside the cache: speculative decoding, LoRA, multimodal inputs, host memory.
SpecModel = Annotated[str | None, option("--speculative-model", "Draft checkpoint (id, config.json or folder): its "
                                         "weights and KV layers beside the target's.", EXTRAS, "MODEL")]
SpecMethod = Annotated[str | None, option("--speculative-method", "draft_model, eagle, eagle3, mtp, ngram (default: "
                                          "from the draft's name; mtp without one).", EXTRAS, "NAME")]
SpecTokens = Annotated[int | None, option("--num-speculative-tokens", "Tokens drafted per step (MTP default: its "
                                          "layers).", EXTRAS, "N")]
LoraRank = Annotated[int | None, option("--max-lora-rank", "--enable-lora: LoRA slots of this rank (vLLM: 16) are "
                                        "allocated with the weights.", EXTRAS, "N")]
MaxLoras = Annotated[int | None, option("--max-loras", "LoRA slots on the GPU (vLLM --max-loras, 1; SGLang "
                                        "--max-loras-per-batch, 8).", EXTRAS, "N")]
LoraModules = Annotated[str | None, option("--lora-target-modules", "Comma list (q_proj,v_proj) or all (default: "
                                           "every linear module).", EXTRAS, "NAMES")]
CpuLoras = Annotated[int | None, option("--max-cpu-loras", "vLLM adapters cached in host memory.", EXTRAS, "N")]
MmLimit = Annotated[int | None, option("--limit-mm-per-prompt", "vLLM images per prompt (999); 0: text only, no "
                                       "encoder cache.", EXTRAS, "N")]
CpuOffload = Annotated[str | None, option("--cpu-offload-gb", "WEIGHTS (not KV) kept in pinned host memory, per "
                                          "GPU (vLLM, SGLang); GiB or a size: 10 or 10GiB.", EXTRAS, "GIB")]
KvOffload = Annotated[str | None, option("--kv-offloading-size", "Host KV tier (KV, not weights): vLLM native "
                                         "offloading, a total over all TP x PP ranks; SGLang --hicache-size and "
                                         "TRT-LLM host_cache_size, per rank; GiB or a size.", EXTRAS, "GIB")]
HicacheRatio = Annotated[float | None, option("--hicache-ratio", "SGLang HiCache host pool = ratio × device pool "
                                              "(2.0).", EXTRAS, "RATIO")]
LmcacheSize = Annotated[str | None, option("--lmcache-cpu-size", "LMCache max_local_cpu_size, allocated by every "
                                           "rank; GiB or a size.", EXTRAS, "GIB")]
Role = Annotated[str | None, option("--role", "prefill or decode: one instance of a disaggregated deployment; its "
                                    "KV transfer flags, transfer bytes and descriptors per request, decode reserve.",
                                    EXTRAS, "ROLE")]
MooncakeSize = Annotated[str | None, option("--mooncake-segment-size", "SGLang HiCache with the Mooncake store: "
                                            "global_segment_size, split over the TP ranks (4GiB); GiB or a size.",
                                            EXTRAS, "GIB")]


def engine_options(
    max_num_batched_tokens: Batched = None, max_num_seqs: MaxSeqs = None, enforce_eager: Eager = False,
    gpu_memory_utilization: GpuUtil = None, entry_point: EntryPoint = "serve", sampler: Sampler = None,
    moe_backend: MoeBackend = None, disable_hybrid_kv_cache_manager: NoHybrid = False,
    no_async_scheduling: NoAsync = False, mem_fraction_static: MemFraction = None,
    free_gpu_memory_fraction: FreeFraction = None, speculative_model: SpecModel = None,
    speculative_method: SpecMethod = None, num_speculative_tokens: SpecTokens = None, max_lora_rank: LoraRank = None,
    max_loras: MaxLoras = None, lora_target_modules: LoraModules = None, max_cpu_loras: CpuLoras = None,
    limit_mm_per_prompt: MmLimit = None, cpu_offload_bytes: CpuOffload = None, kv_offloading_bytes: KvOffload = None,
    hicache_ratio: HicacheRatio = None, lmcache_cpu_bytes: LmcacheSize = None,
    mooncake_segment_bytes: MooncakeSize = None, role: Role = None,
) -> Any:
    """Every engine's knobs (None: the release's default)."""
    from kvplan.engines.settings import settings_from

    batched = max_num_batched_tokens
    return settings_from(dict(
        max_num_batched_tokens=parse_positive_tokens(batched, "max_num_batched_tokens") if batched else None,
        max_num_seqs=max_num_seqs, enforce_eager=enforce_eager, gpu_memory_utilization=gpu_memory_utilization,
        entry_point=entry_point, sampler=sampler, moe_backend=moe_backend,
        hybrid_kv_cache_manager=not disable_hybrid_kv_cache_manager,
        async_scheduling=False if no_async_scheduling else None, mem_fraction_static=mem_fraction_static,
        free_gpu_memory_fraction=free_gpu_memory_fraction, speculative_model=speculative_model,
        speculative_method=speculative_method, num_speculative_tokens=num_speculative_tokens,
        max_lora_rank=max_lora_rank, max_loras=max_loras, lora_target_modules=_modules(lora_target_modules),
        max_cpu_loras=max_cpu_loras, limit_mm_per_prompt=limit_mm_per_prompt,
        cpu_offload_bytes=size_gib(cpu_offload_bytes, "cpu_offload_bytes") or 0,
        kv_offloading_bytes=size_gib(kv_offloading_bytes, "kv_offloading_bytes"), hicache_ratio=hicache_ratio,
        lmcache_cpu_bytes=size_gib(lmcache_cpu_bytes, "lmcache_cpu_bytes"),
        mooncake_segment_bytes=size_gib(mooncake_segment_bytes, "mooncake_segment_bytes"), role=role))


def memory_options(gpu: Gpu = None, gpu_memory_bytes: GpuMem = None, kv_budget_bytes: KvBudget = None,
                   overhead_bytes: Overhead = None, non_torch_bytes: NonTorch = None,
                   weights_dtype: WeightsDtype = None, quantization: Quantization = None,
                   host_memory_bytes: HostMem = None) -> Any:
    """The GPU and the figures that replace estimates."""
    from kvplan.planning.request import Memory

    return Memory(gpu=gpu, gpu_memory_bytes=_size(gpu_memory_bytes, "gpu_memory_bytes"),
                  kv_budget_bytes=kv_budget(kv_budget_bytes), overhead_bytes=_size(overhead_bytes, "overhead_bytes"),
                  non_torch_bytes=_size(non_torch_bytes, "non_torch_bytes"), weights_dtype=weights_dtype,
                  quantization=quantization, host_memory_bytes=_size(host_memory_bytes, "host_memory_bytes"))


def _size(text: str | None, name: str) -> int | None:
    return None if text is None else parse_memory_size(text, name)


def kv_budget(text: str | None) -> tuple[int, ...] | None:
    """--kv-budget: `20GiB`, or one size per PP stage (`12.13GiB,11GiB`), each at least 1 MiB (or 0)."""
    if text is None:
        return None
    from kvplan.planning.budget import parse_budget
    from kvplan.planning.request import MAX_GPU_MEMORY_BYTES

    budgets = parse_budget(text)
    for value in budgets:  # one GPU's KV memory (the library takes more: reconcile plans on an unlimited budget)
        if value > MAX_GPU_MEMORY_BYTES:
            raise InputError(f"kv_budget_bytes {value / MAX_GPU_MEMORY_BYTES:,.2f} TiB: more than any GPU's memory "
                             "(at most 1 TiB); it is one GPU's KV memory", arg="kv_budget_bytes")
    return budgets


def size_gib(text: str | None, name: str) -> int | None:
    """A bare number is GiB (vLLM's and LMCache's unit); a size keeps its unit."""
    return None if text is None else parse_gib_size(text, name)


def _modules(text: str | None) -> tuple[str, ...] | None:
    names = tuple(n.strip() for n in (text or "").split(",") if n.strip())
    return None if not names or names == ("all",) else names


EngineArgs = Annotated[Any, Expand(engine_options)]  # a kvplan.engines.Settings
MemoryArgs = Annotated[Any, Expand(memory_options)]
