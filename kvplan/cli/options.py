"""Every option of every command, defined once: its flag, its help, its help panel, and the object it builds.

An option is an ``Annotated`` alias shared by the commands that take it. The options that make one library
object are the parameters of one builder here (``model_options``, ``cache_options``, ``engine_options``,
``memory_options``); a command asks for the object (``cache: CacheArgs``) and ``kvplan.cli.expand`` gives it
the builder's options and the object built from them. Each builder turns CLI text into the library's values
and lets the object check itself, so the library and the CLI refuse the same input with the same message.

Flags take vLLM's names. Each option declares one flag (the help shows it whole at 80 columns); the short
forms and the other engines' spellings (``--tp``, ``--tp-size``, ``--context-length``, ...) are rewritten to it
before parsing (``FLAG_ALIASES``) and named in the help text.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from kvplan.cli.expand import Expand
from kvplan.dtypes import KV_DTYPE_NAMES
from kvplan.errors import InputError
from kvplan.formulas.layers import ATTENTION_OVERRIDES, Overrides, parse_layer_ranges
from kvplan.formulas.request import CacheRequest
from kvplan.units import GIB, parse_bytes, parse_count, parse_memory_size, parse_positive_tokens

MODEL, PARALLEL, CACHE, ENGINE, MEMORY, EXTRAS, OUTPUT = (
    "Model", "Parallelism", "Cache", "Engine", "GPU memory", "Beside the cache", "Output")


def models_completed(incomplete: str) -> list[str]:
    """Shell completion: the bundled model ids that start with what was typed (case-insensitive)."""
    from kvplan.config import bundled_index

    return [name for name in bundled_index() if name.lower().startswith(incomplete.lower())]


def gpus_completed(incomplete: str) -> list[str]:
    from kvplan.planning.gpus import gpu_names

    return [name for name in gpu_names() if name.lower().startswith(incomplete.lower())]


def engines_completed(incomplete: str) -> list[str]:
    from kvplan.engines import ENGINE_NAMES, REGISTRY

    return [name for name in dict.fromkeys((*ENGINE_NAMES, "all", *REGISTRY)) if name.startswith(incomplete.lower())]


def dtypes_completed(incomplete: str) -> list[str]:
    return [name for name in KV_DTYPE_NAMES if name.startswith(incomplete.lower())]


def option(flag: str, help: str, panel: str, metavar: str = "", **extra: Any) -> Any:
    """One option's flag, help and panel (metavar "" for a switch: no type shown)."""
    return typer.Option(flag, help=help, rich_help_panel=panel, metavar=metavar or None, show_default=False,
                        **extra)


def switch(flag: str, help: str, panel: str) -> Any:
    return typer.Option(flag, help=help, rich_help_panel=panel, metavar="", show_default=False)


# Model.
MODEL_OPTION = option("--model", "The model (also -m): probe: repeatable (default: a GQA, MQA, MLA, sliding, linear, "
                      "fp8, int4 set); reconcile: where the log names none or one kvplan cannot load.", MODEL, "MODEL",
                      autocompletion=models_completed)
ModelOrNone = Annotated[str | None, MODEL_OPTION]
ModelList = Annotated[list[str] | None, MODEL_OPTION]
Model = Annotated[str, typer.Argument(help="Model id (bundled, HF cache or hub), config.json, or folder.",
                                      show_default=False, autocompletion=models_completed)]
Revision = Annotated[str | None, option("--revision", "Hub revision (branch, tag or commit) of the config, from the "
                                        "HF cache or the hub; never the bundled copy.", MODEL, "REV")]
ModelDtype = Annotated[str, option("--dtype", "As vLLM's --dtype: auto (the config's; fp32 served as bf16), "
                                   "bfloat16, float16, float32.", MODEL, "DTYPE")]

# Parallelism. (An option object is shared by the aliases that type it: one value, or a sweep's axis.)
AXIS = "; sweep: a list or a range"
TP = option("--tensor-parallel-size", f"TP size (also --tp, -tp): splits KV heads, floor, replicated past their "
            f"count; MLA is replicated{AXIS}.", PARALLEL, "N")
PP = option("--pipeline-parallel-size", f"PP size (also --pp, -pp): splits layers as vLLM does{AXIS}.", PARALLEL, "N")
Tp = Annotated[int, TP]
TpAxis = Annotated[str, TP]
TpOrNone = Annotated[int | None, TP]
Pp = Annotated[int, PP]
PpAxis = Annotated[str, PP]
PpOrNone = Annotated[int | None, PP]
Dcp = Annotated[int, option("--decode-context-parallel-size", "DCP size (also --dcp, -dcp): splits a sequence's "
                            "tokens over that many of the TP ranks.", PARALLEL, "N")]
Dp = Annotated[int, option("--data-parallel-size", "Data parallel, as the engine runs it (also --dp, -dp): vLLM "
                           "--data-parallel-size, dp engines of tp × pp GPUs each with its own KV pool; SGLang "
                           "--dp-size with --enable-dp-attention, dp attention groups inside the tp GPUs "
                           "(attention TP = tp / dp).", PARALLEL, "N")]
Ep = Annotated[int, option("--ep", "Expert-parallel ranks: vLLM --enable-expert-parallel is dp × tp; SGLang "
                           "--ep-size (dividing tp; also --ep-size, --expert-parallel-size).", PARALLEL, "N")]

# Cache.
MAX_MODEL_LEN = option("--max-model-len", f"Tokens per sequence (4096, 32k; also --seq-len, --context-length); "
                       f"default: the model's{AXIS}.", CACHE, "TOKENS")
BATCH = option("--batch", f"Sequences held at once (also --concurrency){AXIS}.", CACHE, "N")
MaxModelLen = Annotated[str | None, MAX_MODEL_LEN]
LengthAxis = Annotated[str, MAX_MODEL_LEN]
Batch = Annotated[str, BATCH]
KV_DTYPE = option("--kv-cache-dtype", f"KV dtype (also --kv-dtype): {', '.join(KV_DTYPE_NAMES)}; where a command "
                  "compares them, a comma list or repeated (fit: or any).", CACHE, "DTYPE",
                  autocompletion=dtypes_completed)
KvDtype = Annotated[str, KV_DTYPE]
KvDtypes = Annotated[list[str] | None, KV_DTYPE]
KvDtypeOrNone = Annotated[str | None, KV_DTYPE]
BlockSize = Annotated[int | None, option("--block-size", "Tokens per block (also --page-size; 0: no paging); "
                                         "default: the engine's (size: 16).", CACHE, "TOKENS")]
QuantGroup = Annotated[int, option("--quant-group", "int8/int4 KV: elements per fp16 scale.", CACHE, "N")]
StateDtype = Annotated[str, option("--mamba-cache-dtype", "Linear/Mamba conv state dtype (also --state-dtype), and "
                                   "the recurrent one's unless given: auto, fp32, bf16, fp16.", CACHE, "DTYPE")]
SsmStateDtype = Annotated[str, option("--mamba-ssm-cache-dtype", "Recurrent state dtype (also --ssm-state-dtype): "
                                      "auto (the config's own, else the conv state's), fp32, bf16, fp16.", CACHE,
                                      "DTYPE")]
Attention = Annotated[str | None, option("--attention", "Override the attention kind: mha, gqa, mqa, mla.", CACHE,
                                         "KIND")]
KvHeads = Annotated[int | None, option("--kv-heads", "Override the number of KV heads.", CACHE, "N")]
LayerTypes = Annotated[str | None, option("--layer-types", 'Override the layer kinds: "0-15:full,16-31:sliding".',
                                          CACHE, "RANGES")]
Window = Annotated[str | None, option("--window", "Override the window (sliding) or chunk (chunked), tokens.", CACHE,
                                      "TOKENS")]

# Engine.
ENGINES = option("--engine", "vllm, sglang, trtllm, hf, all (the newest releases), or a release: vllm@0.19, "
                 "sglang@0.5.2 (kvplan engines lists them); a comma list or repeated compares them (fit, reconcile: "
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
Sampler = Annotated[str | None, option("--sampler", "vLLM profile-run sampler: sort, flashinfer, triton, "
                                       "flashinfer+triton, gumbel or bf16 (default: the release's).", ENGINE, "NAME")]
Eager = Annotated[bool, switch("--enforce-eager", "vLLM/TRT-LLM: no CUDA graphs, eager profile forward.", ENGINE)]
MoeBackend = Annotated[str | None, option("--moe-backend", "vLLM MXFP4 experts: marlin (padded) or triton.", ENGINE,
                                          "NAME")]
NoHybrid = Annotated[bool, switch("--disable-hybrid-kv-cache-manager", "vLLM: sliding windows kept in full.", ENGINE)]
NoAsync = Annotated[bool, switch("--no-async-scheduling", "vLLM: one batch fewer in flight.", ENGINE)]

# GPU memory.
GPU = option("--gpu", "GPU type: H100, H200, A100-80G, L40S, ... (default H100); a comma list where a command "
             "ranks them (fit); probe: the local CUDA device's index.", MEMORY, "GPU", autocompletion=gpus_completed)
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
CpuOffload = Annotated[str | None, option("--cpu-offload-gb", "Weights kept in host memory per GPU (vLLM, SGLang), "
                                          "GiB or a size: 10 or 10GiB.", EXTRAS, "GIB")]
KvOffload = Annotated[str | None, option("--kv-offloading-size", "Host KV tier: vLLM 0.33 (all ranks), SGLang "
                                         "--hicache-size, TRT-LLM host_cache_size (per rank); GiB or a size.", EXTRAS,
                                         "GIB")]
HicacheRatio = Annotated[float | None, option("--hicache-ratio", "SGLang HiCache host pool = ratio × device pool "
                                              "(2.0).", EXTRAS, "RATIO")]
LmcacheSize = Annotated[str | None, option("--lmcache-cpu-size", "LMCache max_local_cpu_size, allocated by every "
                                           "rank; GiB or a size.", EXTRAS, "GIB")]

# Output.
GpusPerNode = Annotated[int | None, option("--gpus-per-node", "GPUs of one node (fit: 8; the largest TP, PP and DP cross "
                                    "nodes; capacity: the command is written for a replica over as many nodes as "
                                    "it needs).", PARALLEL, "N")]
Json = Annotated[bool, switch("--json", "Print JSON instead of tables (sweep: JSON lines, one per point; report: the "
                              "page's JSON, and the page only with -o).", OUTPUT)]
Explain = Annotated[bool, switch("--explain", "Show each number with its formula.", OUTPUT)]
Plot = Annotated[str | None, option("--plot", "Also draw a chart to this .png/.svg file (needs kvplan\\[plot]).",
                                    OUTPUT, "FILE")]


def listed(values: list[str] | None, name: str, default: str) -> tuple[str, ...]:
    """Repeated options and comma lists -> one tuple ('auto,fp8' -> ('auto', 'fp8')), each once."""
    items = [v.strip() for item in values or [default] for v in item.split(",")]
    if any(not v for v in items):
        raise InputError(f"{name} {','.join(values or [])!r} has an empty item: give a comma list like vllm,sglang",
                         arg=name)
    return tuple(dict.fromkeys(items))


def model_options(model: Model, revision: Revision = None, dtype: ModelDtype = "auto") -> Any:
    """The model, as --dtype serves it."""
    from kvplan.config import load_model, with_dtype

    return with_dtype(load_model(model, revision=revision), dtype)


def cache_options(tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, dp: Dp = 1, ep: Ep = 1, max_model_len: MaxModelLen = None,
                  batch: Batch = "1", kv_dtype: KvDtype = "auto", block_size: BlockSize = None,
                  quant_group: QuantGroup = 8, state_dtype: StateDtype = "auto", ssm_state_dtype: SsmStateDtype = "auto",
                  attention: Attention = None, kv_heads: KvHeads = None, layer_types: LayerTypes = None,
                  window: Window = None) -> CacheRequest:
    """The cache question."""
    return CacheRequest(
        tp=tp, pp=pp, dcp=dcp, dp=dp, ep=ep, kv_dtype=kv_dtype, block_size=block_size, quant_group=quant_group,
        state_dtype=state_dtype, ssm_state_dtype=ssm_state_dtype, batch=parse_count(batch, "batch"),
        max_model_len=None if max_model_len is None else parse_positive_tokens(max_model_len, "max_model_len"),
        overrides=overrides(attention, kv_heads, layer_types, window))


def overrides(attention: str | None, kv_heads: int | None, layer_types: str | None,
              window: str | None) -> Overrides | None:
    """The override flags -> Overrides (None when nothing is overridden)."""
    if attention is not None and attention.lower() not in ATTENTION_OVERRIDES:
        raise InputError(f"unknown attention {attention!r}; choose one of: {', '.join(ATTENTION_OVERRIDES)}",
                         arg="attention")
    if kv_heads is not None and kv_heads <= 0:
        raise InputError(f"kv_heads must be positive, got {kv_heads}", arg="kv_heads")
    if not any((attention, kv_heads, layer_types, window)):
        return None
    return Overrides(attention=attention.lower() if attention else None, kv_heads=kv_heads,
                     layer_kinds=parse_layer_ranges(layer_types) if layer_types else (),
                     window=parse_positive_tokens(window, "window") if window else None)


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
        lmcache_cpu_bytes=size_gib(lmcache_cpu_bytes, "lmcache_cpu_bytes")))


def memory_options(gpu: Gpu = None, gpu_memory_bytes: GpuMem = None, kv_budget_bytes: KvBudget = None,
                   overhead_bytes: Overhead = None, non_torch_bytes: NonTorch = None,
                   weights_dtype: WeightsDtype = None, quantization: Quantization = None) -> Any:
    """The GPU and the figures that replace estimates."""
    from kvplan.planning.request import Memory

    return Memory(gpu=gpu, gpu_memory_bytes=_size(gpu_memory_bytes, "gpu_memory_bytes"),
                  kv_budget_bytes=kv_budget(kv_budget_bytes), overhead_bytes=_size(overhead_bytes, "overhead_bytes"),
                  non_torch_bytes=_size(non_torch_bytes, "non_torch_bytes"), weights_dtype=weights_dtype,
                  quantization=quantization)


def _size(text: str | None, name: str) -> int | None:
    return None if text is None else parse_memory_size(text, name)


def kv_budget(text: str | None) -> tuple[int, ...] | None:
    """--kv-budget: `20GiB`, or one size per PP stage (`12.13GiB,11GiB`), each at least 1 MiB (or 0)."""
    if text is None:
        return None
    from kvplan.errors import InputError
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
    if text is None:
        return None
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", text):
        return int(float(text) * GIB)
    try:
        return parse_bytes(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}", arg=name) from None


def _modules(text: str | None) -> tuple[str, ...] | None:
    names = tuple(n.strip() for n in (text or "").split(",") if n.strip())
    return None if not names or names == ("all",) else names


ModelArgs = Annotated[Any, Expand(model_options)]
CacheArgs = Annotated[CacheRequest, Expand(cache_options)]
EngineArgs = Annotated[Any, Expand(engine_options)]  # a kvplan.engines.Settings
MemoryArgs = Annotated[Any, Expand(memory_options)]
BUILDERS = (model_options, cache_options, engine_options, memory_options)


# The spellings a flag also answers to: kvplan's short forms and SGLang's and trtllm-serve's names, rewritten to
# the option's flag before parsing (kvplan.cli.AliasGroup); named in each option's help, kept out of its name column.
FLAG_ALIASES = {
    "--tp": "--tensor-parallel-size", "-tp": "--tensor-parallel-size", "--pp": "--pipeline-parallel-size",
    "-pp": "--pipeline-parallel-size", "--dcp": "--decode-context-parallel-size",
    "-dcp": "--decode-context-parallel-size", "--kv-dtype": "--kv-cache-dtype", "--seq-len": "--max-model-len",
    "--context": "--max-model-len", "--max-seq-len": "--max-model-len", "--concurrency": "--batch",
    "--state-dtype": "--mamba-cache-dtype", "--ssm-state-dtype": "--mamba-ssm-cache-dtype", "-q": "--quantization",
    "-o": "--output", "-m": "--model",
    "--tp-size": "--tensor-parallel-size", "--tp_size": "--tensor-parallel-size",  # SGLang, trtllm-serve
    "--pp-size": "--pipeline-parallel-size", "--pp_size": "--pipeline-parallel-size",
    "--context-length": "--max-model-len", "--max_seq_len": "--max-model-len",  # SGLang, trtllm-serve
    "--page-size": "--block-size", "--dp-size": "--data-parallel-size",
    "--dp": "--data-parallel-size", "-dp": "--data-parallel-size", "--ep-size": "--ep", "--expert-parallel-size": "--ep", "--mamba-ssm-dtype": "--mamba-ssm-cache-dtype",  # SGLang
    "--kv_cache_free_gpu_memory_fraction": "--free-gpu-memory-fraction",  # trtllm-serve
    "--free_gpu_memory_fraction": "--free-gpu-memory-fraction", "--max_num_tokens": "--max-num-batched-tokens",
}


def primary_flags(args: list[str]) -> list[str]:
    """Other spellings of a flag (`--tp-size 4`, `--context-length=32k`) -> the option's flag; values and
    everything after a bare `--` are left alone."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        name, eq, value = arg.partition("=")
        out.append(FLAG_ALIASES[name] + eq + value if name in FLAG_ALIASES else arg)
    return out
