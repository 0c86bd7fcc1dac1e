"""`kvplan report`'s ``curves``: the three charts' data (concurrency vs context, KV memory vs context with
each engine's KV budget, capacity vs TP), typed."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.workflows.capacity_curve import CapacityPoint
from kvplan.workflows.report import MemoryPoint, Report, TpPoint


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextPoint:
    max_model_len: int
    kv_tokens: int | None
    max_concurrency: float | None
    requests_at_max_model_len: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCurve:
    kv_dtype: str
    engine: str
    points: tuple[ContextPoint, ...]
    notes: tuple[str, ...]  # why a point has no value (the engine refused)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryCurvePoint:
    seq_len: int
    bytes_per_sequence_per_gpu: int
    bytes_per_sequence_paged_per_gpu: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryCurve:
    kv_dtype: str
    points: tuple[MemoryCurvePoint, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineBudget:
    engine: str
    kv_budget_bytes_per_gpu: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TpCurvePoint:
    tp: int
    kv_budget_bytes_per_gpu: int | None
    kv_tokens: int | None
    requests_at_max_model_len: float | None
    note: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TpCurve:
    kv_dtype: str
    engine: str
    max_model_len: int
    points: tuple[TpCurvePoint, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CurvesPayload:
    concurrency_vs_context: tuple[ContextCurve, ...]  # KV dtype major, engine minor (as the capacity answers)
    kv_memory_vs_context: tuple[MemoryCurve, ...]
    kv_budgets: tuple[EngineBudget, ...]  # engines that answered, first KV dtype
    capacity_vs_tp: tuple[TpCurve, ...]


def _context_point(p: CapacityPoint) -> ContextPoint:
    return ContextPoint(max_model_len=p.max_model_len, kv_tokens=p.kv_tokens, max_concurrency=p.max_concurrency,
                        requests_at_max_model_len=p.requests_at_max_len)


def _memory_point(p: MemoryPoint) -> MemoryCurvePoint:
    return MemoryCurvePoint(seq_len=p.max_model_len, bytes_per_sequence_per_gpu=p.bytes_per_sequence_per_gpu,
                            bytes_per_sequence_paged_per_gpu=p.bytes_per_sequence_paged_per_gpu)


def _tp_point(t: TpPoint) -> TpCurvePoint:
    p = t.point
    return TpCurvePoint(tp=t.tp, kv_budget_bytes_per_gpu=p.kv_budget_bytes_per_gpu, kv_tokens=p.kv_tokens,
                        requests_at_max_model_len=p.requests_at_max_len, note=p.note or None)


def curves_payload(report: Report) -> CurvesPayload:
    """The three charts' data: concurrency vs context, KV memory vs context, capacity vs TP."""
    context = tuple(ContextCurve(kv_dtype=c.label, engine=e,
                                 points=tuple(_context_point(p) for p in c.points if p.engine == e),
                                 notes=tuple(p.note for p in c.points if p.engine == e and p.note))
                    for c in report.context_curves for e in report.engines)
    memory = tuple(MemoryCurve(kv_dtype=d, points=tuple(map(_memory_point, points))) for d, points in report.memory_curves)
    budgets = tuple(EngineBudget(engine=c.engine, kv_budget_bytes_per_gpu=min(c.kv_budget_bytes_per_gpu))
                    for c in report.capacities[:len(report.engines)]
                    if not c.error and min(c.kv_budget_bytes_per_gpu) > 0)
    tp = tuple(TpCurve(kv_dtype=d, engine=e, max_model_len=report.max_model_len,
                       points=tuple(_tp_point(t) for t in points if t.point.engine == e))
               for d, points in report.tp_curves for e in report.engines)
    return CurvesPayload(concurrency_vs_context=context, kv_memory_vs_context=memory, kv_budgets=budgets,
                         capacity_vs_tp=tp)
