"""The rich tables of `kvplan capacity`, drawn from its typed payloads (kvplan.render.capacity): one column per
answer, the budget term by term, what shares the GPU, the layer groups, and each engine's verdict."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvplan.planning.verdict import verdict_text
from kvplan.render import gib, gib_number
from kvplan.render.capacity import CapacityPayload, FloorPayload
from kvplan.render.extras import extras_table
from kvplan.render.size import GroupPayload
from kvplan.render.tables import Table
from kvplan.units import format_floor

if TYPE_CHECKING:
    from rich.console import RenderableType


def _summary_rows(p: CapacityPayload, compact: bool) -> list[tuple[str, str]]:
    def b(v: int | None) -> str:
        return "-" if v is None else gib(v) if compact else f"{v:,} ({gib(v)})"
    conc = p.max_concurrency_log or f"({format_floor(p.requests_at_max_model_len, 0)} fit)"
    said = verdict_text(p.refusal is not None, p.verdict_margin_bytes, p.estimate_error_bytes)
    if compact and p.verdict_within_estimate:  # side by side: the numbers follow the table (_verdicts)
        said = f"{'refuses' if p.refusal else 'starts'}, within error"
    verdict = (said + (f" (max len {p.estimated_max_model_len:,})" if p.estimated_max_model_len else "")
               if p.refusal else "error" if p.error else said)
    rows = [("version", p.engine_version), ("verdict", verdict), ("GPU", f"{p.gpu or '-'}"),
            ("GPU memory", b(p.gpu_memory_bytes)), ("weights / GPU", b(p.weights_bytes_per_gpu)),
            ("overhead / GPU", b(p.overhead_bytes_per_gpu)), ("KV budget / GPU", b(p.kv_budget_bytes_per_gpu)),
            ("KV dtype, block", f"{p.kv_dtype}, {p.block_size}"), ("page (all layers)", f"{p.page_bytes:,}"),
            ("blocks", "-" if p.num_blocks is None else f"{p.num_blocks:,}"),
            ("KV tokens", f"{p.kv_tokens:,}"), (f"concurrency @ {p.max_model_len:,}", conc),
            ("request, steady state", b(p.per_request.steady_state_bytes_per_gpu)),
            ("request, admission reserve", b(p.per_request.admission_reserve_bytes_per_gpu)),
            ("decode step ≥ (memory bound)", _floor_cell(p.decode_step_floor))]
    return _errored(rows, p.kv_dtype) if p.error else rows


def _errored(rows: list[tuple[str, str]], kv_dtype: str) -> list[tuple[str, str]]:
    """An engine that refused the question itself (an unknown KV dtype): no plan, so no numbers ("0.00x" read as
    an answer); the error follows the table."""
    keep = {"version": None, "verdict": None, "GPU": None, "GPU memory": None, "KV dtype, block": f"{kv_dtype}, -"}
    return [(k, (keep[k] or v) if k in keep else "-") for k, v in rows]


def _floor_cell(floor: FloorPayload | None) -> str:
    if floor is None:
        return "-"
    return f"{floor.seconds * 1e3:,.2f} ms ({floor.requests:,} req.)"


def column_labels(payloads: Sequence[CapacityPayload]) -> list[str]:
    """One column per answer, named by what differs between them: the engine, its release where one engine
    appears in several, the KV dtype where several were asked."""
    releases = len({(p.engine, p.engine_version) for p in payloads}) > len({p.engine for p in payloads})
    dtypes = len({p.kv_dtype for p in payloads}) > 1
    return [" ".join([p.engine, *([_release(p)] if releases else []), *([p.kv_dtype] if dtypes else [])])
            for p in payloads]


def _release(p: CapacityPayload) -> str:
    """`vLLM 0.33` -> `0.33`; `TensorRT-LLM 1.x (PyTorch backend)` -> `1.x`."""
    return next(iter(re.findall(r"\d[\w.]*", p.engine_version)), p.engine_version)


def capacity_tables(payload: CapacityPayload | Sequence[CapacityPayload]) -> list[RenderableType]:
    payloads = [payload] if isinstance(payload, CapacityPayload) else list(payload)
    first = payloads[0]
    par = first.parallel
    title = f"{first.model}: tp {par.tp} pp {par.pp} dcp {par.dcp}, max_model_len {first.max_model_len:,}"
    table = Table(title=title, title_justify="left", stack="columns")  # too narrow: one block per engine
    table.add_column("")
    for label in column_labels(payloads):
        table.add_column(label, justify="right")
    rows = [_summary_rows(p, len(payloads) > 1) for p in payloads]
    for i, (label, _) in enumerate(rows[0]):
        table.add_row(label, *(r[i][1] for r in rows))
    out: list[RenderableType] = [table]
    if len(payloads) == 1 and first.budget_terms:
        from rich.text import Text

        out += [budget_table(first), Text("\n".join(first.budget_rule))]
    out += [t for t in (extras_table(p.extras, p.engine_version) for p in payloads) if t is not None]
    if len(payloads) == 1:
        out.append(_groups_table(first))
    return out + _verdicts(payloads)


def _groups_table(p: CapacityPayload) -> Table:
    groups = Table(title="layer groups (most loaded GPU)", title_justify="left")
    for name in ("kind", "layers (GPU)", "engine groups", "block", "page/layer", "blocks/request"):
        groups.add_column(name, justify="left" if name == "kind" else "right")
    for g in p.layer_groups:
        size = g.size if isinstance(g.size, GroupPayload) else None
        layers = "- (-)" if size is None else f"{size.num_layers} ({size.num_layers_per_gpu})"
        groups.add_row(g.engine_kind, layers, *("-" if v is None else f"{v:,}" for v in
                                                (g.engine_groups, g.block_size, g.page_bytes_per_layer,
                                                 g.blocks_per_request)))
    return groups


def _verdicts(payloads: Sequence[CapacityPayload]) -> list[RenderableType]:
    """What each engine would print, on one unwrapped line each: its cache lines verbatim, or its refusal."""
    from rich.text import Text

    out: list[RenderableType] = []
    for label, p in zip(column_labels(payloads), payloads, strict=True):
        who = label if _release(p) in label.split() else f"{label} ({p.engine_version})"
        if len(payloads) > 1 and p.verdict_within_estimate:
            out.append(Text(f"{who} {verdict_text(p.refusal is not None, p.verdict_margin_bytes, p.estimate_error_bytes)}"
                            " GiB estimated"))
        if p.refusal:
            out.append(Text(f"{who} refuses to start: {p.refusal}"))
        elif p.log_lines:
            out += [Text(f"{who} logs: {line}") for line in p.log_lines]
    return out


def budget_table(p: CapacityPayload) -> Table:
    """What the engine subtracts before the KV cache, term by term."""
    table = Table(title=f"KV budget per GPU ({p.engine_version}; sources: --explain)", title_justify="left")
    for name in ("term", "bytes", "GiB", ""):
        table.add_column(name, justify="right" if name in ("bytes", "GiB") else "left")
    for t in p.budget_terms:
        table.add_row(t.name, f"{t.bytes:,}", gib_number(t.bytes), "exact" if t.exact else "estimate")
    kv = p.kv_budget_bytes_per_gpu
    table.add_row("= KV budget", f"{kv:,}", gib_number(kv), "")
    return table
