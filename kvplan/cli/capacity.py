"""`kvplan capacity`."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from kvplan.cli.common import (
    Dcp,
    Explain,
    Json,
    KvDtypes,
    Model,
    ModelDtype,
    Pp,
    QuantGroup,
    Revision,
    SsmStateDtype,
    StateDtype,
    Tp,
    emit,
    length_option,
    reports_errors,
)
from kvplan.cli.engine_options import (
    Batched,
    BlockSizeOpt,
    Dp,
    Eager,
    Engines,
    EntryPoint,
    FreeFraction,
    Gpu,
    GpuMem,
    GpuUtil,
    KvBudget,
    LoraRank,
    MaxSeqs,
    MemFraction,
    MoeBackend,
    NoAsync,
    NoHybrid,
    NonTorch,
    Overhead,
    Quantization,
    Sampler,
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
from kvplan.cli.values import kv_budget as kv_budget_option
from kvplan.config import ModelConfig, load_model, with_dtype
from kvplan.units import parse_memory_size, parse_positive_tokens

MaxModelLen = Annotated[str | None, length_option("Tokens (32k); default: the model's.")]
Plot = Annotated[str | None, typer.Option("--plot", help="Also draw max concurrency vs context to this PNG/SVG "
                                          "file (needs the plot extra).")]


def _run(model: ModelConfig, engines: list[str], kv_dtypes: list[str], kwargs: dict[str, Any]) -> list[Any]:
    """One result per (KV dtype, engine); one engine and one dtype: its error is the command's (exit 2)."""
    from kvplan.planning.capacity import capacity as run
    from kvplan.planning.capacity import capacity_all

    if len(engines) == 1 and len(kv_dtypes) == 1:
        return [run(model, engine=engines[0], kv_dtype=kv_dtypes[0], **kwargs)]
    return [r for d in kv_dtypes for r in capacity_all(model, engines=engines, kv_dtype=d, **kwargs)]


def _lists(engine: str, kv_dtype: str) -> tuple[list[str], list[str]]:
    from kvplan.engines import ENGINE_NAMES
    from kvplan.workflows.ranges import parse_str_axis

    engines = [e for name in parse_str_axis(engine, "--engine")
               for e in (ENGINE_NAMES if name.lower() == "all" else (name,))]
    return list(dict.fromkeys(engines)), list(dict.fromkeys(parse_str_axis(kv_dtype, "--kv-cache-dtype")))


@reports_errors
def capacity(
    model: Model,
    gpu: Gpu = None, tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, max_model_len: MaxModelLen = None, engine: Engines = "vllm",
    kv_dtype: KvDtypes = "auto", block_size: BlockSizeOpt = None, kv_budget: KvBudget = None, gpu_mem: GpuMem = None,
    overhead: Overhead = None, dtype: ModelDtype = "auto", quantization: Quantization = None,
    weights_dtype: WeightsDtype = None, gpu_memory_utilization: GpuUtil = None,
    mem_fraction_static: MemFraction = None, free_gpu_memory_fraction: FreeFraction = None,
    max_num_batched_tokens: Batched = None, max_num_seqs: MaxSeqs = None, entry_point: EntryPoint = "serve",
    sampler: Sampler = None, enforce_eager: Eager = False, moe_backend: MoeBackend = None,
    max_lora_rank: LoraRank = None, non_torch: NonTorch = None, dp: Dp = 1,
    disable_hybrid_kv_cache_manager: NoHybrid = False, no_async_scheduling: NoAsync = False,
    quant_group: QuantGroup = 8, state_dtype: StateDtype = "auto", json: Json = False, explain: Explain = False,
    plot: Plot = None, revision: Revision = None, ssm_state_dtype: SsmStateDtype = "auto", speculative_model: SpecModel = None,
    speculative_method: SpecMethod = None, num_speculative_tokens: SpecTokens = None, max_loras: MaxLoras = None,
    lora_target_modules: LoraModules = None, max_cpu_loras: CpuLoras = None, limit_mm_per_prompt: MmLimit = None,
    cpu_offload_gb: CpuOffload = None, kv_offloading_size: KvOffload = None, hicache_ratio: HicacheRatio = None,
    lmcache_cpu_size: LmcacheSize = None,
) -> None:
    """KV capacity an engine release reaches on a GPU: its budget term by term, blocks, tokens, concurrency,
    the lines it logs, and its verdict (exit 1 when it would refuse to start; the answer is still printed).
    Engines and KV dtypes given as lists are shown side by side. What shares the GPU beside the cache: a
    speculative draft, LoRA slots, the encoder cache; and the host tier behind it."""
    if plot:  # before any work: a bad path or a missing matplotlib is one line, not a table then a failure
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    engines, kv_dtypes = _lists(engine, kv_dtype)
    m = with_dtype(load_model(model, revision=revision), dtype)
    kwargs = _capacity_kwargs(locals(), m)
    refused = _show(_run(m, engines, kv_dtypes, kwargs), json, explain)
    if plot:
        _plot(m, plot, engines, {**kwargs, "kv_dtype": kv_dtypes[0]})  # several dtypes: the first one's curves
    if refused:
        raise typer.Exit(1)


def _show(results: list[Any], as_json: bool, explain: bool) -> bool:
    """Print the answers (one column each), their --explain lines and notes; whether an engine refuses."""
    from kvplan.render.capacity import capacity_payload, capacity_tables, column_labels, explain_lines

    payloads = [capacity_payload(r) for r in results]
    lines = [line for r in results for line in explain_lines(r)] if explain else None
    labels = column_labels(payloads) if len(payloads) > 1 else [""]
    emit(payloads if len(payloads) > 1 else payloads[0], as_json, capacity_tables, lines,
         notes=[(label, n) for label, p in zip(labels, payloads, strict=True) for n in p["notes"]])
    return any(p["refusal"] for p in payloads)


def _capacity_kwargs(o: dict[str, Any], model: ModelConfig) -> dict[str, Any]:
    """`kvplan capacity` options -> capacity() keyword arguments (all but engine and kv_dtype)."""
    def size(text: str | None, name: str) -> int | None:
        return parse_memory_size(text, name) if text is not None else None

    return dict(gpu=o["gpu"], gpu_memory_bytes=size(o["gpu_mem"], "gpu_memory_bytes"), tp=o["tp"], pp=o["pp"],
                dcp=o["dcp"],
                max_model_len=parse_positive_tokens(o["max_model_len"], "--max-model-len") if o["max_model_len"] else None,
                kv_budget_bytes=kv_budget_option(o["kv_budget"]) if o["kv_budget"] else None,
                overhead_bytes=size(o["overhead"], "overhead_bytes"), non_torch_bytes=size(o["non_torch"], "non_torch_bytes"),
                weights_dtype=weights_option(model, o["weights_dtype"], o["quantization"]), quant_group=o["quant_group"],
                state_dtype=o["state_dtype"], ssm_state_dtype=o["ssm_state_dtype"], settings=engine_settings(o))


def _plot(m: ModelConfig, path: str, engines: list[str], kwargs: dict[str, Any]) -> None:
    """Max concurrency vs context, from 1k to max_model_len, for each engine asked."""
    from kvplan.render.plot import check_plot_path, plot_capacity
    from kvplan.workflows.capacity_curve import capacity_curve, context_lengths

    check_plot_path(path)
    gpu, tp, pp, budget = kwargs["gpu"], kwargs["tp"], kwargs["pp"], kwargs["kv_budget_bytes"]
    curve = capacity_curve(m, seq_lens=context_lengths(kwargs["max_model_len"] or m.max_model_len or 2048),
                           engines=engines, gpu=gpu, tp=tp, pp=pp, kv_dtype=kwargs["kv_dtype"], kv_budget_bytes=budget)
    where = f"on {gpu}" if gpu else "with the given KV budget" if budget else "on the default GPU"
    plot_capacity(curve.series(labelled=False), path,
                  title=f"Max concurrency vs context {where}: {m.model_id}, tp {tp} pp {pp}")
    print(f"kvplan: wrote {path}", file=sys.stderr)
