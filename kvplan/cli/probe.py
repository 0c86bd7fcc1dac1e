"""`kvplan probe`: allocate real caches, measure them against kvplan's prediction, check the kernels.

Importing this module is cheap: torch is imported inside the command (``require_torch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from kvplan.cli.common import KV_DTYPE_NAMES, BlockSize, Json, QuantGroup, Tp, emit, reports_errors
from kvplan.errors import KvplanError

if TYPE_CHECKING:
    import torch

    from kvplan.probe.run import ProbeOptions

CPU_BLOCKS, GPU_BLOCKS = 64, 2048
CPU_SEQS, GPU_SEQS = 2, 64


def resolve_device(device: str, gpu: int | None) -> torch.device:
    """--gpu N -> cuda:N (refused without CUDA); --device cpu|cuda|auto (auto: cuda:0 when visible)."""
    from kvplan.probe import ProbeError, require_torch

    require_torch()
    import torch

    has_cuda = torch.cuda.is_available()
    if gpu is not None or device == "cuda":
        index = gpu or 0
        if not has_cuda:
            raise ProbeError("no CUDA device visible; use --device cpu")
        if index >= torch.cuda.device_count():
            raise ProbeError(f"--gpu {index}: only {torch.cuda.device_count()} CUDA device(s) visible")
        return torch.device("cuda", index)
    if device not in ("auto", "cpu"):
        raise ProbeError(f"unknown --device {device!r}; choose cpu, cuda or auto")
    return torch.device("cuda", 0) if device == "auto" and has_cuda else torch.device("cpu")


def plan_targets(models: list[str] | None, kv_dtype: str | None, opts: ProbeOptions,
                 tp: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(targets to probe, notes on default targets that cannot run here). Explicit models raise instead."""
    from kvplan.config import load_model
    from kvplan.probe import require_torch
    from kvplan.probe.allocate import CacheShape, allocate_group
    from kvplan.probe.run import DEFAULT_TARGETS, probe_layout

    torch = require_torch()
    wanted = [(m, kv_dtype or "auto") for m in models] if models else \
        [(m, kv_dtype or d) for m, d in DEFAULT_TARGETS]
    targets, skipped = [], []
    for model_id, dtype in dict.fromkeys(wanted):
        try:
            layout = probe_layout(load_model(model_id), dtype, opts, tp)
            for g in layout.groups:  # a dry run on the meta device: refuses layouts that cannot be built
                allocate_group(CacheShape(spec=g.spec_per_gpu, num_layers=g.num_layers, num_blocks=1,
                                          block_size=opts.block_size, num_seqs=1, kv_dtype=layout.kv_dtype,
                                          state_dtype=layout.state_dtype, layout=opts.layout),
                               torch.device("meta"))
        except KvplanError as exc:
            if models:
                raise
            skipped.append(f"{model_id} ({dtype}): skipped: {exc}")
            continue
        targets.append((model_id, dtype))
    return targets, skipped


def _world_tp(tp: int) -> int:
    """Under torchrun the world is the TP group: --tp must be 1 (then it is taken from WORLD_SIZE) or match."""
    from kvplan.probe.distributed import torchrun_world

    world = torchrun_world()
    if world is None or world[1] == 1:
        return tp
    if tp not in (1, world[1]):
        raise KvplanError(f"--tp {tp} differs from torchrun's WORLD_SIZE {world[1]}")
    return world[1]


def _run(targets: list[tuple[str, str]], opts: ProbeOptions, device: torch.device, tp: int) -> tuple[int, list[Any]]:
    from kvplan.probe import distributed
    from kvplan.probe.run import probe_model

    world = distributed.torchrun_world()
    if world is not None and world[1] > 1:
        return distributed.under_torchrun(targets, opts, device)
    if tp > 1:
        return 0, distributed.spawn(tp, targets, opts, device)
    from kvplan.cli.progress import progress

    results = []
    with progress("probing") as step:  # long GPU allocations show
        for i, (model, dtype) in enumerate(targets):
            step.describe(f"{model} ({dtype})")
            step(i, len(targets))
            results.append(probe_model(model, dtype, opts, device))
        step(len(targets), len(targets))
    return 0, results


Models = Annotated[list[str] | None, typer.Option("--model", "-m", help="Model to probe (repeatable); default: a "
                                                  "GQA, MQA, MLA, sliding, linear, fp8, int4 set.")]
Device = Annotated[str, typer.Option("--device", help="cpu, cuda or auto (cuda:0 when visible).")]
GpuIndex = Annotated[int | None, typer.Option("--gpu", help="CUDA device index.")]
ProbeKvDtype = Annotated[str | None, typer.Option(*KV_DTYPE_NAMES, help="KV dtype for every model (default: auto, or "
                                                  "the default set's own).")]
Blocks = Annotated[int | None, typer.Option("--blocks", help=f"Blocks per layer ({CPU_BLOCKS} on CPU, {GPU_BLOCKS} on "
                                            "GPU).")]
Seqs = Annotated[int | None, typer.Option("--seqs", help="Sequences of linear/Mamba state.")]
Layout = Annotated[str, typer.Option("--layout", help="vllm, or ppl0..ppl3 (ppl.nn cache_layout).")]
Tolerance = Annotated[float, typer.Option("--tolerance", help="Largest relative error that passes.")]
Capacity = Annotated[bool, typer.Option("--capacity", help="Fill the GPU with blocks; compare with kvplan capacity.")]
KernelCheck = Annotated[bool, typer.Option("--kernel-check/--no-kernel-check",
                                           help="Run the Triton write/decode check on the pages.")]


@reports_errors
def probe(
    model: Models = None, device: Device = "auto", gpu: GpuIndex = None, tp: Tp = 1, kv_dtype: ProbeKvDtype = None,
    block_size: BlockSize = 16, blocks: Blocks = None, seqs: Seqs = None, layout: Layout = "vllm",
    quant_group: QuantGroup = 8, tolerance: Tolerance = 0.0, capacity: Capacity = False,
    kernel_check: KernelCheck = True, json: Json = False,
) -> None:
    """Allocate real caches from kvplan's specs; report predicted vs measured bytes and kernel checks."""
    dev = resolve_device(device, gpu)  # first: without torch, one line naming the extra, before any torch import
    from kvplan.probe.bench import peak_gbps
    from kvplan.render.probe import probe_payload, probe_tables

    tp = _world_tp(tp)
    if tolerance < 0:
        raise KvplanError("--tolerance must be >= 0")
    on_gpu = dev.type == "cuda"
    opts = _options(on_gpu, block_size, blocks, seqs, layout, quant_group, kernel_check)
    targets, skipped = plan_targets(model, kv_dtype, opts, tp)
    if capacity and (not on_gpu or tp != 1 or len(targets) != 1):
        raise KvplanError("--capacity needs a CUDA device (--gpu N), --tp 1 and one --model")
    rank, results = _run(targets, opts, dev, tp)
    extra: dict[str, Any] = {"skipped": skipped}
    if tp > 1:
        extra["replication"] = _replication(results, opts, tp)
    if capacity:
        extra["capacity"] = _capacity(targets, opts, dev, tp)
    peak = peak_gbps(dev)
    note = None if on_gpu else "CPU: kernels run in the Triton interpreter; no bandwidth is measured (null)"
    payload = probe_payload(str(dev), results, tolerance, peak_gbps=peak, bandwidth_note=note, extra=extra)
    if rank == 0:
        emit(payload, json, probe_tables)
    if not payload["ok"]:
        raise typer.Exit(1)


def _options(on_gpu: bool, block_size: int, blocks: int | None, seqs: int | None, layout: str, quant_group: int,
             kernel_check: bool) -> ProbeOptions:
    """ProbeOptions with the device's defaults (more blocks and sequences on a GPU)."""
    from kvplan.probe.allocate import LAYOUTS
    from kvplan.probe.run import ProbeOptions

    if layout not in LAYOUTS:
        raise KvplanError(f"unknown --layout {layout!r}; choose one of: {', '.join(LAYOUTS)}")
    if (blocks is not None and blocks <= 0) or (seqs is not None and seqs <= 0) or block_size <= 0:
        raise KvplanError("--blocks, --seqs and --block-size must be positive")
    return ProbeOptions(num_blocks=blocks or (GPU_BLOCKS if on_gpu else CPU_BLOCKS), block_size=block_size,
                        num_seqs=seqs or (GPU_SEQS if on_gpu else CPU_SEQS), layout=layout, quant_group=quant_group,
                        check_kernels=kernel_check, time_kernels=on_gpu)


def _replication(results: list[Any], opts: ProbeOptions, tp: int) -> list[dict[str, Any]]:
    from kvplan.config import load_model
    from kvplan.formulas.per_token import StateDtypes
    from kvplan.probe.compare import predicted_group_bytes
    from kvplan.probe.run import probe_layout
    from kvplan.render.probe import replication_rows

    whole = {}  # the unsharded prediction (g.spec, not g.spec_per_gpu): what one copy of the cache takes
    for r in results:
        layout = probe_layout(load_model(r.model), r.kv_dtype, opts, tp)
        whole[(r.model, r.kv_dtype)] = sum(
            predicted_group_bytes(g.spec, g.num_layers, layout.kv_dtype,
                                  StateDtypes(layout.state_dtype, layout.ssm_state_dtype), opts.block_size,
                                  opts.num_blocks, opts.num_seqs) for g in layout.groups)
    return replication_rows(results, whole)


def _capacity(targets: list[tuple[str, str]], opts: ProbeOptions, dev: torch.device, tp: int) -> dict[str, Any]:
    from kvplan.config import load_model
    from kvplan.formulas import page_bytes
    from kvplan.probe.capacity import capacity_check
    from kvplan.probe.run import cache_shapes, probe_layout

    model_id, dtype = targets[0]
    layout = probe_layout(load_model(model_id), dtype, opts, tp)
    block_bytes = sum(g.num_layers * page_bytes(g.spec_per_gpu, layout.kv_dtype, opts.block_size)
                      for g in layout.groups)
    return capacity_check(model_id, cache_shapes(layout, opts), block_bytes, tp, dtype, dev).as_dict()
