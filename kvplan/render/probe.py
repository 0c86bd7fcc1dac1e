"""`kvplan probe`'s payload (the JSON contract: device, results, ok, plus tolerance and bandwidth
context) and its table, from the probe's frozen results (``kvplan.probe.compare``)."""

from __future__ import annotations

from typing import Any

from kvplan.probe.compare import GroupResult, ProbeResult
from kvplan.render.tables import Table


def _finite(error: float) -> float | None:
    """JSON has no infinity: a group predicted empty that holds bytes reads as null (and fails)."""
    return error if error != float("inf") else None


def _group_dict(g: GroupResult) -> dict[str, Any]:
    return {"kind": g.kind, "num_layers": g.num_layers, "predicted_bytes": g.predicted_bytes,
            "measured_bytes": g.measured_bytes, "reserved_bytes": g.reserved_bytes,
            "driver_bytes": g.driver_bytes, "allocated_bytes": g.allocated_bytes, "error": _finite(g.error)}


def _floor_s(read_bytes: int, gbps: float | None) -> float | None:
    return read_bytes / (gbps * 1e9) if gbps and read_bytes else None


def decode_plan(r: ProbeResult, peak_gbps: float | None) -> dict[str, Any]:
    """Planning numbers: the measured step over the allocated cache, and the least time one decode step
    that reads the whole KV budget (kv_bytes) takes at the measured decode bandwidth and at the peak."""
    return {"decode_step_s": r.decode_step_s, "decode_step_bytes": r.decode_step_bytes, "kv_bytes": r.kv_bytes,
            "decode_floor_s": _floor_s(r.kv_bytes, r.decode_gbps),
            "decode_floor_peak_s": _floor_s(r.kv_bytes, peak_gbps),
            "decode_fraction_of_peak": r.decode_gbps / peak_gbps if r.decode_gbps and peak_gbps else None}


def result_dict(r: ProbeResult, tolerance: float, peak_gbps: float | None = None) -> dict[str, Any]:
    return {
        "model": r.model, "tp": r.tp, "tp_rank": r.tp_rank, "kv_dtype": r.kv_dtype, "layout": r.layout,
        "num_blocks": r.num_blocks, "block_size": r.block_size, "num_seqs": r.num_seqs,
        "predicted_bytes": r.predicted_bytes, "measured_bytes": r.measured_bytes,
        "reserved_bytes": r.reserved_bytes, "driver_bytes": r.driver_bytes, "allocated_bytes": r.allocated_bytes,
        "error": _finite(r.error),
        "kernel_check": r.kernel_check, "kernel_notes": list(r.kernel_notes),
        "write_gbps": r.write_gbps, "decode_gbps": r.decode_gbps,
        "write_fraction_of_peak": r.write_gbps / peak_gbps if r.write_gbps and peak_gbps else None,
        **decode_plan(r, peak_gbps), "ok": r.passes(tolerance), "groups": [_group_dict(g) for g in r.groups],
    }


def replication_rows(results: list[ProbeResult], whole_bytes: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """Per (model, kv dtype) under TP: Σ measured over ranks / the unsharded prediction (1.0: no replica)."""
    rows = []
    for (model, kv_dtype), whole in whole_bytes.items():
        ranks = [r for r in results if (r.model, r.kv_dtype) == (model, kv_dtype)]
        measured = sum(r.measured_bytes for r in ranks)
        rows.append({"model": model, "kv_dtype": kv_dtype, "tp": len(ranks), "all_ranks_measured_bytes": measured,
                     "unsharded_predicted_bytes": whole, "replication": measured / whole if whole else None})
    return rows


def probe_payload(device: str, results: list[ProbeResult], tolerance: float, *, peak_gbps: float | None = None,
                  bandwidth_note: str | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON contract: {device, results: [...], ok} plus the tolerance and bandwidth context."""
    rows = [result_dict(r, tolerance, peak_gbps) for r in results]
    payload: dict[str, Any] = {"device": device, "tolerance": tolerance, "peak_gbps": peak_gbps,
                               "bandwidth_note": bandwidth_note, "results": rows,
                               "ok": bool(rows) and all(row["ok"] for row in rows)}
    return {**payload, **(extra or {})}


def _opt(value: float | int | None, fmt: str) -> str:
    return fmt.format(value) if value is not None else "-"


def probe_tables(payload: dict[str, Any]) -> list[Any]:
    table = Table(title=f"kvplan probe on {payload['device']} (tolerance {payload['tolerance']})",
                  title_justify="left")
    rows = payload["results"]
    on_gpu = any(r["driver_bytes"] is not None for r in rows)  # CPU runs have no driver view nor GB/s
    columns = ["model", "rank", "kv dtype", "blocks", "predicted B", "measured B", "error", "kernels", "ok"]
    columns[6:6] = ["driver B", "write GB/s", "decode GB/s", "step ms"] if on_gpu else []
    for name in columns:
        table.add_column(name, justify="left" if name in ("model", "kv dtype", "kernels") else "right")
    for r in rows:
        cells = {"model": r["model"], "rank": str(r["tp_rank"]), "kv dtype": r["kv_dtype"],
                 "blocks": f"{r['num_blocks']:,}", "predicted B": f"{r['predicted_bytes']:,}",
                 "measured B": f"{r['measured_bytes']:,}", "driver B": _opt(r["driver_bytes"], "{:,}"),
                 "write GB/s": _opt(r["write_gbps"], "{:,.0f}"), "decode GB/s": _opt(r["decode_gbps"], "{:,.0f}"),
                 "step ms": _opt(r["decode_step_s"] and r["decode_step_s"] * 1e3, "{:,.2f}"),
                 "error": _opt(r["error"], "{:.2%}"), "kernels": r["kernel_check"], "ok": "yes" if r["ok"] else "NO"}
        table.add_row(*(cells[name] for name in columns))
    tables: list[Any] = [table]
    notes = [*payload.get("skipped", []),
             *(f"{r['model']} ({r['kv_dtype']}): {n}" for r in payload["results"] for n in r["kernel_notes"])]
    notes += [_floor_note(r) for r in rows if r.get("decode_floor_s")]
    if payload.get("bandwidth_note"):
        notes.append(payload["bandwidth_note"])
    for row in payload.get("replication", []):
        notes.append(f"{row['model']}: all {row['tp']} ranks hold {row['all_ranks_measured_bytes']:,} B = "
                     f"{row['replication']:.2f}× the unsharded prediction")
    if payload.get("capacity"):
        c = payload["capacity"]
        notes.append(f"capacity: {c['allocated_blocks']:,} blocks allocated in {c['free_bytes']:,} B free; "
                     f"kvplan: {c['capacity_blocks']}, free // block: {c['formula_blocks']:,} ({c['note']})")
    from rich.text import Text

    return tables + [Text(note) for note in dict.fromkeys(notes)]


def _floor_note(r: dict[str, Any]) -> str:
    peak = r["decode_floor_peak_s"]
    at_peak = f" ({peak * 1e3:,.2f} ms at the catalog's peak bandwidth)" if peak else ""
    return (f"{r['model']} ({r['kv_dtype']}): a decode step that reads all {r['kv_bytes']:,} B of KV takes at least "
            f"{r['decode_floor_s'] * 1e3:,.2f} ms at the measured {r['decode_gbps']:,.0f} GB/s{at_peak}")
