"""CapacityResult -> the JSON payload and the rich tables drawn from it.

The payload keys of `kvplan capacity --json` are a contract (README, "JSON contract"); others may
be added. Bytes stay ints in payloads; GiB appears only in table cells. The layer groups are read
from the layout the engine planned on (``CapacityResult.layout``), never recomputed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kvplan.formulas.layout import with_block_size
from kvplan.formulas.sizing import KvCacheResult
from kvplan.planning.capacity import CapacityResult
from kvplan.render import gib, gib_number
from kvplan.render.extras import extras_lines, extras_payload, extras_table
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


def _settings_payload(result: CapacityResult) -> dict[str, Any] | None:
    """The engine knobs that decided the budget, with the release's defaults filled in."""
    if result.settings is None:
        return None
    keys = ("entry_point", "max_num_batched_tokens", "max_num_seqs", "sampler", "enforce_eager", "moe_backend",
            "max_lora_rank", "gpu_memory_utilization", "mem_fraction_static", "chunked_prefill_size",
            "free_gpu_memory_fraction", "async_scheduling", "max_loras", "lora_target_modules",
            "max_cpu_loras", "speculative_model", "speculative_method", "num_speculative_tokens",
            "limit_mm_per_prompt", "cpu_offload_bytes", "kv_offloading_bytes", "hicache_ratio", "lmcache_cpu_bytes")
    knobs = dict(result.settings.items())
    out = {k: list(v) if isinstance(v := knobs[k], tuple) else v for k in keys}
    return {**out, "block_size": result.cache.block_size if result.cache else None}


def _budget_payload(result: CapacityResult) -> dict[str, Any]:
    """Weights, overhead and the budget's terms (what the engine subtracts before the KV cache)."""
    o = result.overhead
    return {
        "weights_bytes_per_gpu": result.weights_bytes_per_gpu,
        "overhead_bytes_per_gpu": o.total_bytes if o else None,
        "overhead": None if o is None else {
            "source": o.source, "non_torch_bytes": o.non_torch_bytes, "activation_bytes": o.activation_bytes,
            "cuda_graph_bytes": o.cuda_graph_bytes, "weights_extra_bytes": o.weights_extra_bytes,
            "draft_weights_bytes": o.draft_weights_bytes, "lora_bytes": o.lora_bytes,
            "encoder_cache_bytes": o.encoder_cache_bytes},
        "budget_terms": [{"name": t.name, "bytes": t.bytes, "exact": t.exact, "source": t.source, "kind": t.kind}
                         for t in result.budget_terms],
        "budget_rule": list(result.budget_rule),
        "engine_settings": _settings_payload(result),
        "kv_budget_bytes_per_gpu": min(result.kv_budget_bytes_per_gpu),
        "kv_budget_bytes_per_stage": list(result.kv_budget_bytes_per_gpu),
    }


def capacity_payload(result: CapacityResult) -> dict[str, Any]:
    """The `kvplan capacity --json` contract."""
    plan = result.plan
    conc = plan.max_concurrency
    refusal = plan.refusal
    payload: dict[str, Any] = {
        "engine": result.engine,
        "engine_version": plan.version,
        "model": result.model.model_id,
        "gpu": result.gpu,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "parallel": {"tp": result.tp, "pp": result.pp, "dcp": result.dcp},
        "kv_dtype": plan.kv_dtype,
        **_budget_payload(result),
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
        "refusal": refusal.message if refusal else None,
        "estimated_max_model_len": refusal.estimated_max_model_len if refusal else None,
        "log_lines": list(plan.log_lines),
        "decode_step_floor": _floor_payload(result),
        **extras_payload(result.extras),
    }
    if plan.log_lines and not refusal:
        payload["log_line"] = ", ".join(plan.log_lines)
    return payload


def _floor_payload(result: CapacityResult) -> dict[str, Any] | None:
    """The memory-bound lower bound on one decode step of the admitted batch (planning/roofline.py)."""
    f = result.decode_floor
    if f is None:
        return None
    return {"requests": f.requests, "weights_bytes": f.weights_bytes, "kv_bytes": f.kv_bytes,
            "bytes_per_step": f.bytes_per_step, "bandwidth_bytes_per_s": f.bandwidth_bytes_per_s,
            "seconds": f.seconds, "tokens_per_s": f.tokens_per_s,
            "note": f"a memory-bound lower bound on one decode step of {f.requests:,} max-length requests at the "
                    f"{f.gpu} data-sheet bandwidth, not a throughput promise"}


def explain_lines(result: CapacityResult) -> list[str]:
    """--explain: the budget, the block arithmetic, and why the two per-request numbers differ."""
    plan = result.plan
    lines = [f"[{result.engine}] {plan.version}", *result.budget_lines, *plan.explain]
    if plan.refusal:
        lines.append(f"refusal: {plan.refusal.message}")
    steady, reserve = plan.steady_bytes_per_request, plan.reserve_bytes_per_request
    lines.append(f"steady state: a {result.max_model_len:,}-token request holds {steady:,} B per GPU "
                 "(window layers keep only their window, Mamba layers one state)")
    lines.append(f"admission reserve: {reserve:,} B per GPU is what the concurrency divides by")
    if reserve != steady:
        lines.append("they differ because the engine reserves whole blocks for max_model_len on full layers, "
                     "W − 1 + in-flight tokens (+1 block) on sliding layers, blocks of every padded layer of a "
                     "group, and checkpoint pages for Mamba states; a real request holds less")
    return lines + extras_lines(result.extras) + _floor_lines(result)


def _floor_lines(result: CapacityResult) -> list[str]:
    f = result.decode_floor
    if f is None:
        return []
    return [f"decode step >= (weights {f.weights_bytes:,} + {f.requests:,} requests × "
            f"{f.kv_bytes // f.requests:,} B KV) / {f.gpu} peak {f.bandwidth_bytes_per_s / 1e9:,.0f} GB/s = "
            f"{f.seconds * 1e3:,.3f} ms (≤ {f.tokens_per_s:,.0f} decode tokens/s): a memory-bound lower bound, "
            "not a throughput promise"]


def _summary_rows(p: dict[str, Any], compact: bool) -> list[tuple[str, str]]:
    def b(v: int | None) -> str:
        return "-" if v is None else gib(v) if compact else f"{v:,} ({gib(v)})"
    conc = p["max_concurrency_log"] or f"({p['requests_at_max_model_len']:,.0f} fit)"
    verdict = ("refuses" + (f" (max len {p['estimated_max_model_len']:,})" if p["estimated_max_model_len"] else "")
               if p["refusal"] else "error" if p["error"] else "starts")
    return [("version", p["engine_version"]), ("verdict", verdict), ("GPU", f"{p['gpu'] or '-'}"),
            ("GPU memory", b(p["gpu_memory_bytes"])), ("weights / GPU", b(p["weights_bytes_per_gpu"])),
            ("overhead / GPU", b(p["overhead_bytes_per_gpu"])), ("KV budget / GPU", b(p["kv_budget_bytes_per_gpu"])),
            ("KV dtype, block", f"{p['kv_dtype']}, {p['block_size']}"), ("page (all layers)", f"{p['page_bytes']:,}"),
            ("blocks", "-" if p["num_blocks"] is None else f"{p['num_blocks']:,}"),
            ("KV tokens", f"{p['kv_tokens']:,}"), (f"concurrency @ {p['max_model_len']:,}", conc),
            ("request, steady state", b(p["per_request"]["steady_state_bytes_per_gpu"])),
            ("request, admission reserve", b(p["per_request"]["admission_reserve_bytes_per_gpu"])),
            ("decode step ≥ (memory bound)", _floor_cell(p["decode_step_floor"]))]


def _floor_cell(floor: dict[str, Any] | None) -> str:
    if floor is None:
        return "-"
    return f"{floor['seconds'] * 1e3:,.2f} ms ({floor['requests']:,} req.)"


def column_labels(payloads: list[dict[str, Any]]) -> list[str]:
    """One column per answer, named by what differs between them: the engine, its release where one engine
    appears in several, the KV dtype where several were asked."""
    releases = len({(p["engine"], p["engine_version"]) for p in payloads}) > len({p["engine"] for p in payloads})
    dtypes = len({p["kv_dtype"] for p in payloads}) > 1
    return [" ".join([p["engine"], *([_release(p)] if releases else []), *([p["kv_dtype"]] if dtypes else [])])
            for p in payloads]


def _release(p: dict[str, Any]) -> str:
    """`vLLM 0.33` -> `0.33`; `TensorRT-LLM 1.x (PyTorch backend)` -> `1.x`."""
    version = str(p["engine_version"])
    return next(iter(re.findall(r"\d[\w.]*", version)), version)


def capacity_tables(payload: dict[str, Any] | list[dict[str, Any]]) -> list[RenderableType]:
    payloads = payload if isinstance(payload, list) else [payload]
    par = payloads[0]["parallel"]
    title = (f"{payloads[0]['model']}: tp {par['tp']} pp {par['pp']} dcp {par['dcp']}, "
             f"max_model_len {payloads[0]['max_model_len']:,}")
    table = Table(title=title, title_justify="left", stack="columns")  # too narrow: one block per engine
    table.add_column("")
    for label in column_labels(payloads):
        table.add_column(label, justify="right")
    rows = [_summary_rows(p, len(payloads) > 1) for p in payloads]
    for i, (label, _) in enumerate(rows[0]):
        table.add_row(label, *(r[i][1] for r in rows))
    out: list[RenderableType] = [table]
    if len(payloads) == 1 and payloads[0]["budget_terms"]:
        from rich.text import Text

        out += [budget_table(payloads[0]), Text("\n".join(payloads[0]["budget_rule"]))]
    out += [t for t in (extras_table(p) for p in payloads) if t is not None]
    if len(payloads) == 1:
        groups = Table(title="layer groups (most loaded GPU)", title_justify="left")
        for name in ("kind", "layers (GPU)", "engine groups", "block", "page/layer", "blocks/request"):
            groups.add_column(name, justify="left" if name == "kind" else "right")
        for g in payloads[0]["layer_groups"]:
            groups.add_row(g["engine_kind"], f"{g.get('num_layers', '-')} ({g.get('num_layers_per_gpu', '-')})",
                           *(f"{g[k]:,}" if g[k] is not None else "-" for k in
                             ("engine_groups", "block_size", "page_bytes_per_layer", "blocks_per_request")))
        out.append(groups)
    return out + _verdicts(payloads)


def _verdicts(payloads: list[dict[str, Any]]) -> list[RenderableType]:
    """What each engine would print, on one unwrapped line each: its cache lines verbatim, or its refusal."""
    from rich.text import Text

    out: list[RenderableType] = []
    for label, p in zip(column_labels(payloads), payloads, strict=True):
        who = label if _release(p) in label.split() else f"{label} ({p['engine_version']})"
        if p["refusal"]:
            out.append(Text(f"{who} refuses to start: {p['refusal']}"))
        elif p["log_lines"]:
            out += [Text(f"{who} logs: {line}") for line in p["log_lines"]]
    return out


def budget_table(p: dict[str, Any]) -> Table:
    """What the engine subtracts before the KV cache, term by term."""
    table = Table(title=f"KV budget per GPU ({p['engine_version']}; sources: --explain)", title_justify="left")
    for name in ("term", "bytes", "GiB", ""):
        table.add_column(name, justify="right" if name in ("bytes", "GiB") else "left")
    for t in p["budget_terms"]:
        table.add_row(t["name"], f"{t['bytes']:,}", gib_number(t["bytes"]), "exact" if t["exact"] else "estimate")
    kv = p["kv_budget_bytes_per_gpu"]
    table.add_row("= KV budget", f"{kv:,}", gib_number(kv), "")
    return table
