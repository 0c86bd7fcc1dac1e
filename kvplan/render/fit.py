"""`kvplan fit`: the payload (``--json``) and the table drawn from it, from a frozen FitResult."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.planning.fit import FitResult
from kvplan.render import gib
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from rich.console import RenderableType


def fit_payload(result: FitResult) -> dict[str, Any]:
    best = result.best
    return {"model": result.model_id, "engine": result.engine, "gpus": list(result.gpus),
            "context": result.context, "concurrency": result.concurrency, "gpus_per_node": result.gpus_per_node,
            "max_gpus": result.max_gpus, "max_replicas": result.max_replicas, "ranking": result.ranking,
            "num_evaluated": result.num_evaluated, "fits": best is not None,
            "best": None if best is None else best.as_dict(),
            "alternatives": [c.as_dict() for c in result.candidates], "notes": list(result.notes)}


def setup_text(c: dict[str, Any]) -> str:
    """`2 × (tp 4 pp 1) on H100-SXM, 8 GPUs, $19.92/h`."""
    cost = "" if c["cost_per_hour"] is None else f", ${c['cost_per_hour']:,.2f}/h"
    return (f"{c['replicas']} × (tp {c['tp']} pp {c['pp']}) on {c['gpu']}, KV {c['kv_dtype']}: "
            f"{c['num_gpus']:,} GPU{'s' if c['num_gpus'] > 1 else ''}{cost}")


def _row(rank: int, c: dict[str, Any], priced: bool, why: bool) -> tuple[str, ...]:
    cells = [str(rank), c["gpu"], f"{c['num_gpus']:,}", f"{c['replicas']:,}", str(c["tp"]), str(c["pp"]),
             c["kv_dtype"], gib(c["kv_budget_bytes_per_gpu"]), f"{c['requests_per_replica']:,.2f}",
             f"{c['requests']:,}"]
    if priced:
        cells.append("-" if c["cost_per_hour"] is None else f"{c['cost_per_hour']:,.2f}")
    cells.append("yes" if c["fits"] else "no")
    return (*cells, c["reason"]) if why else tuple(cells)


def fit_tables(payload: dict[str, Any]) -> list[RenderableType]:
    from rich.text import Text

    best, rows = payload["best"], payload["alternatives"]
    title = (f"{payload['model']} ({payload['engine']}): {payload['concurrency']:,} request"
             f"{'s' if payload['concurrency'] > 1 else ''} × {payload['context']:,} tokens -> "
             + (setup_text(best) if best else "nothing fits"))
    priced = any(c["price_per_gpu_hour"] is not None for c in rows)
    why = any(not c["fits"] for c in rows)
    table = Table(title=title)
    for name in ("rank", "GPU", "GPUs", "replicas", "tp", "pp", "KV dtype", "KV budget/GPU", "requests/replica",
                 "requests", *(("$/hour",) if priced else ()), "serves"):
        table.add_column(name, justify="left" if name in ("GPU", "KV dtype") else "right")
    if why:
        table.add_column("why not", wrap=True)
    for rank, c in enumerate(rows, 1):
        table.add_row(*_row(rank, c, priced, why))
    shown = f"{len(rows)} of {payload['num_evaluated']:,} setups on {', '.join(payload['gpus'])} shown"
    return [table, Text(f"ranked by {payload['ranking']}"), Text(shown)]
