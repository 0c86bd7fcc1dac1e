"""Section 4: each engine's capacity side by side (blocks, KV tokens, concurrency, admission
reserve vs steady state), the layer groups as each engine caches them, and the exact KV lines each
engine will print at start-up."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kvplan.render.capacity import CapacityGroup, CapacityPayload
from kvplan.render.html.markup import Cell, Html, join, num, pre, section, size, table, tag
from kvplan.render.report import ReportPayload
from kvplan.render.size import GroupPayload

Row = tuple[str, Callable[[CapacityPayload], Cell]]


def _budget(p: CapacityPayload) -> Cell:
    stages = p.kv_budget_bytes_per_stage
    cell = size(p.kv_budget_bytes_per_gpu)
    return cell if len(stages) < 2 else Html(f"{cell}<span class=\"u\">stages: "
                                             f"{', '.join(num(b) for b in stages)}</span>")


def _status(p: CapacityPayload) -> Cell:
    """starts, refuses (a payload with the engine's refusal and estimated length), or kvplan's error."""
    if p.error:
        return tag("span", f"error: {p.error}", "bad")
    if p.refusal:
        longest = f" (longest that fits: {num(p.estimated_max_model_len)})" if p.estimated_max_model_len else ""
        return tag("span", f"refuses: {p.refusal}{longest}", "bad")
    return "starts"


def _rows(caps: Sequence[CapacityPayload]) -> list[Row]:
    """The side-by-side rows (GPU, weights and overhead are section 3's; the KV dtype is in the header)."""
    length = caps[0].max_model_len
    status: list[Row] = [("status", _status)]
    return [*(status if any(p.error or p.refusal for p in caps) else []), ("KV budget / GPU", _budget),
            ("block (tokens)", lambda p: "0 (contiguous)" if p.block_size == 0 else num(p.block_size)),
            ("page, all layers (B)", lambda p: num(p.page_bytes)), ("blocks", lambda p: num(p.num_blocks)),
            ("KV tokens", lambda p: num(p.kv_tokens)),
            (f"max concurrency at {length:,} (logged)", lambda p: p.max_concurrency_log or "not logged"),
            (f"{length:,}-token requests that fit", lambda p: num(p.requests_at_max_model_len)),
            ("per request: admission reserve", lambda p: size(p.per_request.admission_reserve_bytes_per_gpu)),
            ("per request: steady state", lambda p: size(p.per_request.steady_state_bytes_per_gpu)),
            ("decode step ≥ (memory bound)", _floor), ("  bytes read per step", _floor_bytes),
            ("verdict margin (B)", _margin), ("estimated terms (B)", lambda p: num(p.estimate_error_bytes))]


def _margin(p: CapacityPayload) -> Cell:
    """How far the budget is from a refusal, flagged where the estimated terms could turn the verdict."""
    if p.verdict_margin_bytes is None:
        return "-"
    cell = num(p.verdict_margin_bytes)
    return tag("span", f"{cell} (within the estimate's error)", "bad") if p.verdict_within_estimate else cell


def _floor(p: CapacityPayload) -> Cell:
    """The memory-bound lower bound on one decode step of the admitted batch (not a throughput promise)."""
    f = p.decode_step_floor
    return "-" if f is None else f"{f.seconds * 1e3:,.3f} ms ({num(f.requests)} requests)"


def _floor_bytes(p: CapacityPayload) -> Cell:
    f = p.decode_step_floor
    if f is None:
        return "-"
    return Html(f"{num(f.bytes_per_step)} = {num(f.weights_bytes)} + {num(f.kv_bytes)}<span class=\"u\">"
                f"at {num(f.bandwidth_bytes_per_s)} B/s peak</span>")


def _side_by_side(caps: Sequence[CapacityPayload]) -> Html:
    rows = [[label, *(cell(p) for p in caps)] for label, cell in _rows(caps)]
    return table(("", *(f"{p.engine_version} · {p.kv_dtype}" for p in caps)), rows, numeric=range(1, 1 + len(caps)))


GROUP_HEADERS = ("engine", "KV", "kind", "layers (GPU)", "KV heads (GPU)", "head dim K / V", "window",
                 "B / token / layer", "B / token", "B / token / GPU", "state / seq (GPU)", "engine groups", "block",
                 "page / layer (B)", "blocks / request", "tokens reserved / request")


def _size_cells(s: GroupPayload | None) -> list[Cell]:
    """The size columns of a layer group ("-" where the engine planned a group the layout did not hand over)."""
    if s is None:
        return ["-"] * 8
    h = s.heads
    dims = f"{h.head_dim} / {h.v_head_dim}" + (f" ({h.kv_lora_rank} + {h.qk_rope_head_dim})" if h.kv_lora_rank else "")
    return [f"{num(s.num_layers)} ({num(s.num_layers_per_gpu)})", f"{num(h.num_kv_heads)} ({num(h.num_kv_heads_per_gpu)})",
            dims, num(s.window), num(s.bytes_per_token_per_layer), num(s.bytes_per_token), num(s.bytes_per_token_per_gpu),
            f"{num(s.state_bytes_per_sequence)} ({num(s.state_bytes_per_sequence_per_gpu)})"]


def _group_row(p: CapacityPayload, g: CapacityGroup) -> list[Cell]:
    size_cells = _size_cells(g.size if isinstance(g.size, GroupPayload) else None)
    return [p.engine_version, p.kv_dtype, g.engine_kind, *size_cells, num(g.engine_groups), num(g.block_size),
            num(g.page_bytes_per_layer), num(g.blocks_per_request), num(g.tokens_reserved_per_request)]


def _logs(payload: ReportPayload) -> Html:
    parts, silent = [], []
    for p, log in zip(payload.capacity, payload.engine_logs, strict=True):
        if log.lines:
            parts += [tag("div", f"{p.engine_version} · KV {p.kv_dtype}", "logtitle"), pre(log.lines)]
        elif not p.error:
            silent.append(p.engine_version)
    if silent:
        parts.append(tag("p", f"{', '.join(dict.fromkeys(silent))}: prints no KV capacity line."))
    return join(parts)


def _arithmetic(payload: ReportPayload) -> Html:
    blocks = [pre(e.lines, "plain") for e in payload.explain.capacity]
    return tag("details", join([tag("summary", "the arithmetic of each engine, as kvplan capacity --explain "
                                               "prints it"), *blocks]))


def capacity_section(payload: ReportPayload) -> Html:
    caps = payload.capacity
    groups = [_group_row(p, g) for p in caps for g in p.layer_groups if not p.error]
    body = [_side_by_side(caps), tag("h3", "Layer groups as each engine caches them (most loaded GPU)"),
            table(GROUP_HEADERS, groups, numeric=range(3, len(GROUP_HEADERS))),
            tag("h3", "What each engine will print at start-up"), _logs(payload), _arithmetic(payload)]
    return section("capacity", 4, "Capacity per engine", "Blocks, tokens and concurrency each engine reaches on "
                   "the KV budget of section 3. The admission reserve is what an engine sets aside to admit one "
                   "max_model_len request (what its concurrency divides by); the steady state is what such a "
                   "request holds once running.", body)
