"""`kvplan compare`: several models under one layout (max_model_len, batch, tp, pp, kv dtype), side by side,
and optionally several engines' capacity for each (``engines=``, through ``kvplan.planning.capacity``).

Each model's own max length is used when no max_model_len is given. A model that cannot take the layout
(e.g. a TP size that does not divide its heads) fails the comparison with that model named: unlike
a sweep, a comparison is a short list the user typed, so a silent gap would mislead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.engines import Settings
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.request import NO_REQUEST, CacheRequest
from kvplan.formulas.sizing import KvCacheResult, kv_cache
from kvplan.planning.request import NO_MEMORY, CapacityRequest, Memory, capacity_request
from kvplan.workflows.capacity_curve import CapacityPoint, capacity_point, check_engines


@dataclass(frozen=True, slots=True)
class Comparison:
    results: tuple[KvCacheResult, ...]
    capacity: tuple[tuple[CapacityPoint, ...], ...] = ()  # per result: one point per engine (if engines given)

    @property
    def notes(self) -> tuple[str, ...]:
        sizes = tuple(f"{r.model.model_id}: {note}" for r in self.results for note in r.notes)
        engines = tuple(f"warning: capacity of {r.model.model_id}: {text.removeprefix('warning: ')}"
                        for r, points in zip(self.results, self.capacity, strict=False) for p in points
                        for text in ((p.note,) if p.note else p.warnings))
        return sizes + engines


def compare(models: Sequence[ModelConfig | str], cache: CacheRequest | None = None, *,
            kv_dtypes: Sequence[str] | None = None, engines: Sequence[str] = (), settings: Settings | None = None,
            memory: Memory | None = None, **options: Any) -> Comparison:
    """kv_cache() of every model under the same question (`cache`, or its fields as keywords: tp, pp,
    max_model_len, batch, block_size, ...) for each of `kv_dtypes` (one row per model and dtype), and with
    `engines`, each engine's capacity (kvplan.planning.capacity) for that question (`settings` and `memory`, or
    their fields as keywords: gpu=, kv_budget_bytes=, the engine knobs)."""
    if not models:
        raise InputError("compare needs at least one model")
    results, questions = [], []
    for model in models:
        base = CapacityRequest(model=as_model(model), cache=cache or NO_REQUEST, settings=settings or Settings(),
                               memory=memory or NO_MEMORY)
        question = capacity_request(base, **options)
        try:
            for d in kv_dtypes or (question.cache.kv_dtype,):
                results.append(kv_cache(question.model, question.cache, kv_dtype=d))
                questions.append(question)
        except KvplanError as exc:
            raise type(exc)(f"{question.model.model_id}: {exc}") from None
    if not engines:
        return Comparison(tuple(results))
    check_engines(engines, questions[0].memory.gpu)
    capacity = tuple(tuple(capacity_point(q.with_cache(max_model_len=r.max_model_len, kv_dtype=r.layout.kv_dtype.name,
                                                       block_size=None), e) for e in engines)
                     for q, r in zip(questions, results, strict=True))
    return Comparison(tuple(results), capacity)
