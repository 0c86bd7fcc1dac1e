"""`kvplan sweep`: KV-cache sizes over the cartesian product of models, tp, pp, kv dtypes,
sequence lengths and batch sizes.

Built for speed and flat memory (10,000 points as CSV in well under a second; a million rows stream in
constant memory): each (model, tp, pp, dtype) is one cached ``build_layout``, made up front; each sequence
length is one ``KvCacheResult`` whose per-sequence bytes are read once; every batch size is then a
multiplication. Rows are plain tuples in ``SWEEP_COLUMNS`` order, produced by ``Sweep.iter_rows()`` as
they are written (``Sweep.rows`` holds them all, for small sweeps). Combinations a model cannot run (e.g. a
TP that does not divide its heads) are skipped and named in ``notes``, so one bad axis value does not throw
away the rest of the sweep.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.engines import Settings
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.layout import Layout, build_layout
from kvplan.formulas.request import CacheRequest, cache_request
from kvplan.formulas.sizing import KvCacheResult
from kvplan.planning.request import NO_MEMORY, CapacityRequest, Memory

if TYPE_CHECKING:  # the capacity stack is imported only by a sweep with engines (start-up: issue 33)
    from kvplan.workflows.capacity_curve import CapacityPoint

SWEEP_COLUMNS = (
    "model", "tp", "pp", "kv_dtype", "block_size", "num_gpus", "seq_len", "batch",
    "bytes_per_token", "bytes_per_token_per_gpu", "bytes_per_sequence", "bytes_per_sequence_per_gpu",
    "total_bytes", "total_bytes_per_gpu", "total_bytes_paged_per_gpu", "total_bytes_all_gpus",
)
MAX_SWEEP_POINTS = 5_000_000

Row = tuple[Any, ...]


@dataclass(frozen=True, kw_only=True)
class EngineAxis:
    """`--engine` for a sweep: capacity columns for each engine at each point's layout and length, with the
    GPU, the budget and every engine knob given here."""

    engines: tuple[str, ...]
    settings: Settings = field(default_factory=Settings)
    memory: Memory = NO_MEMORY


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """Every point of a sweep: the layouts it runs over, the axes, and the combinations that were skipped."""

    layouts: tuple[Layout, ...]
    max_model_lens: tuple[int, ...]
    batches: tuple[int, ...]
    engines: tuple[str, ...] = ()
    points: tuple[tuple[CapacityPoint, ...], ...] = ()  # per layout: one per (engine, length), engine major
    notes: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        if not self.engines:
            return SWEEP_COLUMNS
        from kvplan.workflows.capacity_curve import ENGINE_COLUMNS

        return SWEEP_COLUMNS + ENGINE_COLUMNS

    @property
    def num_rows(self) -> int:
        return len(self.layouts) * max(len(self.engines), 1) * len(self.max_model_lens) * len(self.batches)

    def iter_rows(self) -> Iterator[Row]:
        """The rows, made as they are read (batch varying fastest): memory stays flat in their number."""
        for k, layout in enumerate(self.layouts):
            if not self.engines:
                yield from _points(layout, self.max_model_lens, self.batches)
                continue
            for e in range(len(self.engines)):
                rows = _points(layout, self.max_model_lens, self.batches)
                for i in range(len(self.max_model_lens)):
                    point = self.points[k][e * len(self.max_model_lens) + i]
                    for b in self.batches:
                        yield (*next(rows), *point.columns(b))

    def iter_lengths(self) -> Iterator[LengthRow]:
        """Per layout and length (a sweep without engines), what its rows are made of: a writer that multiplies the
        batch in itself (the CSV's) need not build a row tuple each."""
        if self.engines:
            raise ValueError("a sweep with engines has capacity columns per row: read iter_rows")
        for layout in self.layouts:
            yield from _lengths(layout, self.max_model_lens)

    @property
    def rows(self) -> tuple[Row, ...]:
        """Every row at once (a small sweep; write a large one from iter_rows)."""
        return tuple(self.iter_rows())

    def dicts(self) -> Iterator[dict[str, Any]]:
        columns = self.columns
        for row in self.iter_rows():
            yield dict(zip(columns, row, strict=True))

    def column(self, name: str) -> list[Any]:
        index = self.columns.index(name)
        return [row[index] for row in self.iter_rows()]


def _points(layout: Layout, lengths: Sequence[int], batches: Sequence[int]) -> Iterator[Row]:
    for head, length, per_token, per_token_gpu, seq, seq_gpu, paged_gpu, all_gpus in _lengths(layout, lengths):
        for b in batches:
            yield (*head, length, b, per_token, per_token_gpu, seq, seq_gpu, b * seq, b * seq_gpu,
                   b * paged_gpu, b * all_gpus)


class LengthRow(NamedTuple):
    """What a sweep row's columns are made of, per layout and length: the batch multiplies the last four."""

    head: tuple[str, int, int, str, int, int]  # model, tp, pp, kv_dtype, block_size, num_gpus
    length: int
    per_token: int
    per_token_gpu: int
    sequence: int
    sequence_gpu: int
    sequence_paged_gpu: int
    sequence_all_gpus: int


def _lengths(layout: Layout, lengths: Sequence[int]) -> Iterator[LengthRow]:
    head = (layout.model.model_id, layout.tp, layout.pp, layout.kv_dtype.name, layout.block_size, layout.num_gpus)
    for length in lengths:
        one = KvCacheResult(layout, length, 1)
        yield LengthRow(head, length, one.bytes_per_token, one.bytes_per_token_per_gpu, one.bytes_per_sequence,
                        one.bytes_per_sequence_per_gpu, one.bytes_per_sequence_paged_per_gpu, one.total_bytes_all_gpus)


def _check_axes(axes: dict[str, Sequence[Any]]) -> None:
    for name, values in axes.items():
        if not values:
            raise InputError(f"sweep axis {name} is empty", arg=name)
    size = 1
    for values in axes.values():
        size *= len(values)
    if size > MAX_SWEEP_POINTS:
        raise InputError(f"the sweep has {size:,} points (limit {MAX_SWEEP_POINTS:,}): narrow an axis")


def sweep(models: Sequence[ModelConfig | str], *, max_model_lens: Sequence[int], batches: Sequence[int] = (1,),
          tps: Sequence[int] = (1,), pps: Sequence[int] = (1,), kv_dtypes: Sequence[str] = ("auto",),
          request: CacheRequest | None = None, engines: EngineAxis | None = None,
          progress: Callable[[int, int], None] | None = None, **fields: Any) -> Sweep:
    """The cartesian product models × tp × pp × kv_dtype [× engine] × max_model_len × batch. Everything else
    (block size, quant group, state dtypes) is `request`'s, or its fields as keywords. `progress(done, total)` is
    called as layouts (and, with engines, capacity points) are done."""
    _check_axes({"models": models, "max_model_lens": max_model_lens, "batches": batches, "tps": tps, "pps": pps,
                 "kv_dtypes": kv_dtypes, "engines": engines.engines if engines else ("-",)})
    if min(*max_model_lens, *batches) <= 0:
        raise InputError("sweep sequence lengths and batch sizes must be positive")
    base = cache_request(request, **fields)  # bad input for every layout: one error, not a skip each
    if engines is not None:
        from kvplan.workflows.capacity_curve import check_engines

        check_engines(engines.engines, engines.memory.gpu)
    notes: list[str] = []
    combos = [(as_model(m), tp, pp, d) for m in models for tp, pp, d in itertools.product(tps, pps, kv_dtypes)]
    tick = _counter(len(combos) * (len(engines.engines) * len(max_model_lens) if engines else 1), progress)
    units = len(engines.engines) * len(max_model_lens) if engines else 1  # progress units of one layout
    layouts = [layout for m, tp, pp, d in combos
               if (layout := _layout(m, replace(base, tp=tp, pp=pp, kv_dtype=d), notes, tick, units, engines is None))]
    notes[:0] = _length_warnings(models, max_model_lens)
    if not layouts:
        raise InputError("no sweep point is valid: " + "; ".join(notes))
    if engines is None:
        return Sweep(layouts=tuple(layouts), max_model_lens=tuple(max_model_lens), batches=tuple(batches),
                     notes=tuple(notes))
    points = tuple(_engine_points(layout, base, max_model_lens, engines, notes, tick) for layout in layouts)
    return Sweep(layouts=tuple(layouts), max_model_lens=tuple(max_model_lens), batches=tuple(batches),
                 engines=engines.engines, points=points, notes=tuple(notes))


def _length_warnings(models: Sequence[ModelConfig | str], lengths: Sequence[int]) -> list[str]:
    return [f"warning: {m.model_id} is configured for at most {m.max_model_len:,} tokens; the sweep goes to "
            f"{max(lengths):,}" for m in map(as_model, models) if m.max_model_len and max(lengths) > m.max_model_len]


def _layout(model: ModelConfig, request: CacheRequest, notes: list[str], tick: Callable[[], None], units: int,
            count: bool) -> Layout | None:
    """One (model, tp, pp, dtype) layout, or a note when the model cannot take it (its progress units done)."""
    try:
        layout = build_layout(model, request)
    except KvplanError as exc:
        notes.append(f"skipped {model.model_id} tp={request.tp} pp={request.pp} kv_dtype={request.kv_dtype}: {exc}")
        for _ in range(units):
            tick()
        return None
    if count:
        tick()
    return layout


def _engine_points(layout: Layout, base: CacheRequest, lengths: Sequence[int], engines: EngineAxis,
                   notes: list[str], tick: Callable[[], None]) -> tuple[CapacityPoint, ...]:
    """Each engine's capacity at each length (capacity depends on the length, not on the batch): the sweep's
    layout (its block size aside: each engine pages in its own) with the axis' GPU, budget and knobs."""
    from kvplan.workflows.capacity_curve import capacity_point

    cache = replace(base, tp=layout.tp, pp=layout.pp, kv_dtype=layout.kv_dtype.name, block_size=None)
    question = CapacityRequest(model=layout.model, cache=cache, settings=engines.settings, memory=engines.memory)
    out = []
    for engine in engines.engines:
        for length in lengths:
            point = capacity_point(question.with_cache(max_model_len=length), engine)
            tick()
            if point.note:
                notes.append(f"skipped capacity of {layout.model.model_id}: {point.note}")
            elif point.refusal:
                notes.append(f"capacity of {layout.model.model_id}: {point.refusal} (answer kept: fits = false)")
            out.append(point)
    return tuple(out)


def _counter(total: int, progress: Callable[[int, int], None] | None) -> Callable[[], None]:
    """A tick() that reports (done, total) units: layouts, or capacity points with engines."""
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    return tick
