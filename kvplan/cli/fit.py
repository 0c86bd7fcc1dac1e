"""`kvplan fit`: the cheapest setups (GPU type, TP × PP, replicas, KV dtype) that serve a load."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kvplan.cli.common import (
    KV_DTYPE_NAMES,
    Json,
    Model,
    ModelDtype,
    QuantGroup,
    Revision,
    SsmStateDtype,
    StateDtype,
    batch_option,
    emit,
    length_option,
    reports_errors,
)
from kvplan.cli.engine_options import (
    Batched,
    BlockSizeOpt,
    Eager,
    FreeFraction,
    GpuUtil,
    LoraRank,
    MaxSeqs,
    MemFraction,
    Overhead,
    Quantization,
    WeightsDtype,
    engine_settings,
    weights_option,
)
from kvplan.cli.extras import (
    CpuLoras,
    CpuOffload,
    HicacheRatio,
    KvOffload,
    LmcacheSize,
    LoraModules,
    MaxLoras,
    MmLimit,
    SpecMethod,
    SpecModel,
    SpecTokens,
)
from kvplan.config import ModelConfig, load_model, with_dtype
from kvplan.errors import InputError
from kvplan.units import parse_memory_size, parse_positive_tokens

MAX_PRICE_FILE_BYTES = 1024**2


def read_prices(spec: str) -> dict[str, float]:
    """`H100=2.49,H200=3.5`, or a .toml/.csv file of prices."""
    from kvplan.planning.prices import parse_prices, prices_from_file_text

    if "=" in spec:
        return parse_prices(spec)
    try:
        with Path(spec).open("rb") as handle:
            text = handle.read(MAX_PRICE_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the price file {spec}: {exc.strerror or exc}", arg="prices") from None
    return prices_from_file_text(text, Path(spec).suffix)


GpuList = Annotated[str | None, typer.Option("--gpu", help="GPU types to consider, comma-separated: H100,H200,"
                                             "A100-80G,L40S (default: the priced ones, else H100).")]
Price = Annotated[str | None, typer.Option("--price", help="Price per GPU-hour: H100=2.49,H200=3.5, or a .toml "
                                           "(H100 = 2.49) or .csv (gpu,price) file. Ranks by cost per hour.")]
MaxReplicas = Annotated[int | None, typer.Option("--max-replicas", help="Most data-parallel replicas (1: one "
                                                 "replica must serve it all; default: as many as --max-gpus allows).")]


FitEngine = Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | hf, or a release (vllm@0.11).")]
FitKvDtypes = Annotated[str, typer.Option(*KV_DTYPE_NAMES, help="auto, fp8, ...; a comma list or any (auto and fp8) "
                                          "tries each.")]
GpusPerNode = Annotated[int, typer.Option("--gpus-per-node", help="Largest TP (one node).")]
MaxGpus = Annotated[int | None, typer.Option("--max-gpus", help="Most GPUs in all, replicas × tp × pp (default 8 "
                                             "nodes).")]
FitGpuMem = Annotated[str | None, typer.Option("--gpu-mem", help="Override the GPU's memory, e.g. 79GiB (one --gpu "
                                               "type).")]


@reports_errors
def fit(
    model: Model,
    context: Annotated[str, length_option("Tokens per request (32k): each layout's max_model_len.")],
    concurrency: Annotated[int, batch_option("Requests served at once.", fit=True)],
    gpu: GpuList = None, price: Price = None, max_replicas: MaxReplicas = None, engine: FitEngine = "vllm",
    kv_dtype: FitKvDtypes = "auto", gpus_per_node: GpusPerNode = 8, max_gpus: MaxGpus = None, gpu_mem: FitGpuMem = None,
    overhead: Overhead = None, dtype: ModelDtype = "auto", quantization: Quantization = None,
    weights_dtype: WeightsDtype = None, block_size: BlockSizeOpt = None, gpu_memory_utilization: GpuUtil = None,
    mem_fraction_static: MemFraction = None, free_gpu_memory_fraction: FreeFraction = None,
    max_num_batched_tokens: Batched = None, max_num_seqs: MaxSeqs = None, enforce_eager: Eager = False,
    json: Json = False, revision: Revision = None, speculative_model: SpecModel = None,
    speculative_method: SpecMethod = None, num_speculative_tokens: SpecTokens = None, max_lora_rank: LoraRank = None,
    max_loras: MaxLoras = None, lora_target_modules: LoraModules = None, max_cpu_loras: CpuLoras = None,
    limit_mm_per_prompt: MmLimit = None, cpu_offload_gb: CpuOffload = None, kv_offloading_size: KvOffload = None,
    hicache_ratio: HicacheRatio = None, lmcache_cpu_size: LmcacheSize = None, quant_group: QuantGroup = 8,
    state_dtype: StateDtype = "auto", ssm_state_dtype: SsmStateDtype = "auto",
) -> None:
    """Cheapest setups serving CONCURRENCY requests of CONTEXT tokens: GPU type, replicas × (TP × PP), KV dtype.

    Ranking: cost per hour (--price; unpriced last), GPUs, fewer PP stages, precise KV dtype, requests, smaller TP.
    A draft model, LoRA slots, ... beside the KV cache are in every layout tried. Exit 0 when a setup serves the
    load; 1 when none does (the closest are shown).
    """
    from kvplan.cli.progress import progress
    from kvplan.planning.fit import fit as run
    from kvplan.render.fit import fit_payload, fit_tables

    m = with_dtype(load_model(model, revision=revision), dtype)
    kwargs = _fit_kwargs(locals(), m)
    with progress("fitting") as step:
        result = run(m, progress=step, **kwargs)
    emit(fit_payload(result), json, fit_tables, notes=result.notes)
    if result.best is None:
        raise typer.Exit(1)


def _fit_kwargs(o: dict[str, Any], model: ModelConfig) -> dict[str, Any]:
    """`kvplan fit` options -> fit() keyword arguments."""
    if o["engine"].strip().lower() == "all":
        raise InputError("fit takes one engine: vllm, sglang, trtllm or hf")

    def size(name: str, arg: str) -> int | None:
        return parse_memory_size(o[name], arg) if o[name] is not None else None

    return dict(gpu=[g for g in o["gpu"].split(",") if g.strip()] if o["gpu"] else None,
                context=parse_positive_tokens(o["context"], "--max-model-len"), concurrency=o["concurrency"],
                engine=o["engine"], kv_dtype=o["kv_dtype"], gpus_per_node=o["gpus_per_node"], max_gpus=o["max_gpus"],
                max_replicas=o["max_replicas"], prices=read_prices(o["price"]) if o["price"] else None,
                gpu_memory_bytes=size("gpu_mem", "gpu_memory_bytes"), overhead_bytes=size("overhead", "overhead_bytes"),
                weights_dtype=weights_option(model, o["weights_dtype"], o["quantization"]), settings=engine_settings(o),
                quant_group=o["quant_group"], state_dtype=o["state_dtype"], ssm_state_dtype=o["ssm_state_dtype"])
