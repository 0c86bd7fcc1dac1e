"""Payloads and tables of the workflow commands (compare, sweep, waste; size's workload section is
``kvplan.render.workload``).

As everywhere in ``kvplan.render``: one typed payload per result, printed as JSON or drawn as rich
tables from the same object; bytes stay ints in payloads and become GiB only in tables.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, NamedTuple

from kvplan.render import gib_number as _gib
from kvplan.render.payload import INLINE, OMIT_NONE
from kvplan.render.size import Parallel, SizePayload, size_payload, size_tables
from kvplan.render.tables import Table
from kvplan.render.workload import AllocatorPayload, allocator_payload, allocator_table, plural, workload_tables
from kvplan.units import format_floor
from kvplan.workflows.sweep import Sweep

if TYPE_CHECKING:  # annotations only: a sweep without engines never imports the capacity stack (issue 33)
    from rich.console import RenderableType

    from kvplan.workflows.capacity_curve import CapacityPoint
    from kvplan.workflows.compare import Comparison
    from kvplan.workflows.waste import WasteResult

MAX_TABLE_ROWS = 200


# --------------------------------------------------------------------------- compare

@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityPointPayload:
    engine: str
    gpu: str | None
    max_model_len: int
    kv_budget_bytes_per_gpu: int | None
    kv_tokens: int | None
    max_concurrency: float | None
    requests_at_max_len: float | None
    error: str | None


def capacity_point_payload(p: CapacityPoint) -> CapacityPointPayload:
    return CapacityPointPayload(engine=p.engine, gpu=p.gpu, max_model_len=p.max_model_len,
                                kv_budget_bytes_per_gpu=p.kv_budget_bytes_per_gpu, kv_tokens=p.kv_tokens,
                                max_concurrency=p.max_concurrency, requests_at_max_len=p.requests_at_max_len,
                                error=p.note or None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareRow:
    """One `kvplan size --json` object per model, with a "capacity" list when engines were compared."""

    size: SizePayload = field(metadata=INLINE)
    capacity: tuple[CapacityPointPayload, ...] | None = field(default=None, metadata=OMIT_NONE)


def compare_payload(comparison: Comparison) -> list[CompareRow]:
    points: list[tuple[CapacityPoint, ...] | None] = [*comparison.capacity]
    points += [None] * (len(comparison.results) - len(points))
    return [CompareRow(size=size_payload(r), capacity=None if p is None else tuple(map(capacity_point_payload, p)))
            for r, p in zip(comparison.results, points, strict=False)]


def _dash(value: int | float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _count(value: float | None, unit: str = "") -> str:
    """Requests with two decimals, cut rather than rounded (70.995 -> 70.99: 70 fit, not 71)."""
    return "-" if value is None else format_floor(value) + unit


def _capacity_table(rows: list[CompareRow]) -> Table:
    table = allocator_table("capacity per engine (max_model_len = seq len)", ("model", "engine", "GiB KV budget/GPU",
                            "KV tokens", "max concurrency", "requests at seq len"), left=2)
    for r in rows:
        for c in r.capacity or ():
            budget = "-" if c.kv_budget_bytes_per_gpu is None else _gib(c.kv_budget_bytes_per_gpu)
            table.add_row(r.size.model, c.engine, budget, _dash(c.kv_tokens, "{:,}"),
                          _count(c.max_concurrency, "x"), _count(c.requests_at_max_len))
    return table


def compare_tables(rows: list[CompareRow]) -> list[Table]:
    first = rows[0].size
    par = first.parallel
    table = allocator_table(f"{plural(first.batch, 'sequence')}, tp {par.tp} pp {par.pp} dcp {par.dcp}",
                            ("model", "attention", "KV", "B/token", "B/token/GPU", "seq len", "GiB/seq/GPU",
                             "GiB/GPU", "GiB/GPU paged"), left=3)
    for s in (r.size for r in rows):
        table.add_row(s.model, s.attention, s.kv_dtype, f"{s.bytes_per_token:,}", f"{s.bytes_per_token_per_gpu:,}",
                      f"{s.seq_len:,}", _gib(s.bytes_per_sequence_per_gpu), _gib(s.total_bytes_per_gpu),
                      _gib(s.total_bytes_paged_per_gpu))
    return [table, _capacity_table(rows)] if rows[0].capacity is not None else [table]


# --------------------------------------------------------------------------- sweep

def write_csv(result: Sweep, out: IO[str]) -> None:
    """The sweep as CSV, row by row (memory stays flat however many rows). Without engines, each (layout, length)
    writes its batches' lines at once: its text columns quoted by the csv module once, the numbers (ints, which CSV
    never quotes) formatted into one template: no row tuple built, no field converted one by one."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    if result.engines:
        writer.writerows(result.iter_rows())
        return
    batches, heads = result.batches, io.StringIO()
    head_writer = csv.writer(heads, lineterminator="")
    for head, length, token, token_gpu, seq, seq_gpu, paged, every in result.iter_lengths():
        heads.seek(0)
        heads.truncate()
        head_writer.writerow((*head, length))
        first, middle = heads.getvalue() + ",", f",{token},{token_gpu},{seq},{seq_gpu},"
        out.write("".join([f"{first}{b}{middle}{b * seq},{b * seq_gpu},{b * paged},{b * every}\n" for b in batches]))


def write_json_lines(result: Sweep, out: IO[str]) -> None:
    """JSON lines: one object per row, its keys the sweep's columns (with engines: the capacity columns too)."""
    out.writelines(json.dumps(row) + "\n" for row in result.dicts())


class SweepRow(NamedTuple):
    """A sweep row read by name: kvplan.workflows.sweep.SWEEP_COLUMNS, then capacity_curve.ENGINE_COLUMNS (None
    where no engine was swept). A NamedTuple: the table reads its first rows, the CSV the plain tuples."""

    model: str
    tp: int
    pp: int
    kv_dtype: str
    block_size: int
    num_gpus: int
    seq_len: int
    batch: int
    bytes_per_token: int
    bytes_per_token_per_gpu: int
    bytes_per_sequence: int
    bytes_per_sequence_per_gpu: int
    total_bytes: int
    total_bytes_per_gpu: int
    total_bytes_paged_per_gpu: int
    total_bytes_all_gpus: int
    engine: str | None = None
    gpu: str | None = None
    kv_budget_bytes_per_gpu: int | None = None
    kv_tokens: int | None = None
    max_concurrency: float | None = None
    requests_at_max_len: float | None = None
    fits: bool | None = None


ENGINE_HEADERS = ("engine", "KV GiB/GPU", "KV tokens", "concurrency", "requests", "fits")


def _engine_cells(row: SweepRow) -> tuple[str, ...]:
    """The capacity columns of an engine sweep row ("-" where the engine refused)."""
    fits = "-" if row.fits is None else "yes" if row.fits else "no"
    budget = "-" if row.kv_budget_bytes_per_gpu is None else _gib(row.kv_budget_bytes_per_gpu)
    return (str(row.engine), budget, _dash(row.kv_tokens, "{:,}"), _count(row.max_concurrency, "x"),
            _count(row.requests_at_max_len), fits)


def sweep_tables(result: Sweep) -> list[Table]:
    shown = [SweepRow(*row) for row in itertools.islice(result.iter_rows(), MAX_TABLE_ROWS)]
    total = result.num_rows
    more = f" (first {MAX_TABLE_ROWS} of {total:,}; use --csv or --json)" if total > len(shown) else ""
    engines = bool(result.engines)
    table = allocator_table(f"sweep: {total:,} point{'s' if total != 1 else ''}{more}",
                            ("model", "tp", "pp", "KV", "seq len", "batch", "B/token/GPU", "GiB/seq/GPU", "GiB/GPU",
                             "GiB all GPUs", *(ENGINE_HEADERS if engines else ())))
    for row in shown:
        table.add_row(row.model, str(row.tp), str(row.pp), row.kv_dtype, f"{row.seq_len:,}", f"{row.batch:,}",
                      f"{row.bytes_per_token_per_gpu:,}", _gib(row.bytes_per_sequence_per_gpu),
                      _gib(row.total_bytes_per_gpu), _gib(row.total_bytes_all_gpus),
                      *(_engine_cells(row) if engines else ()))
    return [table]


# --------------------------------------------------------------------------- size with a workload, waste

def size_and_workload_tables(payload: SizePayload) -> list[RenderableType]:
    """`kvplan size` with a workload: the size tables, then the allocators."""
    assert payload.workload is not None, "a size payload without a workload"
    return [*size_tables(payload), *workload_tables(payload.workload)]


@dataclass(frozen=True, slots=True, kw_only=True)
class WasteAllocator:
    memory: AllocatorPayload = field(metadata=INLINE)
    waste_bytes_per_gpu: int
    waste_pct: float


@dataclass(frozen=True, slots=True, kw_only=True)
class WastePayload:
    model: str
    kv_dtype: str
    parallel: Parallel
    block_size: int
    max_seq_len: int
    num_sequences: int
    mean_tokens: float
    max_tokens: int
    min_tokens: int
    allocators: tuple[WasteAllocator, ...]


def waste_payload(result: WasteResult) -> WastePayload:
    layout = result.layout
    return WastePayload(
        model=layout.model.model_id, kv_dtype=layout.kv_dtype.name, parallel=Parallel(layout.tp, layout.pp, layout.dcp),
        block_size=layout.block_size, max_seq_len=result.max_model_len, num_sequences=result.num_sequences,
        mean_tokens=result.mean_tokens, max_tokens=max(result.lengths), min_tokens=min(result.lengths),
        allocators=tuple(WasteAllocator(memory=allocator_payload(row.memory), waste_bytes_per_gpu=row.waste_bytes_per_gpu,
                                        waste_pct=row.waste_pct) for row in result.rows))


def waste_tables(payload: WastePayload) -> list[Table]:
    title = (f"{payload.model}: {payload.num_sequences:,} sequences (mean {payload.mean_tokens:,.0f}, "
             f"max {payload.max_tokens:,} tokens), max-seq-len {payload.max_seq_len:,}, "
             f"block {payload.block_size}, KV {payload.kv_dtype}")
    table = allocator_table(title, ("allocator", "KV tokens", "bytes / GPU", "GiB / GPU", "waste GiB / GPU", "waste %"))
    for a in payload.allocators:
        m = a.memory
        table.add_row(m.allocator, f"{m.kv_tokens:,}", f"{m.total_bytes_per_gpu:,}", _gib(m.total_bytes_per_gpu),
                      _gib(a.waste_bytes_per_gpu), f"{a.waste_pct:.1f}%")
    return [table]
