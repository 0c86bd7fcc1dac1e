"""Capacity (max concurrency) vs context length, through ``kvplan.planning.capacity.capacity`` per point.

Used by ``kvplan sweep --engine`` (engine columns), ``kvplan compare --engine`` and the capacity
plots (``kvplan.render.plot.plot_capacity``). A capacity point costs
milliseconds (weights, budget, the engine's block arithmetic), far more than a size point, so
engine sweeps are meant for tens to hundreds of points, not the 10,000 a plain sweep handles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.engines import DEFAULT_ENGINE
from kvplan.errors import KvplanError
from kvplan.planning.request import CapacityRequest, capacity_request

ENGINE_COLUMNS = ("engine", "gpu", "kv_budget_bytes_per_gpu", "kv_tokens", "max_concurrency",
                  "requests_at_max_len", "fits")


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityPoint:
    engine: str
    max_model_len: int
    gpu: str | None
    kv_budget_bytes_per_gpu: int | None
    kv_tokens: int | None
    max_concurrency: float | None  # what the engine logs (vLLM only)
    requests_at_max_len: float | None  # requests of seq_len tokens that fit at once (every engine)
    note: str = ""  # the engine refused: why
    warnings: tuple[str, ...] = ()  # capacity()'s own warnings (budget <= 0, one request does not fit)
    refusal: str = ""  # the engine would not start (its message); the numbers are still the answer

    def columns(self, batch: int) -> tuple[Any, ...]:
        fits = None if self.requests_at_max_len is None else batch <= self.requests_at_max_len
        return (self.engine, self.gpu, self.kv_budget_bytes_per_gpu, self.kv_tokens, self.max_concurrency,
                self.requests_at_max_len, fits)


def check_engines(engines: Sequence[str], gpu: str | None) -> None:
    """Engine names and the GPU, checked once up front: a typo is bad input, not a refused point."""
    from kvplan.engines import get_engine
    from kvplan.planning.gpus import lookup_gpu

    for name in engines:
        get_engine(name)
    if gpu:
        lookup_gpu(gpu)


def capacity_point(question: CapacityRequest, engine: str) -> CapacityPoint:
    """One engine's capacity for the question's max_model_len; an engine's refusal becomes a note, not an
    error."""
    from kvplan.planning.capacity import capacity  # here: a sweep without engines never imports the planner

    length, gpu = question.max_model_len, question.memory.gpu
    try:
        r = capacity(question, engine=engine)
    except KvplanError as exc:
        return CapacityPoint(engine=engine, max_model_len=length, gpu=gpu, kv_budget_bytes_per_gpu=None,
                             kv_tokens=None, max_concurrency=None, requests_at_max_len=None,
                             note=f"{engine} at {length:,}: {exc}")
    plan = r.plan
    refusal = f"{engine} refuses at {length:,}: {plan.refusal.message}" if plan.refusal else ""
    return CapacityPoint(engine=engine, max_model_len=length, gpu=r.gpu,
                         kv_budget_bytes_per_gpu=min(r.kv_budget_bytes_per_gpu), kv_tokens=plan.kv_tokens,
                         max_concurrency=plan.max_concurrency,
                         requests_at_max_len=0.0 if plan.refusal else plan.requests_at_max_len,
                         warnings=tuple(n for n in r.notes if n.startswith("warning:")) + (
                             (f"warning: {refusal}",) if refusal else ()), refusal=refusal)


@dataclass(frozen=True, slots=True)
class CapacityCurve:
    points: tuple[CapacityPoint, ...]
    label: str

    def series(self, labelled: bool = True) -> dict[str, list[tuple[int, float]]]:
        """engine (prefixed with the curve's label if `labelled`) -> (max_model_len, requests) points."""
        out: dict[str, list[tuple[int, float]]] = {}
        for p in self.points:
            if p.requests_at_max_len is not None:
                name = f"{self.label} {p.engine}" if labelled else p.engine
                out.setdefault(name, []).append((p.max_model_len, p.requests_at_max_len))
        return out


def capacity_curve(model: CapacityRequest | ModelConfig | str, *, max_model_lens: Sequence[int],
                   engines: Sequence[str] = (DEFAULT_ENGINE,), label: str = "", **options: Any) -> CapacityCurve:
    """capacity() at every length for every engine, everything else as the question asks: the data of a
    concurrency-vs-context plot (the plot of `kvplan capacity` is this curve of the command's own request)."""
    question = capacity_request(model, **options)
    points = tuple(capacity_point(question.with_cache(max_model_len=n), e) for e in engines for n in max_model_lens)
    return CapacityCurve(points, label or f"{question.model.model_id} tp{question.cache.tp}")


def context_lengths(max_len: int, first: int = 1024) -> tuple[int, ...]:
    """1k, 2k, 4k … up to max_len (included): the x axis of a capacity plot."""
    from kvplan.workflows.ranges import doubling

    return doubling(min(first, max_len), max_len, "context")
