"""`kvplan fit`: the typed payload (``--json``) and the table drawn from it, from a frozen FitResult."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvplan.planning.fit import Candidate, FitResult
from kvplan.records import Record
from kvplan.render import gib
from kvplan.render.tables import Table
from kvplan.units import format_floor

if TYPE_CHECKING:
    from rich.console import RenderableType


class SetupPayload(Record):
    """One setup tried: replicas × (tp × pp) of a GPU with a KV dtype, and whether it serves the load."""

    gpu: str
    tp: int
    pp: int
    replicas: int
    gpus_per_replica: int
    dp: int = 1  # data parallel as the engine runs it (vLLM DP ranks of tp × pp GPUs; SGLang DP attention in tp)
    ep: int = 1  # expert-parallel ranks
    dcp: int = 1  # decode context parallel over the TP ranks (vLLM --decode-context-parallel-size)
    nodes: int = 1  # nodes one replica spans
    pools: int = 1  # KV pools of one replica (one per DP rank)
    kv_tokens_per_rank: int = 0  # one pool's tokens (what each DP rank logs)
    requests_per_rank: float = 0.0  # one pool's requests of the full context
    kv_budget_bytes_per_stage: tuple[int, ...] = ()  # one GPU of each PP stage
    limiting_stage: int | None = None  # the PP stage whose KV runs out first (the others are cut to it)
    num_gpus: int
    kv_dtype: str
    kv_budget_bytes_per_gpu: int
    kv_tokens_per_replica: int
    requests_per_replica: float
    requests: int
    price_per_gpu_hour: float | None
    cost_per_hour: float | None
    fits: bool
    reason: str
    command: str | None = None  # the launch command of one replica (kvplan.launch.write)
    flags: Mapping[str, Any] | None = None
    layout: Mapping[str, int] | None = None  # tp, pp, dp, ep, dcp, nodes, gpus_per_node
    release: str | None = None  # the engine release the command is for
    gpu_memory_bytes: int | None = None  # the memory of the GPU planned on (the least the command needs)


def setup_payload(c: Candidate, command: bool = True) -> SetupPayload:
    """`command`: write its launch command (False: command, flags, layout and release are None; a table shows
    only the winner's)."""
    written = _written(c) if command else None
    pools = max(c.pools, 1)
    return SetupPayload(gpu=c.gpu, tp=c.tp, pp=c.pp, replicas=c.replicas, gpus_per_replica=c.gpus_per_replica,
                        dp=c.dp, ep=c.ep, dcp=c.dcp, nodes=c.nodes, pools=pools, kv_tokens_per_rank=c.kv_tokens // pools,
                        requests_per_rank=c.requests_per_replica / pools, limiting_stage=c.limiting_stage,
                        kv_budget_bytes_per_stage=c.result.kv_budget_bytes_per_gpu if c.result is not None else (),
                        num_gpus=c.num_gpus, kv_dtype=c.kv_dtype, kv_budget_bytes_per_gpu=c.kv_budget_bytes_per_gpu,
                        kv_tokens_per_replica=c.kv_tokens, requests_per_replica=c.requests_per_replica,
                        requests=c.requests, price_per_gpu_hour=c.price_per_gpu_hour, cost_per_hour=c.cost_per_hour,
                        fits=c.fits, reason=c.reason, command=written.command if written else None,
                        flags=written.flags if written else None, layout=written.layout if written else None,
                        release=written.engine if written else None,
                        gpu_memory_bytes=c.result.gpu_memory_bytes if c.result is not None else None)


def _written(c: Candidate) -> Any:
    from kvplan.render.capacity import launch_of

    return launch_of(c.result, c.launch) if c.result is not None else None


class FitPayload(Record):
    model: str
    engine: str
    gpus: tuple[str, ...]
    context: int
    concurrency: int
    gpus_per_node: int
    max_gpus: int
    max_replicas: int | None
    ranking: str
    num_evaluated: int  # setups planned
    fits: bool
    best: SetupPayload | None
    alternatives: tuple[SetupPayload, ...]
    notes: tuple[str, ...]
    why: str | None = None  # the winner against the best layout of the other family (DP attention or not)
    considered: tuple[str, ...] = ()  # every layout searched (`DP 16 + EP 16 (TP 1) on 2 nodes`)
    num_skipped: int = 0  # setups not planned: their bound showed they could not be shown (planning/search.py)
    num_setups: int = 0  # the whole space searched: num_evaluated + num_skipped
    catalog: bool = False  # no GPU was named: every GPU type of the catalog was searched


def fit_payload(result: FitResult, commands: bool = True) -> FitPayload:
    """`commands`: every setup shown with its launch command (JSON, YAML); False: the winner's alone, all a table
    prints (a launch command is written from the engine's flags, the most of a row's work)."""
    best = result.best
    return FitPayload(model=result.model_id, engine=result.engine, gpus=result.gpus, context=result.context,
                      concurrency=result.concurrency, gpus_per_node=result.gpus_per_node, max_gpus=result.max_gpus,
                      max_replicas=result.max_replicas, ranking=result.ranking, num_evaluated=result.num_evaluated,
                      fits=best is not None, best=None if best is None else setup_payload(best),
                      alternatives=tuple(setup_payload(c, commands) for c in result.candidates), notes=result.notes,
                      why=result.why, considered=result.considered, num_skipped=result.num_skipped,
                      num_setups=result.num_evaluated + result.num_skipped, catalog=result.catalog)


def setup_text(c: SetupPayload) -> str:
    """`2 × (tp 4 pp 1) on H100-SXM, 8 GPUs, $19.92/h`; with data parallel `1 × (dp 16 ep 16 tp 1 pp 1)`, with
    EP alone `(ep 8 tp 8 pp 1)`, with DCP `(tp 8 pp 1 dcp 8)`."""
    cost = "" if c.cost_per_hour is None else f", ${c.cost_per_hour:,.2f}/h"
    dp = f"dp {c.dp} ep {c.ep} " if c.dp > 1 else f"ep {c.ep} " if c.ep > 1 else ""
    dcp = f" dcp {c.dcp}" if c.dcp > 1 else ""
    return (f"{c.replicas} × ({dp}tp {c.tp} pp {c.pp}{dcp}) on {c.gpu}, KV {c.kv_dtype}: "
            f"{c.num_gpus:,} GPU{'s' if c.num_gpus > 1 else ''}{cost}")


def _row(rank: int, c: SetupPayload, priced: bool, why: bool, shown: tuple[bool, bool, bool]) -> tuple[str, ...]:
    dp, ep, dcp = shown
    cells = [str(rank), c.gpu, f"{c.num_gpus:,}", f"{c.replicas:,}", *((str(c.dp),) if dp else ()),
             *((str(c.ep),) if ep else ()), str(c.tp), str(c.pp), *((str(c.dcp),) if dcp else ()), c.kv_dtype,
             gib(c.kv_budget_bytes_per_gpu), f"{format_floor(c.requests_per_replica)}x", f"{c.requests:,}"]
    if priced:
        cells.append("-" if c.cost_per_hour is None else f"{c.cost_per_hour:,.2f}")
    cells.append("yes" if c.fits else "no")
    return (*cells, c.reason) if why else tuple(cells)


def fit_tables(payload: FitPayload) -> list[RenderableType]:
    from rich.text import Text

    best, rows = payload.best, payload.alternatives
    title = (f"{payload.model} ({payload.engine}): {payload.concurrency:,} request"
             f"{'s' if payload.concurrency > 1 else ''} × {payload.context:,} tokens -> "
             + (setup_text(best) if best else "nothing fits"))
    priced = any(c.price_per_gpu_hour is not None for c in rows)
    why = any(not c.fits for c in rows)
    shown = (any(c.dp > 1 for c in rows), any(c.ep > 1 for c in rows), any(c.dcp > 1 for c in rows))
    table = Table(title=title)
    for name in ("rank", "GPU", "GPUs", "replicas", *(("dp",) if shown[0] else ()), *(("ep",) if shown[1] else ()),
                 "tp", "pp", *(("dcp",) if shown[2] else ()), "KV dtype", "KV budget/GPU", "concurrency/replica",
                 "requests", *(("$/hour",) if priced else ()), "serves"):
        table.add_column(name, justify="left" if name in ("GPU", "KV dtype") else "right")
    if why:
        table.add_column("why not", wrap=True)
    for rank, c in enumerate(rows, 1):
        table.add_row(*_row(rank, c, priced, why, shown))
    return [table, Text(f"ranked by {payload.ranking}"), Text(searched(payload, len(rows)))]


def searched(payload: FitPayload, rows: int) -> str:
    """`12 of 3,720 setups shown (41 planned; the others could not rank among those shown) on H100-SXM, L40S`."""
    total = payload.num_evaluated + payload.num_skipped
    planned = f" ({payload.num_evaluated:,} planned; the others could not rank among those shown)" \
        if payload.num_skipped else ""
    gpus = f"every GPU type of the catalog ({len(payload.gpus)})" if payload.catalog else ", ".join(payload.gpus)
    return f"{rows} of {total:,} setups shown{planned} on {gpus}"
