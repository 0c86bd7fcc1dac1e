"""Payloads and tables of the workflow commands (compare, sweep, waste, size's workload section).

As everywhere in ``kvplan.render``: one payload dict per result, printed as JSON or drawn as rich
tables from the same dict; bytes stay ints in payloads and become GiB only in tables.
"""

from __future__ import annotations

import csv
import json
from typing import IO, Any

from kvplan.render import gib_number as _gib
from kvplan.render.size import size_payload, size_tables
from kvplan.render.tables import Table
from kvplan.workflows.allocators import AllocatorMemory, WorkloadMemory
from kvplan.workflows.capacity_curve import CapacityPoint
from kvplan.workflows.compare import Comparison
from kvplan.workflows.sweep import Sweep
from kvplan.workflows.waste import WasteResult

MAX_TABLE_ROWS = 200


def _table(title: str, columns: tuple[str, ...], left: int = 1) -> Table:
    table = Table(title=title, title_justify="left")
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i < left else "right")
    return table


# --------------------------------------------------------------------------- compare

def capacity_point_payload(p: CapacityPoint) -> dict[str, Any]:
    return {"engine": p.engine, "gpu": p.gpu, "max_model_len": p.max_model_len, "kv_budget_bytes_per_gpu":
            p.kv_budget_bytes_per_gpu, "kv_tokens": p.kv_tokens, "max_concurrency": p.max_concurrency,
            "requests_at_max_len": p.requests_at_max_len, "error": p.note or None}


def compare_payload(comparison: Comparison) -> list[dict[str, Any]]:
    """One `kvplan size --json` object per model, with a "capacity" list when engines were compared."""
    rows = [size_payload(r) for r in comparison.results]
    for row, points in zip(rows, comparison.capacity, strict=False):
        row["capacity"] = [capacity_point_payload(p) for p in points]
    return rows


def _capacity_table(rows: list[dict[str, Any]]) -> Table:
    table = _table("capacity per engine (max_model_len = seq len)", ("model", "engine", "GiB KV budget/GPU",
                   "KV tokens", "max concurrency", "requests at seq len"), left=2)
    for r in rows:
        for c in r["capacity"]:
            budget = "-" if c["kv_budget_bytes_per_gpu"] is None else _gib(c["kv_budget_bytes_per_gpu"])
            table.add_row(r["model"], c["engine"], budget, "-" if c["kv_tokens"] is None else f"{c['kv_tokens']:,}",
                          "-" if c["max_concurrency"] is None else f"{c['max_concurrency']:.2f}x",
                          "-" if c["requests_at_max_len"] is None else f"{c['requests_at_max_len']:,.2f}")
    return table


def compare_tables(rows: list[dict[str, Any]]) -> list[Table]:
    par = rows[0]["parallel"]
    table = _table(f"{_plural(rows[0]['batch'], 'sequence')}, tp {par['tp']} pp {par['pp']} dcp {par['dcp']}",
                   ("model", "attention", "KV", "B/token", "B/token/GPU", "seq len", "GiB/seq/GPU",
                    "GiB/GPU", "GiB/GPU paged"), left=3)
    for r in rows:
        table.add_row(r["model"], r["attention"], r["kv_dtype"], f"{r['bytes_per_token']:,}",
                      f"{r['bytes_per_token_per_gpu']:,}", f"{r['seq_len']:,}", _gib(r["bytes_per_sequence_per_gpu"]),
                      _gib(r["total_bytes_per_gpu"]), _gib(r["total_bytes_paged_per_gpu"]))
    return [table, _capacity_table(rows)] if "capacity" in rows[0] else [table]


# --------------------------------------------------------------------------- sweep

def write_csv(result: Sweep, out: IO[str]) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(result.iter_rows())  # row by row: memory stays flat however many rows


def write_json_lines(result: Sweep, out: IO[str]) -> None:
    out.writelines(json.dumps(row) + "\n" for row in result.dicts())


ENGINE_HEADERS = ("engine", "KV GiB/GPU", "KV tokens", "concurrency", "requests", "fits")


def _engine_cells(row: tuple[Any, ...], col: dict[str, int]) -> tuple[str, ...]:
    """The capacity columns of an engine sweep row ("-" where the engine refused)."""
    def num(name: str, fmt: str) -> str:
        value = row[col[name]]
        return "-" if value is None else fmt.format(value)

    fits = row[col["fits"]]
    return (row[col["engine"]], "-" if row[col["kv_budget_bytes_per_gpu"]] is None else
            _gib(row[col["kv_budget_bytes_per_gpu"]]), num("kv_tokens", "{:,}"), num("max_concurrency", "{:.2f}x"),
            num("requests_at_max_len", "{:,.2f}"), "-" if fits is None else "yes" if fits else "no")


def sweep_tables(result: Sweep) -> list[Table]:
    shown = result.rows[:MAX_TABLE_ROWS]
    total = len(result.rows)
    more = f" (first {MAX_TABLE_ROWS} of {total:,}; use --csv or --json)" if total > len(shown) else ""
    engines = "engine" in result.columns
    table = _table(f"sweep: {total:,} point{'s' if total != 1 else ''}{more}",
                   ("model", "tp", "pp", "KV", "seq len", "batch", "B/token/GPU", "GiB/seq/GPU", "GiB/GPU",
                    "GiB all GPUs", *(ENGINE_HEADERS if engines else ())))
    col = {name: i for i, name in enumerate(result.columns)}
    for row in shown:
        table.add_row(row[col["model"]], str(row[col["tp"]]), str(row[col["pp"]]), row[col["kv_dtype"]],
                      f"{row[col['seq_len']]:,}", f"{row[col['batch']]:,}", f"{row[col['bytes_per_token_per_gpu']]:,}",
                      _gib(row[col["bytes_per_sequence_per_gpu"]]), _gib(row[col["total_bytes_per_gpu"]]),
                      _gib(row[col["total_bytes_all_gpus"]]), *(_engine_cells(row, col) if engines else ()))
    return [table]


# --------------------------------------------------------------------------- allocators (size, waste)

def allocator_payload(m: AllocatorMemory) -> dict[str, Any]:
    return {"allocator": m.allocator, "kv_tokens": m.kv_tokens, "kv_bytes": m.kv_bytes,
            "kv_bytes_per_gpu": m.kv_bytes_per_gpu, "table_bytes_per_gpu": m.table_bytes_per_gpu,
            "total_bytes_per_gpu": m.total_bytes_per_gpu}


def workload_payload(result: WorkloadMemory, allocator: str) -> dict[str, Any]:
    """`kvplan size --json`'s "workload" key: prefix sharing, beam search and the chosen allocator."""
    w, chosen = result.workload, result.by_name(allocator)
    unshared = result.by_name(allocator, shared=False)
    saving = unshared.total_bytes_per_gpu - chosen.total_bytes_per_gpu
    return {
        "batch": w.batch, "prompt_tokens": w.prompt_tokens, "output_tokens": w.output_tokens,
        "beam_width": w.beam_width, "shared_prefix_tokens": w.shared_prefix_tokens,
        "block_size": result.layout.block_size, "allocator": allocator,
        "kv_tokens": chosen.kv_tokens, "bytes": chosen.kv_bytes, "bytes_per_gpu": chosen.total_bytes_per_gpu,
        "unshared_kv_tokens": unshared.kv_tokens, "unshared_bytes_per_gpu": unshared.total_bytes_per_gpu,
        "prefix_saving_bytes_per_gpu": saving,
        "prefix_saving_pct": 100.0 * saving / unshared.total_bytes_per_gpu if unshared.total_bytes_per_gpu else 0.0,
        "allocators": [allocator_payload(m) for m in result.allocators],
        "allocators_unshared": [allocator_payload(m) for m in result.unshared],
    }


def size_and_workload_tables(payload: dict[str, Any]) -> list[Any]:
    """`kvplan size` with a workload: the size tables, then the allocators."""
    return [*size_tables(payload), *workload_tables(payload)]


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def workload_tables(payload: dict[str, Any]) -> list[Any]:
    from rich.text import Text

    w = payload["workload"]
    title = (f"workload: {_plural(w['batch'], 'request')} × {_plural(w['beam_width'], 'beam')}, prompt "
             f"{w['prompt_tokens']:,} + output {w['output_tokens']:,} tokens, shared prefix "
             f"{w['shared_prefix_tokens']:,}, block {w['block_size']}")
    shared = w["shared_prefix_tokens"] > 0
    table = _table(title, ("allocator", "KV tokens", "bytes / GPU", "GiB / GPU",
                           *(("no prefix sharing", "GiB / GPU") if shared else ())))
    unshared = {m["allocator"]: m for m in w["allocators_unshared"]}
    for m in w["allocators"]:
        u = unshared[m["allocator"]]
        extra = (f"{u['total_bytes_per_gpu']:,}", _gib(u["total_bytes_per_gpu"])) if shared else ()
        table.add_row(m["allocator"], f"{m['kv_tokens']:,}", f"{m['total_bytes_per_gpu']:,}",
                      _gib(m["total_bytes_per_gpu"]), *extra)
    legend = (f"contiguous: each request × beam preallocates its whole length; paged: whole blocks of "
              f"{w['block_size']} tokens, full blocks shared; exact: the tokens held, shared ones counted once")
    return [table, Text(legend), Text(_workload_summary(payload))]


def _workload_summary(payload: dict[str, Any]) -> str:
    """The reported allocator's number in words, and what the tables above it count."""
    w = payload["workload"]
    line = (f"reported: {w['allocator']} (--allocator; JSON workload.bytes_per_gpu), {_gib(w['bytes_per_gpu'])} GiB "
            "per GPU")
    if w["shared_prefix_tokens"] > 0:
        line += (f"; without sharing the {w['shared_prefix_tokens']:,}-token prefix "
                 f"{_gib(w['unshared_bytes_per_gpu'])} GiB: prefix sharing saves "
                 f"{_gib(w['prefix_saving_bytes_per_gpu'])} GiB ({w['prefix_saving_pct']:.1f}%). The size tables "
                 "above count every request's tokens, shared or not")
    return line


def waste_payload(result: WasteResult) -> dict[str, Any]:
    layout = result.layout
    return {
        "model": layout.model.model_id, "kv_dtype": layout.kv_dtype.name,
        "parallel": {"tp": layout.tp, "pp": layout.pp, "dcp": layout.dcp}, "block_size": layout.block_size,
        "max_seq_len": result.max_model_len, "num_sequences": result.num_sequences,
        "mean_tokens": result.mean_tokens, "max_tokens": max(result.lengths), "min_tokens": min(result.lengths),
        "allocators": [{**allocator_payload(row.memory), "waste_bytes_per_gpu": row.waste_bytes_per_gpu,
                        "waste_pct": row.waste_pct} for row in result.rows],
    }


def waste_tables(payload: dict[str, Any]) -> list[Table]:
    title = (f"{payload['model']}: {payload['num_sequences']:,} sequences (mean {payload['mean_tokens']:,.0f}, "
             f"max {payload['max_tokens']:,} tokens), max-seq-len {payload['max_seq_len']:,}, "
             f"block {payload['block_size']}, KV {payload['kv_dtype']}")
    table = _table(title, ("allocator", "KV tokens", "bytes / GPU", "GiB / GPU", "waste GiB / GPU", "waste %"))
    for a in payload["allocators"]:
        table.add_row(a["allocator"], f"{a['kv_tokens']:,}", f"{a['total_bytes_per_gpu']:,}",
                      _gib(a["total_bytes_per_gpu"]), _gib(a["waste_bytes_per_gpu"]), f"{a['waste_pct']:.1f}%")
    return [table]

