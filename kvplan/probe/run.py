"""Probe one model on one rank: allocate every group, measure it, check the kernels, free it all.

The only place the pieces meet: ``kvplan.build_layout`` gives the per-GPU specs, ``allocate``
turns them into tensors, ``measure`` reads what they took, ``compare`` predicts from the formulas,
``check`` and ``bench`` run the kernels on the real pages.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from types import ModuleType

import torch

from kvplan.config import ModelConfig, load_model
from kvplan.formulas import build_layout
from kvplan.formulas.layout import Layout
from kvplan.formulas.per_token import StateDtypes
from kvplan.formulas.request import DEFAULT_BLOCK_SIZE, CacheRequest
from kvplan.probe import bench, check
from kvplan.probe.allocate import VLLM_LAYOUT, CacheShape, Tensors, paged_part
from kvplan.probe.compare import GroupResult, ProbeResult, is_compressed, predicted_group_bytes
from kvplan.probe.compressed import cache_block
from kvplan.probe.measure import allocate_measured, release
from kvplan.probe.pages import Pages, pages_of
from kvplan.probe.room import check_room
from kvplan.specs import parts

# (model, kv dtype): GQA, MQA, MLA, sliding/full hybrid, linear hybrid, fp8, int4 with fp16 group scales.
DEFAULT_TARGETS: tuple[tuple[str, str], ...] = (
    ("meta-llama/Llama-3.1-8B", "auto"),
    ("tiiuae/falcon-7b", "auto"),
    ("deepseek-ai/DeepSeek-V2-Lite", "auto"),
    ("openai/gpt-oss-20b", "auto"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "auto"),
    ("meta-llama/Llama-3.1-8B", "fp8"),
    ("Qwen/Qwen3-8B", "int4"),
)


PROBED = CacheRequest()  # block size None: 16, or the engine's own where a model's caches need theirs (DeepSeek-V4)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeOptions:
    num_blocks: int
    cache: CacheRequest = PROBED  # tp and KV dtype: set per probed model
    num_seqs: int = 2  # sequences of linear/Mamba state
    layout: str = VLLM_LAYOUT
    check_kernels: bool = True
    time_kernels: bool = False
    seed: int = 0

    @property
    def block_size(self) -> int:
        return self.cache.paged_in(DEFAULT_BLOCK_SIZE)


def probe_layout(model: ModelConfig, kv_dtype: str, opts: ProbeOptions, tp: int = 1) -> Layout:
    return build_layout(model, replace(opts.cache, kv_dtype=kv_dtype, tp=tp))


def probe_block_size(layout: Layout, opts: ProbeOptions) -> int:
    """Tokens per block: the asked block size (16 when none), or DeepSeek-V4's cache block (256 when none)."""
    if any(is_compressed(p) for g in layout.groups for p in parts(g.spec_per_gpu)):
        return cache_block(opts.cache.block_size)
    return opts.block_size


def cache_shapes(layout: Layout, opts: ProbeOptions) -> list[CacheShape]:
    return [CacheShape(spec=g.spec_per_gpu, num_layers=g.num_layers, num_blocks=opts.num_blocks,
                       block_size=probe_block_size(layout, opts), num_seqs=opts.num_seqs, kv_dtype=layout.kv_dtype,
                       state_dtype=layout.state_dtype, layout=opts.layout, ssm_state_dtype=layout.ssm_state_dtype)
            for g in layout.groups]


def probe_model(model_id: str, kv_dtype: str, opts: ProbeOptions, device: torch.device,
                tp: int = 1, rank: int = 0) -> ProbeResult:
    """Allocate, measure, check and free one model's cache on this rank's device."""
    model = load_model(model_id)
    layout = probe_layout(model, kv_dtype, opts, tp)
    allocated: list[tuple[CacheShape, list[Tensors]]] = []
    # Triton launches on the current CUDA device: make it the one asked for (--gpu 1 must not touch 0)
    on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    _check_room(layout, opts, device)
    try:
        with on_device:
            groups = _allocate_all(layout, opts, device, allocated)
            verdict, notes, timings = _kernels(allocated, model.num_attention_heads // tp, opts, device, rank)
    finally:
        allocated.clear()  # the only references to the tensors: clearing frees them, also on error/Ctrl-C
        release(device)
    return ProbeResult(model=model.model_id, tp=tp, tp_rank=rank, kv_dtype=layout.kv_dtype.name,
                       layout=opts.layout, num_blocks=opts.num_blocks, block_size=probe_block_size(layout, opts),
                       num_seqs=opts.num_seqs, groups=tuple(groups), kernel_check=verdict,
                       kernel_notes=notes, write_gbps=timings.write_gbps, decode_gbps=timings.decode_gbps,
                       decode_step_s=timings.decode_step_s, decode_step_bytes=timings.decode_step_bytes)


def _check_room(layout: Layout, opts: ProbeOptions, device: torch.device) -> None:
    """The predicted bytes of every group, and the largest layer's (the kernel check copies one), against the
    device's free memory, before anything is allocated."""
    states = StateDtypes(layout.state_dtype, layout.ssm_state_dtype)
    sizes = [predicted_group_bytes(s.spec, s.num_layers, layout.kv_dtype, states, s.block_size, opts.num_blocks,
                                   opts.num_seqs) for s in cache_shapes(layout, opts)]
    largest = max((size // shape.num_layers for size, shape in zip(sizes, cache_shapes(layout, opts), strict=True)
                   if shape.num_layers), default=0)
    check_room(sum(sizes), largest if opts.check_kernels else 0, opts.num_blocks, device)


def _allocate_all(layout: Layout, opts: ProbeOptions, device: torch.device,
                  allocated: list[tuple[CacheShape, list[Tensors]]]) -> list[GroupResult]:
    """Allocate group after group into `allocated` (owned by the caller, who frees it)."""
    groups = []
    for shape in cache_shapes(layout, opts):
        layers, got = allocate_measured(shape, device)
        allocated.append((shape, layers))
        predicted = predicted_group_bytes(shape.spec, shape.num_layers, layout.kv_dtype,
                                          StateDtypes(layout.state_dtype, layout.ssm_state_dtype),
                                          shape.block_size, opts.num_blocks, opts.num_seqs)
        groups.append(GroupResult(kind=shape.spec.kind, num_layers=shape.num_layers, predicted_bytes=predicted,
                                  measured_bytes=got.measured_bytes, reserved_bytes=got.reserved_bytes,
                                  driver_bytes=got.driver_bytes, allocated_bytes=got.allocated_bytes))
    return groups


@dataclass(frozen=True, slots=True)
class Timings:
    write_gbps: float | None = None
    decode_gbps: float | None = None
    decode_step_s: float | None = None
    decode_step_bytes: int | None = None


def _kernels(allocated: list[tuple[CacheShape, list[Tensors]]], num_heads: int, opts: ProbeOptions,
             device: torch.device, rank: int) -> tuple[str, tuple[str, ...], Timings]:
    if not opts.check_kernels:
        return "skipped", ("kernel check not requested",), Timings()
    ops, has_triton = check.load_ops(device)
    gen = torch.Generator().manual_seed(opts.seed + rank)
    pool = check.BlockPool(opts.num_blocks, gen)
    outcomes = [o for shape, layers in allocated
                for o in check.check_group(ops, shape, layers, num_heads, pool, gen, device)]
    if not has_triton:
        outcomes.append(check.Outcome("skipped", "triton is not installed: ran the torch reference only"))
    notes = tuple(f"{o.status}: {o.note}" for o in outcomes if o.status != "pass")
    timings = Timings()
    if opts.time_kernels and has_triton and device.type == "cuda":
        timings, skipped = _bandwidth(ops, allocated, num_heads, device)
        notes += skipped
    return check.verdict(outcomes, has_triton), notes, timings


def _paged_layers(allocated: list[tuple[CacheShape, list[Tensors]]]) -> list[tuple[CacheShape, list[Pages]]]:
    """Every paged group's layers as decode inputs (one per layer; ppl layouts hold all layers in one)."""
    out = []
    for paged in (paged_part(shape, layers) for shape, layers in allocated if layers):
        if paged is not None:
            shape, layers = paged
            tensors = [layers[0] if shape.layout != VLLM_LAYOUT else layers[i] for i in range(shape.num_layers)]
            out.append((shape, [pages_of(shape, t, i) for i, t in enumerate(tensors)]))
    return out


def _bandwidth(ops: ModuleType, allocated: list[tuple[CacheShape, list[Tensors]]], num_heads: int,
               device: torch.device) -> tuple[Timings, tuple[str, ...]]:
    """Write and decode GB/s on layer 0 of the first paged group; one decode step over every layer."""
    from kvplan.probe.kernels import DoesNotFit

    groups = _paged_layers(allocated)
    if not groups:
        return Timings(), ()
    _, layers = groups[0]
    first = layers[0]
    target = first.k.view(torch.uint8) if first.k.element_size() == 1 else first.k
    write = bench.write_gbps(ops, target.unsqueeze(2) if first.mla_rank is not None else target, device)
    every = [p for _, group in groups for p in group]
    if not all(check.decodes_fp8(p) for p in every):
        return Timings(write_gbps=write), ("skipped: decode timing needs float8 (compute capability 8.9+)",)
    try:
        decode = bench.decode_gbps(ops, first, num_heads, device)
        step_s, step_bytes = bench.decode_step_s(ops, every, num_heads, device)
    except DoesNotFit as exc:
        return Timings(write_gbps=write), (f"skipped: decode timing: {exc}",)
    return Timings(write, decode, step_s, step_bytes), ()
