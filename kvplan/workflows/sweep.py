"""`kvplan sweep`: KV-cache sizes over the cartesian product of models, tp, pp, kv dtypes,
sequence lengths and batch sizes.

Built for speed (10,000 points as CSV in well under a second): each (model, tp, pp, dtype) is one
cached ``build_layout``; each sequence length is one ``KvCacheResult`` whose per-sequence bytes are
read once; every batch size is then a multiplication (all totals are batch × per-sequence bytes).
Rows are plain tuples in ``SWEEP_COLUMNS`` order. Combinations a model cannot run (e.g. a TP that
does not divide its heads) are skipped and named in ``notes``, so one bad axis value does not
throw away the rest of the sweep.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.layout import DEFAULT_BLOCK_SIZE, Layout, build_layout
from kvplan.formulas.per_token import state_dtypes
from kvplan.formulas.sizing import KvCacheResult

SWEEP_COLUMNS = (
    "model", "tp", "pp", "kv_dtype", "block_size", "num_gpus", "seq_len", "batch",
    "bytes_per_token", "bytes_per_token_per_gpu", "bytes_per_sequence", "bytes_per_sequence_per_gpu",
    "total_bytes", "total_bytes_per_gpu", "total_bytes_paged_per_gpu", "total_bytes_all_gpus",
)
MAX_SWEEP_POINTS = 5_000_000

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Sweep:
    """Every point of a sweep: rows of SWEEP_COLUMNS, and the combinations that were skipped."""

    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()
    columns: tuple[str, ...] = SWEEP_COLUMNS

    def dicts(self) -> Iterator[dict[str, Any]]:
        for row in self.rows:
            yield dict(zip(self.columns, row, strict=True))

    def column(self, name: str) -> list[Any]:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]


def _points(layout: Layout, name: str, seq_lens: Sequence[int], batches: Sequence[int]) -> Iterator[Row]:
    head = (name, layout.tp, layout.pp, layout.kv_dtype.name, layout.block_size, layout.num_gpus)
    for seq_len in seq_lens:
        one = KvCacheResult(layout, seq_len, 1)
        per_token, per_token_gpu = one.bytes_per_token, one.bytes_per_token_per_gpu
        seq, seq_gpu = one.bytes_per_sequence, one.bytes_per_sequence_per_gpu
        paged_gpu, all_gpus = one.bytes_per_sequence_paged_per_gpu, one.total_bytes_all_gpus
        for b in batches:
            yield (*head, seq_len, b, per_token, per_token_gpu, seq, seq_gpu, b * seq, b * seq_gpu,
                   b * paged_gpu, b * all_gpus)


def _engine_points(layout: Layout, seq_lens: Sequence[int], batches: Sequence[int], engine: str,
                   engines: EngineAxis, notes: list[str], tick: Callable[[], None],
                   layout_options: dict[str, Any]) -> Iterator[Row]:
    """Memory columns + one engine's capacity columns (capacity depends on seq_len, not on batch); the engine
    plans with the sweep's layout options (quant group, state dtypes, overrides) too."""
    from kvplan.workflows.capacity_curve import capacity_point

    rows = iter(_points(layout, layout.model.model_id, seq_lens, batches))
    for seq_len in seq_lens:
        point = capacity_point(layout.model, engine=engine, seq_len=seq_len, gpu=engines.gpu, tp=layout.tp,
                               pp=layout.pp, kv_dtype=layout.kv_dtype.name, kv_budget_bytes=engines.kv_budget_bytes,
                               **layout_options)
        tick()
        if point.note:
            notes.append(f"skipped capacity of {layout.model.model_id}: {point.note}")
        elif point.refusal:
            notes.append(f"capacity of {layout.model.model_id}: {point.refusal} (answer kept: fits = false)")
        for b in batches:
            yield (*next(rows), *point.columns(b))


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineAxis:
    """`--engine` for a sweep: capacity columns from kvplan.planning.capacity for each engine."""

    engines: tuple[str, ...]
    gpu: str | None = None
    kv_budget_bytes: tuple[int, ...] | None = None


def _check_axes(axes: dict[str, Sequence[Any]]) -> None:
    for name, values in axes.items():
        if not values:
            raise InputError(f"sweep axis {name} is empty", arg=name)
    size = 1
    for values in axes.values():
        size *= len(values)
    if size > MAX_SWEEP_POINTS:
        raise InputError(f"the sweep has {size:,} points (limit {MAX_SWEEP_POINTS:,}): narrow an axis")


def sweep(models: Sequence[ModelConfig | str], *, seq_lens: Sequence[int], batches: Sequence[int] = (1,),
          tps: Sequence[int] = (1,), pps: Sequence[int] = (1,), kv_dtypes: Sequence[str] = ("auto",),
          block_size: int = DEFAULT_BLOCK_SIZE, engines: EngineAxis | None = None,
          progress: Callable[[int, int], None] | None = None, **layout_options: Any) -> Sweep:
    """The cartesian product models × tp × pp × kv_dtype [× engine] × seq_len × batch, batch varying fastest.
    `progress(done, total)` is called as layouts (and, with engines, capacity points) are done."""
    _check_axes({"models": models, "seq_lens": seq_lens, "batches": batches, "tps": tps, "pps": pps,
                 "kv_dtypes": kv_dtypes, "engines": engines.engines if engines else ("-",)})
    if min(*seq_lens, *batches) <= 0:
        raise InputError("sweep sequence lengths and batch sizes must be positive")
    # bad input for every layout: one error, not a skip each (any model dtype resolves auto)
    state_dtypes(layout_options.get("state_dtype", "auto"), layout_options.get("ssm_state_dtype", "auto"), "bf16")
    if engines is not None:
        from kvplan.workflows.capacity_curve import check_engines

        check_engines(engines.engines, engines.gpu)
    rows: list[Row] = []
    notes: list[str] = []
    tick = _counter(len(models) * len(tps) * len(pps) * len(kv_dtypes), engines, len(seq_lens), progress)
    for model in models:
        m = as_model(model)
        if m.max_model_len and max(seq_lens) > m.max_model_len:
            notes.append(f"warning: {m.model_id} is configured for at most {m.max_model_len:,} tokens; "
                         f"the sweep goes to {max(seq_lens):,}")
        for tp, pp, dtype in itertools.product(tps, pps, kv_dtypes):
            rows.extend(_layout_rows(m, tp, pp, dtype, block_size, seq_lens, batches, engines, notes, tick,
                                     layout_options))
    if not rows:
        raise InputError("no sweep point is valid: " + "; ".join(notes))
    if engines is None:
        return Sweep(rows=tuple(rows), notes=tuple(notes))
    from kvplan.workflows.capacity_curve import ENGINE_COLUMNS

    return Sweep(rows=tuple(rows), notes=tuple(notes), columns=SWEEP_COLUMNS + ENGINE_COLUMNS)


def _layout_rows(m: ModelConfig, tp: int, pp: int, dtype: str, block_size: int, seq_lens: Sequence[int],
                 batches: Sequence[int], engines: EngineAxis | None, notes: list[str], tick: Callable[[], None],
                 layout_options: dict[str, Any]) -> list[Row]:
    """The rows of one (model, tp, pp, dtype) layout, or a note when the model cannot take it."""
    try:
        layout = build_layout(m, tp=tp, pp=pp, kv_dtype=dtype, block_size=block_size, **layout_options)
    except KvplanError as exc:
        notes.append(f"skipped {m.model_id} tp={tp} pp={pp} kv_dtype={dtype}: {exc}")
        for _ in range(len(engines.engines) * len(seq_lens) if engines else 1):
            tick()
        return []
    if engines is None:
        tick()
        return list(_points(layout, m.model_id, seq_lens, batches))
    return [row for engine in engines.engines
            for row in _engine_points(layout, seq_lens, batches, engine, engines, notes, tick, layout_options)]


def _counter(layouts: int, engines: EngineAxis | None, num_seq_lens: int,
             progress: Callable[[int, int], None] | None) -> Callable[[], None]:
    """A tick() that reports (done, total) units: layouts, or capacity points with engines."""
    total = layouts * (len(engines.engines) * num_seq_lens if engines else 1)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    return tick
