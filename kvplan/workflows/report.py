"""`kvplan report`: every frozen result one HTML page shows, gathered in one pass.

``report(ReportRequest(...))`` answers the size question per KV dtype, the capacity
question per engine and KV dtype (an engine that refuses reports why instead of failing the page),
the three curves (max concurrency vs context, KV memory vs context, capacity vs TP) and, for a
`kvplan probe --json` file, which of the probe's rows measured this model's cache. It builds no
text: ``kvplan.render.report`` turns a ``Report`` into the page's JSON payload and
``kvplan.render.html`` into the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvplan.config import load_model
from kvplan.config.model import ModelConfig
from kvplan.config.resolve import configs_dir, hf_cache_dirs
from kvplan.engines import ENGINE_NAMES, get_engine
from kvplan.errors import InputError, KvplanError
from kvplan.formulas import KvCacheResult, kv_cache, layer_specs
from kvplan.planning.capacity import CapacityResult, capacity_all
from kvplan.planning.request import CapacityRequest, capacity_request
from kvplan.workflows.capacity_curve import (
    CapacityCurve,
    CapacityPoint,
    capacity_curve,
    capacity_point,
    context_lengths,
)
from kvplan.workflows.probe_file import ProbeCheck, probe_checks

TP_AXIS = (1, 2, 4, 8)  # capacity vs TP: these, the asked TP, and powers of two up to it


@dataclass(frozen=True, kw_only=True)
class ReportRequest:
    """What `kvplan capacity` takes (the question), with lists of engines and KV dtypes, and probe files."""

    question: CapacityRequest
    engines: tuple[str, ...] = ENGINE_NAMES
    kv_dtypes: tuple[str, ...] = ("auto",)
    probes: tuple[dict[str, Any], ...] = ()  # `kvplan probe --json` payloads (kvplan.workflows.probe_file)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPoint:
    max_model_len: int
    bytes_per_sequence_per_gpu: int
    bytes_per_sequence_paged_per_gpu: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TpPoint:
    tp: int
    point: CapacityPoint


@dataclass(frozen=True, kw_only=True)
class Report:
    model: ModelConfig
    request: ReportRequest
    engines: tuple[str, ...]  # the engines asked, "all" expanded, in kvplan's order
    max_model_len: int
    config_origin: str  # where the config file came from
    sizes: tuple[KvCacheResult, ...]  # one per KV dtype, at max_model_len, batch 1
    capacities: tuple[CapacityResult, ...]  # KV dtype major, engine minor
    context_curves: tuple[CapacityCurve, ...]  # one per KV dtype (label: the dtype), every engine
    memory_curves: tuple[tuple[str, tuple[MemoryPoint, ...]], ...]  # (KV dtype, points)
    tp_curves: tuple[tuple[str, tuple[TpPoint, ...]], ...]  # (KV dtype, points of every engine)
    probe_checks: tuple[ProbeCheck, ...] = ()


def engine_names(names: Sequence[str]) -> tuple[str, ...]:
    """`vllm`, `sglang,trtllm`, `all` -> kvplan's engine names, each once, in kvplan's order."""
    wanted = set()
    for name in (n.strip() for item in names for n in item.split(",") if n.strip()):
        wanted |= set(ENGINE_NAMES) if name.lower() == "all" else {get_engine(name).name}
    if not wanted:
        raise InputError("no engine given; choose from: " + ", ".join(ENGINE_NAMES) + ", all", arg="engine")
    return tuple(n for n in ENGINE_NAMES if n in wanted)


def config_origin(model: ModelConfig) -> str:
    """Bundled, the local Hugging Face cache, or a file the user named."""
    source = Path(model.source).resolve()
    if source.is_relative_to(configs_dir().resolve()):
        return f"bundled with kvplan: configs/{source.relative_to(configs_dir().resolve()).as_posix()}"
    if any(source.is_relative_to(cache.resolve()) for cache in hf_cache_dirs()):
        return f"local Hugging Face cache: {model.source}"
    return f"file: {model.source}"


def report(model: ReportRequest | CapacityRequest | ModelConfig | str, *, engines: Sequence[str] = ENGINE_NAMES,
           kv_dtypes: Sequence[str] = ("auto",), probes: Sequence[dict[str, Any]] = (), **options: Any) -> Report:
    """Sizes, capacities, curves and probe checks for one model under one request: a ReportRequest, or a
    question (a CapacityRequest, or a model and its fields as keywords) with the engines and KV dtypes to show."""
    request = model if isinstance(model, ReportRequest) else ReportRequest(
        question=capacity_request(model, **options), engines=tuple(engines), kv_dtypes=tuple(kv_dtypes),
        probes=tuple(probes))
    question = request.question
    m, engines, length = question.model, engine_names(request.engines), question.max_model_len
    question = question.with_cache(max_model_len=length)
    sizes = _sizes(question, request.kv_dtypes)  # first: a bad KV dtype, TP, ... raises here, before any engine
    dtypes = tuple(s.layout.kv_dtype.name for s in sizes)
    capacities = tuple(r for d in dtypes for r in capacity_all(question.with_cache(kv_dtype=d), engines=engines))
    return Report(
        model=m, request=request, engines=engines, max_model_len=length, config_origin=config_origin(m),
        sizes=sizes, capacities=capacities,
        context_curves=tuple(_context_curve(question.with_cache(kv_dtype=d), engines, d) for d in dtypes),
        memory_curves=tuple((d, _memory_curve(question.with_cache(kv_dtype=d))) for d in dtypes),
        tp_curves=tuple((d, _tp_curve(question.with_cache(kv_dtype=d), engines)) for d in dtypes),
        probe_checks=probe_checks(request.probes, sizes, question.cache.tp, _same_geometry_as(m)))


def _sizes(question: CapacityRequest, kv_dtypes: tuple[str, ...]) -> tuple[KvCacheResult, ...]:
    """One size answer per KV dtype asked; two names of one dtype (auto and bf16) count once."""
    if not kv_dtypes:
        raise InputError("no KV dtype given", arg="kv_dtype")
    sizes: dict[str, KvCacheResult] = {}
    for kv_dtype in kv_dtypes:
        size = kv_cache(question.model, question.cache, kv_dtype=kv_dtype)
        sizes.setdefault(size.layout.kv_dtype.name, size)
    return tuple(sizes.values())


def _context_curve(question: CapacityRequest, engines: tuple[str, ...], label: str) -> CapacityCurve:
    return capacity_curve(question, max_model_lens=context_lengths(question.max_model_len), engines=engines,
                          label=label)


def _memory_curve(question: CapacityRequest) -> tuple[MemoryPoint, ...]:
    sizes = (kv_cache(question.model, question.cache, max_model_len=n)
             for n in context_lengths(question.max_model_len))
    return tuple(MemoryPoint(max_model_len=s.max_model_len, bytes_per_sequence_per_gpu=s.bytes_per_sequence_per_gpu,
                             bytes_per_sequence_paged_per_gpu=s.bytes_per_sequence_paged_per_gpu) for s in sizes)


def tp_axis(m: ModelConfig, tp: int) -> tuple[int, ...]:
    """1, 2, 4, 8 (and powers of two up to the asked TP, and the asked TP) that divide the heads."""
    values = {*TP_AXIS, tp, *(2**k for k in range(tp.bit_length()) if 2**k <= tp)}
    return tuple(sorted(t for t in values if m.num_attention_heads % t == 0))


def _tp_curve(question: CapacityRequest, engines: tuple[str, ...]) -> tuple[TpPoint, ...]:
    return tuple(TpPoint(tp=t, point=capacity_point(question.with_cache(tp=t), e))
                 for e in engines for t in tp_axis(question.model, question.cache.tp))


def _same_geometry_as(m: ModelConfig) -> Callable[[str], bool | None]:
    """probe model id -> whether its layers are this model's (None: kvplan cannot load it here)."""
    mine = layer_specs(m)

    def same(model_id: str) -> bool | None:
        if model_id in (m.model_id, m.source):
            return True
        try:
            return layer_specs(load_model(model_id)) == mine
        except KvplanError:
            return None

    return same
