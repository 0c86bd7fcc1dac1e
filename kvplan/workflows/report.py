"""`kvplan report`: every frozen result one HTML page shows, gathered in one pass.

``report(model, ReportRequest(...))`` answers the size question per KV dtype, the capacity
question per engine and KV dtype (an engine that refuses reports why instead of failing the page),
the three curves (max concurrency vs context, KV memory vs context, capacity vs TP) and, for a
`kvplan probe --json` file, which of the probe's rows measured this model's cache. It builds no
text: ``kvplan.render.report`` turns a ``Report`` into the page's JSON payload and
``kvplan.render.html`` into the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvplan.config import as_model, load_model
from kvplan.config.model import ModelConfig
from kvplan.config.resolve import configs_dir, hf_cache_dirs
from kvplan.dtypes import DEFAULT_QUANT_GROUP
from kvplan.engines import ENGINE_NAMES, Settings, get_engine
from kvplan.errors import InputError, KvplanError
from kvplan.formulas import KvCacheResult, kv_cache, layer_specs
from kvplan.formulas.layout import DEFAULT_BLOCK_SIZE
from kvplan.formulas.sizing import FALLBACK_MAX_MODEL_LEN
from kvplan.planning.capacity import CapacityResult, capacity_all
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
    """What `kvplan capacity` takes, with lists of engines and KV dtypes, and probe files."""

    engines: tuple[str, ...] = ENGINE_NAMES
    kv_dtypes: tuple[str, ...] = ("auto",)
    tp: int = 1
    pp: int = 1
    dcp: int = 1
    max_model_len: int | None = None  # None: the model's
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    kv_budget_bytes: tuple[int, ...] | None = None
    overhead_bytes: int | None = None
    weights_dtype: str | None = None
    settings: Settings = field(default_factory=Settings)
    quant_group: int = DEFAULT_QUANT_GROUP
    state_dtype: str = "auto"
    ssm_state_dtype: str = "auto"
    probes: tuple[dict[str, Any], ...] = ()  # `kvplan probe --json` payloads (kvplan.workflows.probe_file)

    def capacity_options(self) -> dict[str, Any]:
        """capacity()'s arguments other than the model, engine, KV dtype, TP and length."""
        return {"gpu_memory_bytes": self.gpu_memory_bytes, "overhead_bytes": self.overhead_bytes,
                "weights_dtype": self.weights_dtype, "settings": self.settings, "dcp": self.dcp,
                "quant_group": self.quant_group, "state_dtype": self.state_dtype,
                "ssm_state_dtype": self.ssm_state_dtype}


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPoint:
    seq_len: int
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


def report(model: ModelConfig | str, request: ReportRequest) -> Report:
    """Sizes, capacities, curves and probe checks for one model under one request."""
    m = as_model(model)
    engines = engine_names(request.engines)
    length = request.max_model_len or m.max_model_len or FALLBACK_MAX_MODEL_LEN
    sizes = _sizes(m, request, length)  # first: a bad KV dtype, TP, ... raises here, before any engine runs
    dtypes = tuple(s.layout.kv_dtype.name for s in sizes)
    capacities = tuple(r for d in dtypes for r in capacity_all(
        m, engines=engines, tp=request.tp, pp=request.pp, max_model_len=length, gpu=request.gpu, kv_dtype=d,
        kv_budget_bytes=request.kv_budget_bytes, **request.capacity_options()))
    return Report(
        model=m, request=request, engines=engines, max_model_len=length, config_origin=config_origin(m),
        sizes=sizes, capacities=capacities,
        context_curves=tuple(_context_curve(m, request, engines, d, length) for d in dtypes),
        memory_curves=tuple((d, _memory_curve(m, request, d, length)) for d in dtypes),
        tp_curves=tuple((d, _tp_curve(m, request, engines, d, length)) for d in dtypes),
        probe_checks=probe_checks(request.probes, sizes, request.tp, _same_geometry_as(m)))


def _sizes(m: ModelConfig, request: ReportRequest, length: int) -> tuple[KvCacheResult, ...]:
    """One size answer per KV dtype asked; two names of one dtype (auto and bf16) count once."""
    if not request.kv_dtypes:
        raise InputError("no KV dtype given", arg="kv_dtype")
    sizes: dict[str, KvCacheResult] = {}
    for kv_dtype in request.kv_dtypes:
        size = _size(m, request, kv_dtype, length)
        sizes.setdefault(size.layout.kv_dtype.name, size)
    return tuple(sizes.values())


def _size(m: ModelConfig, request: ReportRequest, kv_dtype: str, seq_len: int) -> KvCacheResult:
    """`kvplan size` at max_model_len, one sequence, the engine block size asked (else size's 16)."""
    return kv_cache(m, tp=request.tp, pp=request.pp, dcp=request.dcp, seq_len=seq_len, kv_dtype=kv_dtype,
                    block_size=request.settings.block_size or DEFAULT_BLOCK_SIZE, quant_group=request.quant_group,
                    state_dtype=request.state_dtype, ssm_state_dtype=request.ssm_state_dtype)


def _context_curve(m: ModelConfig, request: ReportRequest, engines: tuple[str, ...], kv_dtype: str,
                   length: int) -> CapacityCurve:
    return capacity_curve(m, seq_lens=context_lengths(length), engines=engines, gpu=request.gpu, tp=request.tp,
                          pp=request.pp, kv_dtype=kv_dtype, kv_budget_bytes=request.kv_budget_bytes,
                          label=kv_dtype, **request.capacity_options())


def _memory_curve(m: ModelConfig, request: ReportRequest, kv_dtype: str, length: int) -> tuple[MemoryPoint, ...]:
    sizes = (_size(m, request, kv_dtype, n) for n in context_lengths(length))
    return tuple(MemoryPoint(seq_len=s.seq_len, bytes_per_sequence_per_gpu=s.bytes_per_sequence_per_gpu,
                             bytes_per_sequence_paged_per_gpu=s.bytes_per_sequence_paged_per_gpu) for s in sizes)


def tp_axis(m: ModelConfig, tp: int) -> tuple[int, ...]:
    """1, 2, 4, 8 (and powers of two up to the asked TP, and the asked TP) that divide the heads."""
    values = {*TP_AXIS, tp, *(2**k for k in range(tp.bit_length()) if 2**k <= tp)}
    return tuple(sorted(t for t in values if m.num_attention_heads % t == 0))


def _tp_curve(m: ModelConfig, request: ReportRequest, engines: tuple[str, ...], kv_dtype: str,
              length: int) -> tuple[TpPoint, ...]:
    options = request.capacity_options()
    return tuple(TpPoint(tp=t, point=capacity_point(m, engine=e, seq_len=length, gpu=request.gpu, tp=t,
                                                    pp=request.pp, kv_dtype=kv_dtype,
                                                    kv_budget_bytes=request.kv_budget_bytes, **options))
                 for e in engines for t in tp_axis(m, request.tp))


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
