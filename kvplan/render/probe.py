"""`kvplan probe`'s typed payload (the JSON contract: device, results, ok, plus tolerance and bandwidth
context) and its table, from the probe's frozen results (``kvplan.probe.compare``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvplan.probe.compare import GroupResult, ProbeResult
from kvplan.render.payload import OMIT_NONE
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from rich.console import RenderableType

    from kvplan.probe.capacity import CapacityCheck


def _finite(error: float) -> float | None:
    """JSON has no infinity: a group predicted empty that holds bytes reads as null (and fails)."""
    return error if error != float("inf") else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeGroupRow:
    kind: str
    num_layers: int
    predicted_bytes: int
    measured_bytes: int
    reserved_bytes: int | None
    driver_bytes: int | None
    allocated_bytes: int | None
    error: float | None


def _group_row(g: GroupResult) -> ProbeGroupRow:
    return ProbeGroupRow(kind=g.kind, num_layers=g.num_layers, predicted_bytes=g.predicted_bytes,
                         measured_bytes=g.measured_bytes, reserved_bytes=g.reserved_bytes, driver_bytes=g.driver_bytes,
                         allocated_bytes=g.allocated_bytes, error=_finite(g.error))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeRow:
    """One model on one rank; the decode_* keys are planning numbers: the measured step over the allocated cache,
    and the least time one decode step that reads the whole KV budget (kv_bytes) takes at the measured decode
    bandwidth and at the peak."""

    model: str
    tp: int
    tp_rank: int
    kv_dtype: str
    layout: str
    num_blocks: int
    block_size: int
    num_seqs: int
    predicted_bytes: int
    measured_bytes: int
    reserved_bytes: int | None
    driver_bytes: int | None
    allocated_bytes: int | None
    error: float | None
    kernel_check: str
    kernel_notes: tuple[str, ...]
    write_gbps: float | None
    decode_gbps: float | None
    write_fraction_of_peak: float | None
    decode_step_s: float | None
    decode_step_bytes: int | None
    kv_bytes: int
    decode_floor_s: float | None
    decode_floor_peak_s: float | None
    decode_fraction_of_peak: float | None
    ok: bool
    groups: tuple[ProbeGroupRow, ...]


def _floor_s(read_bytes: int, gbps: float | None) -> float | None:
    return read_bytes / (gbps * 1e9) if gbps and read_bytes else None


def _fraction(gbps: float | None, peak_gbps: float | None) -> float | None:
    return gbps / peak_gbps if gbps and peak_gbps else None


def result_row(r: ProbeResult, tolerance: float, peak_gbps: float | None = None) -> ProbeRow:
    return ProbeRow(
        model=r.model, tp=r.tp, tp_rank=r.tp_rank, kv_dtype=r.kv_dtype, layout=r.layout, num_blocks=r.num_blocks,
        block_size=r.block_size, num_seqs=r.num_seqs, predicted_bytes=r.predicted_bytes,
        measured_bytes=r.measured_bytes, reserved_bytes=r.reserved_bytes, driver_bytes=r.driver_bytes,
        allocated_bytes=r.allocated_bytes, error=_finite(r.error), kernel_check=r.kernel_check,
        kernel_notes=r.kernel_notes, write_gbps=r.write_gbps, decode_gbps=r.decode_gbps,
        write_fraction_of_peak=_fraction(r.write_gbps, peak_gbps), decode_step_s=r.decode_step_s,
        decode_step_bytes=r.decode_step_bytes, kv_bytes=r.kv_bytes, decode_floor_s=_floor_s(r.kv_bytes, r.decode_gbps),
        decode_floor_peak_s=_floor_s(r.kv_bytes, peak_gbps), decode_fraction_of_peak=_fraction(r.decode_gbps, peak_gbps),
        ok=r.passes(tolerance), groups=tuple(_group_row(g) for g in r.groups))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationRow:
    """Per (model, kv dtype) under TP: Σ measured over ranks / the unsharded prediction (1.0: no replica)."""

    model: str
    kv_dtype: str
    tp: int
    all_ranks_measured_bytes: int
    unsharded_predicted_bytes: int
    replication: float | None


def replication_rows(results: Sequence[ProbeResult],
                     whole_bytes: Mapping[tuple[str, str], int]) -> tuple[ReplicationRow, ...]:
    rows = []
    for (model, kv_dtype), whole in whole_bytes.items():
        ranks = [r for r in results if (r.model, r.kv_dtype) == (model, kv_dtype)]
        measured = sum(r.measured_bytes for r in ranks)
        rows.append(ReplicationRow(model=model, kv_dtype=kv_dtype, tp=len(ranks), all_ranks_measured_bytes=measured,
                                   unsharded_predicted_bytes=whole, replication=measured / whole if whole else None))
    return tuple(rows)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityCheckPayload:
    """`--capacity`: blocks allocated until the driver refused, against kvplan capacity (kvplan.probe.capacity)."""

    model: str
    free_bytes: int
    block_bytes: int
    allocated_blocks: int
    formula_blocks: int
    capacity_blocks: int | None
    capacity_page_bytes: int | None
    error: float
    note: str


def capacity_check_payload(c: CapacityCheck) -> CapacityCheckPayload:
    return CapacityCheckPayload(model=c.model, free_bytes=c.free_bytes, block_bytes=c.block_bytes,
                                allocated_blocks=c.allocated_blocks, formula_blocks=c.formula_blocks,
                                capacity_blocks=c.capacity_blocks, capacity_page_bytes=c.capacity_page_bytes,
                                error=c.error, note=c.note)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbePayload:
    """The JSON contract: {device, results: [...], ok} plus the tolerance and bandwidth context; the command adds
    the default targets it skipped, the replication under TP and the --capacity check."""

    device: str
    tolerance: float
    peak_gbps: float | None
    bandwidth_note: str | None
    results: tuple[ProbeRow, ...]
    ok: bool
    skipped: tuple[str, ...] | None = field(default=None, metadata=OMIT_NONE)
    replication: tuple[ReplicationRow, ...] | None = field(default=None, metadata=OMIT_NONE)
    capacity: CapacityCheckPayload | None = field(default=None, metadata=OMIT_NONE)


def probe_payload(device: str, results: Sequence[ProbeResult], tolerance: float, *, peak_gbps: float | None = None,
                  bandwidth_note: str | None = None) -> ProbePayload:
    rows = tuple(result_row(r, tolerance, peak_gbps) for r in results)
    return ProbePayload(device=device, tolerance=tolerance, peak_gbps=peak_gbps, bandwidth_note=bandwidth_note,
                        results=rows, ok=bool(rows) and all(row.ok for row in rows))


def _opt(value: float | int | None, fmt: str) -> str:
    return fmt.format(value) if value is not None else "-"


def _cells(r: ProbeRow) -> dict[str, str]:
    """A result's cells by column name (the columns shown depend on the device)."""
    return {"model": r.model, "rank": str(r.tp_rank), "kv dtype": r.kv_dtype, "blocks": f"{r.num_blocks:,}",
            "predicted B": f"{r.predicted_bytes:,}", "measured B": f"{r.measured_bytes:,}",
            "driver B": _opt(r.driver_bytes, "{:,}"), "write GB/s": _opt(r.write_gbps, "{:,.0f}"),
            "decode GB/s": _opt(r.decode_gbps, "{:,.0f}"),
            "step ms": _opt(r.decode_step_s and r.decode_step_s * 1e3, "{:,.2f}"), "error": _opt(r.error, "{:.2%}"),
            "kernels": r.kernel_check, "ok": "yes" if r.ok else "NO"}


def probe_tables(payload: ProbePayload) -> list[RenderableType]:
    table = Table(title=f"kvplan probe on {payload.device} (tolerance {payload.tolerance})", title_justify="left")
    rows = payload.results
    on_gpu = any(r.driver_bytes is not None for r in rows)  # CPU runs have no driver view nor GB/s
    columns = ["model", "rank", "kv dtype", "blocks", "predicted B", "measured B", "error", "kernels", "ok"]
    columns[6:6] = ["driver B", "write GB/s", "decode GB/s", "step ms"] if on_gpu else []
    for name in columns:
        table.add_column(name, justify="left" if name in ("model", "kv dtype", "kernels") else "right")
    for r in rows:
        cells = _cells(r)
        table.add_row(*(cells[name] for name in columns))
    from rich.text import Text

    return [table, *(Text(note) for note in dict.fromkeys(_notes(payload)))]


def _notes(payload: ProbePayload) -> list[str]:
    rows = payload.results
    notes = [*(payload.skipped or ()), *(f"{r.model} ({r.kv_dtype}): {n}" for r in rows for n in r.kernel_notes)]
    notes += [_floor_note(r) for r in rows if r.decode_floor_s]
    if payload.bandwidth_note:
        notes.append(payload.bandwidth_note)
    for row in payload.replication or ():
        notes.append(f"{row.model}: all {row.tp} ranks hold {row.all_ranks_measured_bytes:,} B = "
                     f"{row.replication:.2f}× the unsharded prediction")
    if c := payload.capacity:
        notes.append(f"capacity: {c.allocated_blocks:,} blocks allocated in {c.free_bytes:,} B free; "
                     f"kvplan: {c.capacity_blocks}, free // block: {c.formula_blocks:,} ({c.note})")
    return notes


def _floor_note(r: ProbeRow) -> str:
    peak, floor = r.decode_floor_peak_s, r.decode_floor_s or 0.0
    at_peak = f" ({peak * 1e3:,.2f} ms at the catalog's peak bandwidth)" if peak else ""
    return (f"{r.model} ({r.kv_dtype}): a decode step that reads all {r.kv_bytes:,} B of KV takes at least "
            f"{floor * 1e3:,.2f} ms at the measured {r.decode_gbps or 0:,.0f} GB/s{at_peak}")
