"""`kvplan compare`: several models under one layout (seq_len, batch, tp, pp, kv dtype), side by side,
and optionally several engines' capacity for each (``engines=``, through ``kvplan.planning.capacity``).

Each model's own max length is used when no seq_len is given. A model that cannot take the layout
(e.g. a TP size that does not divide its heads) fails the comparison with that model named: unlike
a sweep, a comparison is a short list the user typed, so a silent gap would mislead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.sizing import KvCacheResult, kv_cache
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


def compare(models: Sequence[ModelConfig | str], *, seq_len: int | None = None, batch: int = 1,
            kv_dtype: str | Sequence[str] = "auto", engines: Sequence[str] = (), gpu: str | None = None,
            kv_budget_bytes: tuple[int, ...] | None = None, **layout_options: Any) -> Comparison:
    """kv_cache() of every model with the same options (tp, pp, dcp, block_size, ...) under each KV dtype
    (one row per model and dtype), and with `engines`, each engine's capacity (kvplan.planning.capacity)
    for max_model_len = the compared seq_len."""
    if not models:
        raise InputError("compare needs at least one model")
    dtypes = (kv_dtype,) if isinstance(kv_dtype, str) else tuple(kv_dtype)
    results = []
    for model in models:
        m = as_model(model)
        try:
            results += [kv_cache(m, seq_len=seq_len, batch=batch, kv_dtype=d, **layout_options) for d in dtypes]
        except KvplanError as exc:
            raise type(exc)(f"{m.model_id}: {exc}") from None
    if not engines:
        return Comparison(tuple(results))
    check_engines(engines, gpu)
    capacity = tuple(tuple(capacity_point(r.model, engine=e, seq_len=r.seq_len, gpu=gpu, tp=r.layout.tp,
                                          pp=r.layout.pp, kv_dtype=r.layout.kv_dtype.name,
                                          kv_budget_bytes=kv_budget_bytes) for e in engines) for r in results)
    return Comparison(tuple(results), capacity)
