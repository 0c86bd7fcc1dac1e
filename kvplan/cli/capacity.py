"""`kvplan capacity` and `kvplan fit`."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from kvplan.cli.common import Dcp, Explain, Json, KvDtypeOpt, Pp, QuantGroup, StateDtype, Tp, emit, reports_errors
from kvplan.cli.values import kv_budget as kv_budget_option
from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.units import parse_memory_size, parse_positive_tokens

Gpu = Annotated[str | None, typer.Option("--gpu", help="GPU type: H100, H200, A100-80G, ... (default H100).")]
GpuMem = Annotated[str | None, typer.Option("--gpu-mem", help="Override the GPU's memory, e.g. 79GiB.")]
Engine = Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | hf | all.")]
Overhead = Annotated[str | None, typer.Option("--overhead", help="Per-GPU overhead instead of kvplan's estimate.")]
BlockSizeOpt = Annotated[int | None, typer.Option(
    "--block-size", help="vLLM block / SGLang page / TRT-LLM tokens_per_block (default: the engine's).")]


def _settings(block_size: int | None, batched: str | None, util: float | None, mfs: float | None,
              free_frac: float | None, dp: int, no_hybrid: bool, no_async: bool) -> Settings:
    for name, value in (("--gpu-memory-utilization", util), ("--mem-fraction-static", mfs),
                        ("--free-gpu-memory-fraction", free_frac)):
        if value is not None and not 0 < value <= 1:
            raise InputError(f"{name} must be in (0, 1], got {value}")
    if block_size is not None and block_size <= 0:
        raise InputError(f"--block-size must be positive, got {block_size}")
    return Settings(block_size=block_size, gpu_memory_utilization=util, mem_fraction_static=mfs,
                    free_gpu_memory_fraction=free_frac, dp=dp, hybrid_kv_cache_manager=not no_hybrid,
                    async_scheduling=not no_async,
                    max_num_batched_tokens=parse_positive_tokens(batched, "--max-num-batched-tokens")
                    if batched else None)


MaxModelLen = Annotated[str | None, typer.Option("--max-model-len", help="Tokens (32k); default: the model's.")]
KvBudget = Annotated[str | None, typer.Option("--kv-budget", help="KV memory per GPU as the engine logs it (20GiB; "
                                              "or 12.13GiB,11GiB per PP stage); skips the estimate.")]
WeightsDtype = Annotated[str | None, typer.Option("--weights-dtype", help="bf16, fp16, fp8, int4.")]
GpuUtil = Annotated[float | None, typer.Option(help="vLLM fraction of total memory (0.92, vLLM 0.33).")]
MemFraction = Annotated[float | None, typer.Option(help="SGLang fraction of free memory incl. weights "
                                                   "(default by TP, SGLang 0.4).")]
FreeFraction = Annotated[float | None, typer.Option(help="TRT-LLM fraction of memory free after load (0.9).")]
Batched = Annotated[str | None, typer.Option(help="vLLM (8192 on an H100, 0.33).")]
Dp = Annotated[int, typer.Option("--dp", help="SGLang DP-attention size.")]
NoHybrid = Annotated[bool, typer.Option("--disable-hybrid-kv-cache-manager", help="vLLM: windows kept in full.")]
NoAsync = Annotated[bool, typer.Option("--no-async-scheduling", help="vLLM: one batch fewer in flight.")]
Plot = Annotated[str | None, typer.Option("--plot", help="Also draw max concurrency vs context to this PNG/SVG "
                                          "file (needs the plot extra).")]


def _run(model: str, engine: str, kwargs: dict[str, Any]) -> list[Any]:
    from kvplan.planning.capacity import capacity as run
    from kvplan.planning.capacity import capacity_all

    return capacity_all(model, **kwargs) if engine.strip().lower() == "all" else [run(model, engine=engine, **kwargs)]


@reports_errors
def capacity(
    model: Annotated[str, typer.Argument(help="Model id (bundled or in the HF cache), config.json, or folder.")],
    gpu: Gpu = None, tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, max_model_len: MaxModelLen = None, engine: Engine = "vllm",
    kv_dtype: KvDtypeOpt = "auto", block_size: BlockSizeOpt = None, kv_budget: KvBudget = None, gpu_mem: GpuMem = None,
    overhead: Overhead = None, weights_dtype: WeightsDtype = None, gpu_memory_utilization: GpuUtil = None,
    mem_fraction_static: MemFraction = None, free_gpu_memory_fraction: FreeFraction = None,
    max_num_batched_tokens: Batched = None, dp: Dp = 1, disable_hybrid_kv_cache_manager: NoHybrid = False,
    no_async_scheduling: NoAsync = False, quant_group: QuantGroup = 8, state_dtype: StateDtype = "auto",
    json: Json = False, explain: Explain = False, plot: Plot = None,
) -> None:
    """KV capacity an engine reaches on a GPU: blocks, tokens, concurrency (vLLM exact given the budget)."""
    from kvplan.render.capacity import capacity_payload, capacity_tables, explain_lines

    if plot:  # before any work: a bad path or a missing matplotlib is one line, not a table then a failure
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    kwargs: dict[str, Any] = dict(
        gpu=gpu, tp=tp, pp=pp, dcp=dcp,
        gpu_memory_bytes=parse_memory_size(gpu_mem, "gpu_memory_bytes") if gpu_mem is not None else None,
        kv_dtype=kv_dtype, max_model_len=parse_positive_tokens(max_model_len, "--max-model-len")
        if max_model_len else None, kv_budget_bytes=kv_budget_option(kv_budget) if kv_budget else None,
        overhead_bytes=parse_memory_size(overhead, "overhead_bytes") if overhead is not None else None,
        weights_dtype=weights_dtype,
        quant_group=quant_group, state_dtype=state_dtype, settings=_settings(block_size, max_num_batched_tokens, gpu_memory_utilization, mem_fraction_static,
                           free_gpu_memory_fraction, dp, disable_hybrid_kv_cache_manager, no_async_scheduling))
    results = _run(model, engine, kwargs)
    payloads = [capacity_payload(r) for r in results]
    lines = [line for r in results for line in explain_lines(r)] if explain else None
    notes = [(p["engine"] if len(payloads) > 1 else "", n) for p in payloads for n in p["notes"]]
    emit(payloads if len(payloads) > 1 else payloads[0], json, capacity_tables, lines, notes=notes)
    if plot:
        _plot(model, plot, [r.engine for r in results], kwargs)


def _plot(model: str, path: str, engines: list[str], kwargs: dict[str, Any]) -> None:
    """Max concurrency vs context, from 1k to max_model_len, for each engine asked."""
    from kvplan.config import load_model
    from kvplan.render.plot import check_plot_path, plot_capacity
    from kvplan.workflows.capacity_curve import capacity_curve, context_lengths

    check_plot_path(path)
    m = load_model(model)
    gpu, tp, pp, budget = kwargs["gpu"], kwargs["tp"], kwargs["pp"], kwargs["kv_budget_bytes"]
    curve = capacity_curve(m, seq_lens=context_lengths(kwargs["max_model_len"] or m.max_model_len or 2048),
                           engines=engines, gpu=gpu, tp=tp, pp=pp, kv_dtype=kwargs["kv_dtype"], kv_budget_bytes=budget)
    where = f"on {gpu}" if gpu else "with the given KV budget" if budget else "on the default GPU"
    plot_capacity(curve.series(labelled=False), path,
                  title=f"Max concurrency vs context {where}: {m.model_id}, tp {tp} pp {pp}")
    print(f"kvplan: wrote {path}", file=sys.stderr)
