"""`kvplan capacity`."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from kvplan.cli.common import (
    Dcp,
    Explain,
    Json,
    KvDtypeOpt,
    Pp,
    QuantGroup,
    Revision,
    SsmStateDtype,
    StateDtype,
    Tp,
    emit,
    reports_errors,
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
    extras_settings,
)
from kvplan.cli.values import kv_budget as kv_budget_option
from kvplan.config import ModelConfig, load_model
from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.units import parse_memory_size, parse_positive_tokens

Gpu = Annotated[str | None, typer.Option("--gpu", help="GPU type: H100, H200, A100-80G, ... (default H100).")]
GpuMem = Annotated[str | None, typer.Option("--gpu-mem", help="Override the GPU's memory, e.g. 79GiB.")]
Engine = Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | hf | all (the newest releases), or "
                                     "a release: vllm@0.33, vllm@0.11, vllm@0.10, vllm@0.9, vllm@0.8, vllm@0.7, "
                                     "vllm@0.6.4, sglang@0.5.2, ...")]
Overhead = Annotated[str | None, typer.Option("--overhead", help="Per-GPU overhead instead of kvplan's estimate.")]
BlockSizeOpt = Annotated[int | None, typer.Option(
    "--block-size", help="vLLM block / SGLang page / TRT-LLM tokens_per_block (default: the engine's).")]


def _settings(o: dict[str, Any]) -> Settings:
    """The engine options of `kvplan capacity` (and `report`) -> Settings (None: the release's default).
    Options a command does not have are taken as not given."""
    o = {**dict.fromkeys(("max_num_seqs", "sampler", "moe_backend", "max_lora_rank")), "enforce_eager": False,
         "entry_point": "serve", **o}
    for name in ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction"):
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


MaxModelLen = Annotated[str | None, typer.Option("--max-model-len", help="Tokens (32k); default: the model's.")]
KvBudget = Annotated[str | None, typer.Option("--kv-budget", help="KV memory per GPU as the engine logs it (20GiB; "
                                              "or 12.13GiB,11GiB per PP stage); skips the estimate.")]
WeightsDtype = Annotated[str | None, typer.Option("--weights-dtype", help="bf16, fp16, fp8, int4.")]
GpuUtil = Annotated[float | None, typer.Option(help="vLLM fraction of total memory (0.92 in 0.33, 0.9 before).")]
MemFraction = Annotated[float | None, typer.Option(help="SGLang fraction of free memory incl. weights "
                                                   "(default: from the GPU's nvidia-smi memory and its reserve).")]
FreeFraction = Annotated[float | None, typer.Option(help="TRT-LLM fraction of memory free after load (0.9).")]
Batched = Annotated[str | None, typer.Option(help="vLLM profile-run tokens (default: the release's, by GPU class "
                                             "and entry point; 8192 for vllm serve on an H100).")]
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
Dp = Annotated[int, typer.Option("--dp", help="SGLang DP-attention size.")]
NoHybrid = Annotated[bool, typer.Option("--disable-hybrid-kv-cache-manager", help="vLLM: windows kept in full.")]
NoAsync = Annotated[bool, typer.Option("--no-async-scheduling", help="vLLM: one batch fewer in flight.")]
Plot = Annotated[str | None, typer.Option("--plot", help="Also draw max concurrency vs context to this PNG/SVG "
                                          "file (needs the plot extra).")]


def _run(model: ModelConfig, engine: str, kwargs: dict[str, Any]) -> list[Any]:
    from kvplan.planning.capacity import capacity as run
    from kvplan.planning.capacity import capacity_all

    return capacity_all(model, **kwargs) if engine.strip().lower() == "all" else [run(model, engine=engine, **kwargs)]


@reports_errors
def capacity(
    model: Annotated[str, typer.Argument(help="Model id (bundled, HF cache or hub), config.json, or folder.")],
    gpu: Gpu = None, tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, max_model_len: MaxModelLen = None, engine: Engine = "vllm",
    kv_dtype: KvDtypeOpt = "auto", block_size: BlockSizeOpt = None, kv_budget: KvBudget = None, gpu_mem: GpuMem = None,
    overhead: Overhead = None, weights_dtype: WeightsDtype = None, gpu_memory_utilization: GpuUtil = None,
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
    and its verdict (exit 1 when it would refuse to start; the answer is still printed). What shares the GPU
    beside it: a speculative draft, LoRA slots, the encoder cache; and the host tier behind it."""
    from kvplan.render.capacity import capacity_payload, capacity_tables, explain_lines

    if plot:  # before any work: a bad path or a missing matplotlib is one line, not a table then a failure
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    kwargs = _capacity_kwargs(locals())
    m = load_model(model, revision=revision)
    results = _run(m, engine, kwargs)
    payloads = [capacity_payload(r) for r in results]
    lines = [line for r in results for line in explain_lines(r)] if explain else None
    notes = [(p["engine"] if len(payloads) > 1 else "", n) for p in payloads for n in p["notes"]]
    emit(payloads if len(payloads) > 1 else payloads[0], json, capacity_tables, lines, notes=notes)
    if plot:
        _plot(m, plot, [r.engine for r in results] if engine.strip().lower() == "all" else [engine], kwargs)
    if any(p["refusal"] for p in payloads):
        raise typer.Exit(1)


def _capacity_kwargs(o: dict[str, Any]) -> dict[str, Any]:
    """`kvplan capacity` options -> capacity() keyword arguments."""
    def size(text: str | None, name: str) -> int | None:
        return parse_memory_size(text, name) if text is not None else None

    return dict(gpu=o["gpu"], gpu_memory_bytes=size(o["gpu_mem"], "gpu_memory_bytes"), tp=o["tp"], pp=o["pp"],
                dcp=o["dcp"], kv_dtype=o["kv_dtype"],
                max_model_len=parse_positive_tokens(o["max_model_len"], "--max-model-len") if o["max_model_len"] else None,
                kv_budget_bytes=kv_budget_option(o["kv_budget"]) if o["kv_budget"] else None,
                overhead_bytes=size(o["overhead"], "overhead_bytes"), non_torch_bytes=size(o["non_torch"], "non_torch_bytes"),
                weights_dtype=o["weights_dtype"], quant_group=o["quant_group"], state_dtype=o["state_dtype"],
                ssm_state_dtype=o["ssm_state_dtype"], settings=_settings(o))


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
