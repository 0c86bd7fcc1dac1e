"""`kvplan probe`: allocate real caches, measure them against kvplan's prediction, check the kernels.

Importing this module is cheap: torch is imported inside the command (``require_torch``).
"""

from __future__ import annotations

import atexit
import gc
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kvplan.cli.common import emit
from kvplan.cli.engine_options import GpuIndex
from kvplan.cli.expand import Expand, command
from kvplan.cli.options import OUTPUT, Json, KvDtypeOrNone, ModelList, cache_options, option, switch
from kvplan.errors import KvplanError
from kvplan.formulas import CacheRequest

if TYPE_CHECKING:
    import torch

    from kvplan.probe.run import ProbeOptions
    from kvplan.render.probe import CapacityCheckPayload, ReplicationRow

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
    from kvplan.probe.run import DEFAULT_TARGETS, probe_block_size, probe_layout

    torch = require_torch()
    wanted = [(m, kv_dtype or "auto") for m in models] if models else \
        [(m, kv_dtype or d) for m, d in DEFAULT_TARGETS]
    targets, skipped = [], []
    for model_id, dtype in dict.fromkeys(wanted):
        try:
            layout = probe_layout(load_model(model_id), dtype, opts, tp)
            for g in layout.groups:  # a dry run on the meta device: refuses layouts that cannot be built
                allocate_group(CacheShape(spec=g.spec_per_gpu, num_layers=g.num_layers, num_blocks=1,
                                          block_size=probe_block_size(layout, opts), num_seqs=1,
                                          kv_dtype=layout.kv_dtype,
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


PROBE = "Probe"
Device = Annotated[str, option("--device", "cpu, cuda or auto (cuda:0 when visible).", PROBE, "DEVICE")]
Blocks = Annotated[int | None, option("--blocks", f"Blocks per layer ({CPU_BLOCKS} on CPU, {GPU_BLOCKS} on GPU).",
                                      PROBE, "N")]
Seqs = Annotated[int | None, option("--seqs", "Sequences of linear/Mamba state.", PROBE, "N")]
Layout = Annotated[str, option("--layout", "vllm, or ppl0..ppl3 (ppl.nn cache_layout).", PROBE, "NAME")]
Tolerance = Annotated[float, option("--tolerance", "Largest relative error that passes.", OUTPUT, "FRACTION")]
Capacity = Annotated[bool, switch("--capacity", "Fill the GPU with blocks; compare with kvplan capacity.", PROBE)]
KernelCheck = Annotated[bool, typer.Option("--kernel-check/--no-kernel-check", rich_help_panel=PROBE, metavar="",
                                           help="Run the Triton write/decode check on the pages.")]
# tp, the block size, the quant group and state dtypes: the cache each probed model is laid out in (KV dtype: per
# model, default the set's own); one stage, whole sequences, no overrides.
ProbeCache = Annotated[CacheRequest, Expand(cache_options, without=(
    "pp", "dcp", "dp", "ep", "max_model_len", "batch", "kv_dtype", "attention", "kv_heads", "layer_types", "window"))]


@command
def probe(
    model: ModelList = None, device: Device = "auto", gpu: GpuIndex = None, *, cache: ProbeCache,
    kv_dtype: KvDtypeOrNone = None, blocks: Blocks = None, seqs: Seqs = None, layout: Layout = "vllm",
    tolerance: Tolerance = 0.0, capacity: Capacity = False, kernel_check: KernelCheck = True, json: Json = False,
) -> None:
    """Allocate real caches from kvplan's specs; report predicted vs measured bytes and kernel checks."""
    if not 0 <= tolerance < float("inf"):  # nan passed `tolerance < 0` and then every comparison
        raise KvplanError(f"--tolerance must be a number >= 0, got {tolerance}")
    dev = resolve_device(device, gpu)  # first: without torch, one line naming the extra, before any torch import
    from kvplan.probe.bench import peak_gbps
    from kvplan.render.probe import probe_payload, probe_tables

    tp = _world_tp(cache.tp)
    on_gpu = dev.type == "cuda"
    opts = _options(on_gpu, cache, blocks, seqs, layout, kernel_check)
    targets, skipped = plan_targets(model, kv_dtype, opts, tp)
    if capacity and (not on_gpu or tp != 1 or len(targets) != 1):
        raise KvplanError("--capacity needs a CUDA device (--gpu N), --tp 1 and one --model")
    rank, results = _run(targets, opts, dev, tp)
    replication = _replication(results, opts, tp) if tp > 1 else None
    check = _capacity(targets, opts, dev, tp) if capacity else None
    note = None if on_gpu else "CPU: kernels run in the Triton interpreter; no bandwidth is measured (null)"
    payload = replace(probe_payload(str(dev), results, tolerance, peak_gbps=peak_gbps(dev), bandwidth_note=note),
                      skipped=tuple(skipped), replication=replication, capacity=check)
    if rank == 0:
        emit(payload, json, probe_tables)
    # emit freezes what exists (cli.common.long_lived), torch's and triton's objects too: unfrozen, they are
    # collected at exit, where frozen, nanobind reports them leaked. Only here: the final collection over everything
    # typer and rich made costs the light commands a fifth of their start-up.
    atexit.register(gc.unfreeze)
    if not payload.ok:
        raise typer.Exit(1)


def _options(on_gpu: bool, cache: CacheRequest, blocks: int | None, seqs: int | None, layout: str,
             kernel_check: bool) -> ProbeOptions:
    """ProbeOptions with the device's defaults (more blocks and sequences on a GPU)."""
    from kvplan.probe.allocate import LAYOUTS
    from kvplan.probe.run import ProbeOptions

    if layout not in LAYOUTS:
        raise KvplanError(f"unknown --layout {layout!r}; choose one of: {', '.join(LAYOUTS)}")
    if (blocks is not None and blocks <= 0) or (seqs is not None and seqs <= 0) or cache.block_size == 0:
        raise KvplanError("--blocks, --seqs and --block-size must be positive")
    return ProbeOptions(num_blocks=blocks or (GPU_BLOCKS if on_gpu else CPU_BLOCKS),
                        cache=cache,  # block size None: the probe's 16, or the engine's where a model needs its own
                        num_seqs=seqs or (GPU_SEQS if on_gpu else CPU_SEQS), layout=layout,
                        check_kernels=kernel_check, time_kernels=on_gpu)


def _replication(results: list[Any], opts: ProbeOptions, tp: int) -> tuple[ReplicationRow, ...]:
    from kvplan.config import load_model
    from kvplan.formulas.per_token import StateDtypes
    from kvplan.probe.compare import predicted_group_bytes
    from kvplan.probe.run import probe_block_size, probe_layout
    from kvplan.render.probe import replication_rows

    whole = {}  # the unsharded prediction (g.spec, not g.spec_per_gpu): what one copy of the cache takes
    for r in results:
        layout = probe_layout(load_model(r.model), r.kv_dtype, opts, tp)
        whole[(r.model, r.kv_dtype)] = sum(
            predicted_group_bytes(g.spec, g.num_layers, layout.kv_dtype,
                                  StateDtypes(layout.state_dtype, layout.ssm_state_dtype),
                                  probe_block_size(layout, opts),
                                  opts.num_blocks, opts.num_seqs) for g in layout.groups)
    return replication_rows(results, whole)


def _capacity(targets: list[tuple[str, str]], opts: ProbeOptions, dev: torch.device,
              tp: int) -> CapacityCheckPayload:
    from kvplan.config import load_model
    from kvplan.probe.capacity import capacity_check
    from kvplan.probe.compare import layer_page_bytes
    from kvplan.probe.run import cache_shapes, probe_block_size, probe_layout
    from kvplan.render.probe import capacity_check_payload

    model_id, dtype = targets[0]
    layout = probe_layout(load_model(model_id), dtype, opts, tp)
    block = probe_block_size(layout, opts)
    block_bytes = sum(g.num_layers * layer_page_bytes(g.spec_per_gpu, layout.kv_dtype, block) for g in layout.groups)
    return capacity_check_payload(capacity_check(model_id, cache_shapes(layout, opts), block_bytes, tp, dtype, dev))
