"""Payloads and tables of the workflow commands (compare, sweep, waste, size's workload section).

As everywhere in ``kvplan.render``: one payload dict per result, printed as JSON or drawn as rich
tables from the same dict; bytes stay ints in payloads and become GiB only in tables.
"""

from __future__ import annotations

import csv
import json
from typing import IO, TYPE_CHECKING, Any

from kvplan.render import gib_number as _gib
from kvplan.render.size import size_payload, size_tables
from kvplan.workflows.allocators import AllocatorMemory, WorkloadMemory
from kvplan.workflows.capacity_curve import CapacityPoint
from kvplan.workflows.compare import Comparison
from kvplan.workflows.sweep import Sweep
from kvplan.workflows.waste import WasteResult

if TYPE_CHECKING:
    from rich.table import Table

MAX_TABLE_ROWS = 200


def _table(title: str, columns: tuple[str, ...], left: int = 1) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i < left else "right", no_wrap=i == 0)
    return table


# --------------------------------------------------------------------------- compare

def capacity_point_payload(p: CapacityPoint) -> dict[str, Any]:
    return {"engine": p.engine, "gpu": p.gpu, "max_model_len": p.seq_len, "kv_budget_bytes_per_gpu":
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
    table = _table(f"{rows[0]['batch']} sequence(s), tp {par['tp']} pp {par['pp']} dcp {par['dcp']}",
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
    writer.writerows(result.rows)


def write_json_lines(result: Sweep, out: IO[str]) -> None:
    out.writelines(json.dumps(row) + "\n" for row in result.dicts())


def sweep_tables(result: Sweep) -> list[Table]:
    shown = result.rows[:MAX_TABLE_ROWS]
    more = f" (first {MAX_TABLE_ROWS} of {len(result.rows):,}; use --csv or --json)" if len(result.rows) > len(shown) else ""
    table = _table(f"sweep: {len(result.rows):,} points{more}",
                   ("model", "tp", "pp", "KV", "seq len", "batch", "B/token/GPU", "GiB/seq/GPU", "GiB/GPU",
                    "GiB all GPUs"))
    col = {name: i for i, name in enumerate(result.columns)}
    for row in shown:
        table.add_row(row[col["model"]], str(row[col["tp"]]), str(row[col["pp"]]), row[col["kv_dtype"]],
                      f"{row[col['seq_len']]:,}", f"{row[col['batch']]:,}", f"{row[col['bytes_per_token_per_gpu']]:,}",
                      _gib(row[col["bytes_per_sequence_per_gpu"]]), _gib(row[col["total_bytes_per_gpu"]]),
                      _gib(row[col["total_bytes_all_gpus"]]))
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


def workload_tables(payload: dict[str, Any]) -> list[Table]:
    w = payload["workload"]
    title = (f"workload: {w['batch']} request(s) × {w['beam_width']} beam(s), prompt {w['prompt_tokens']:,} + "
             f"output {w['output_tokens']:,} tokens, shared prefix {w['shared_prefix_tokens']:,}, "
             f"block {w['block_size']}")
    shared = w["shared_prefix_tokens"] > 0
    table = _table(title, ("allocator", "KV tokens", "bytes / GPU", "GiB / GPU",
                           *(("no prefix sharing", "GiB / GPU") if shared else ())))
    unshared = {m["allocator"]: m for m in w["allocators_unshared"]}
    for m in w["allocators"]:
        mark = " *" if m["allocator"] == w["allocator"] else ""
        u = unshared[m["allocator"]]
        extra = (f"{u['total_bytes_per_gpu']:,}", _gib(u["total_bytes_per_gpu"])) if shared else ()
        table.add_row(m["allocator"] + mark, f"{m['kv_tokens']:,}", f"{m['total_bytes_per_gpu']:,}",
                      _gib(m["total_bytes_per_gpu"]), *extra)
    return [table]


def waste_payload(result: WasteResult) -> dict[str, Any]:
    layout = result.layout
    return {
        "model": layout.model.model_id, "kv_dtype": layout.kv_dtype.name,
        "parallel": {"tp": layout.tp, "pp": layout.pp, "dcp": layout.dcp}, "block_size": layout.block_size,
        "max_seq_len": result.max_seq_len, "num_sequences": result.num_sequences,
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

