"""CapacityResult -> the JSON payload and the rich tables drawn from it.

The payload keys of `kvplan capacity --json` are a contract (README, "JSON contract"); others may
be added. Bytes stay ints in payloads; GiB appears only in table cells. The layer groups are read
from the layout the engine planned on (``CapacityResult.layout``), never recomputed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.formulas.layout import with_block_size
from kvplan.formulas.sizing import KvCacheResult
from kvplan.planning.capacity import CapacityResult
from kvplan.render import gib
from kvplan.render.size import group_payload
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from rich.console import RenderableType


def _layer_groups(result: CapacityResult) -> list[dict[str, Any]]:
    """size's layer groups (most loaded GPU) on the engine's layout, plus the engine's blocks per group."""
    plan, layout = result.plan, result.layout
    rows = {g.kind: g for g in plan.groups}
    if layout is None:  # the engine refused before planning
        base: list[dict[str, Any]] = [{"kind": kind} for kind in rows]
    else:
        size = KvCacheResult(with_block_size(layout, plan.block_size), result.max_model_len, 1)
        base = [group_payload(g, size) for g in layout.groups]
    out = []
    for g in base:
        kind = "mamba" if g["kind"] == "linear" and "mamba" in rows else g["kind"]
        row = rows.get(kind)
        out.append({**g, "engine_kind": kind, "engine_groups": row.engine_groups if row else None,
                    "block_size": row.block_size if row else None,
                    "page_bytes_per_layer": row.page_bytes_per_layer if row else None,
                    "blocks_per_request": row.blocks_per_request if row else None,
                    "tokens_reserved_per_request": row.tokens_reserved_per_request if row else None})
    return out


def capacity_payload(result: CapacityResult) -> dict[str, Any]:
    """The `kvplan capacity --json` contract."""
    plan = result.plan
    conc = plan.max_concurrency
    payload: dict[str, Any] = {
        "engine": result.engine,
        "engine_version": plan.version,
        "model": result.model.model_id,
        "gpu": result.gpu,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "parallel": {"tp": result.tp, "pp": result.pp, "dcp": result.dcp},
        "kv_dtype": plan.kv_dtype,
        "weights_bytes_per_gpu": result.weights_bytes_per_gpu,
        "overhead_bytes_per_gpu": result.overhead.total_bytes if result.overhead else None,
        "overhead": None if result.overhead is None else {
            "source": result.overhead.source, "non_torch_bytes": result.overhead.non_torch_bytes,
            "activation_bytes": result.overhead.activation_bytes,
            "cuda_graph_bytes": result.overhead.cuda_graph_bytes},
        "kv_budget_bytes_per_gpu": min(result.kv_budget_bytes_per_gpu),
        "kv_budget_bytes_per_stage": list(result.kv_budget_bytes_per_gpu),
        "block_size": plan.block_size,
        "page_bytes": plan.page_bytes,
        "num_blocks": plan.num_blocks,
        "kv_tokens": plan.kv_tokens,
        "max_model_len": result.max_model_len,
        "max_concurrency": conc,
        "max_concurrency_log": None if conc is None else f"{conc:.2f}x",
        "requests_at_max_model_len": plan.requests_at_max_len,
        "per_request": {"steady_state_bytes_per_gpu": plan.steady_bytes_per_request,
                        "admission_reserve_bytes_per_gpu": plan.reserve_bytes_per_request},
        "layer_groups": _layer_groups(result),
        "notes": list(plan.notes) + list(result.notes),
        "error": result.error,
    }
    if result.engine == "vllm" and conc is not None and not result.error:
        payload["log_line"] = (f"GPU KV cache size: {plan.kv_tokens:,} tokens, Maximum concurrency for "
                               f"{result.max_model_len:,} tokens per request: {conc:.2f}x")
    return payload


def explain_lines(result: CapacityResult) -> list[str]:
    """--explain: the budget, the block arithmetic, and why the two per-request numbers differ."""
    plan = result.plan
    lines = [f"[{result.engine}] {plan.version}", *result.budget_lines, *plan.explain]
    steady, reserve = plan.steady_bytes_per_request, plan.reserve_bytes_per_request
    lines.append(f"steady state: a {result.max_model_len:,}-token request holds {steady:,} B per GPU "
                 "(window layers keep only their window, Mamba layers one state)")
    lines.append(f"admission reserve: {reserve:,} B per GPU is what the concurrency divides by")
    if reserve != steady:
        lines.append("they differ because the engine reserves whole blocks for max_model_len on full layers, "
                     "W − 1 + in-flight tokens (+1 block) on sliding layers, blocks of every padded layer of a "
                     "group, and checkpoint pages for Mamba states; a real request holds less")
    return lines


def _summary_rows(p: dict[str, Any], compact: bool) -> list[tuple[str, str]]:
    def b(v: int | None) -> str:
        return "-" if v is None else gib(v) if compact else f"{v:,} ({gib(v)})"
    conc = p["max_concurrency_log"] or f"({p['requests_at_max_model_len']:,.0f} fit)"
    return [("version", p["engine_version"]), ("GPU", f"{p['gpu'] or '-'}"),
            ("GPU memory", b(p["gpu_memory_bytes"])), ("weights / GPU", b(p["weights_bytes_per_gpu"])),
            ("overhead / GPU", b(p["overhead_bytes_per_gpu"])), ("KV budget / GPU", b(p["kv_budget_bytes_per_gpu"])),
            ("KV dtype, block", f"{p['kv_dtype']}, {p['block_size']}"), ("page (all layers)", f"{p['page_bytes']:,}"),
            ("blocks", "-" if p["num_blocks"] is None else f"{p['num_blocks']:,}"),
            ("KV tokens", f"{p['kv_tokens']:,}"), (f"concurrency @ {p['max_model_len']:,}", conc),
            ("request, steady state", b(p["per_request"]["steady_state_bytes_per_gpu"])),
            ("request, admission reserve", b(p["per_request"]["admission_reserve_bytes_per_gpu"]))]


def capacity_tables(payload: dict[str, Any] | list[dict[str, Any]]) -> list[RenderableType]:
    payloads = payload if isinstance(payload, list) else [payload]
    par = payloads[0]["parallel"]
    table = Table(title=f"{payloads[0]['model']}: tp {par['tp']} pp {par['pp']} dcp {par['dcp']}, "
                        f"max_model_len {payloads[0]['max_model_len']:,}", title_justify="left",
                  stack="columns")  # too narrow: one block per engine
    table.add_column("")
    for p in payloads:
        table.add_column(p["engine"], justify="right")
    rows = [_summary_rows(p, len(payloads) > 1) for p in payloads]
    for i, (label, _) in enumerate(rows[0]):
        table.add_row(label, *(r[i][1] for r in rows))
    out: list[RenderableType] = [table]
    if len(payloads) == 1:
        groups = Table(title="layer groups (most loaded GPU)", title_justify="left")
        for name in ("kind", "layers (GPU)", "engine groups", "block", "page/layer", "blocks/request"):
            groups.add_column(name, justify="left" if name == "kind" else "right")
        for g in payloads[0]["layer_groups"]:
            groups.add_row(g["engine_kind"], f"{g.get('num_layers', '-')} ({g.get('num_layers_per_gpu', '-')})",
                           *(f"{g[k]:,}" if g[k] is not None else "-" for k in
                             ("engine_groups", "block_size", "page_bytes_per_layer", "blocks_per_request")))
        out.append(groups)
    return out
