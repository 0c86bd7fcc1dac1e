"""CapacityResult -> the typed `kvplan capacity --json` payload, and the --explain lines.

The payload keys of `kvplan capacity --json` are a contract (README, "JSON contract"); others may
be added (a field on ``CapacityPayload``, or on the type it holds). Bytes stay ints in payloads; GiB
appears only in table cells (``kvplan.render.capacity_tables``). The layer groups are read from the
layout the engine planned on (``CapacityResult.layout``), never recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kvplan.engines import get_engine
from kvplan.engines.base import BudgetTerm, GroupRow
from kvplan.formulas.layout import with_block_size
from kvplan.formulas.sizing import KvCacheResult
from kvplan.planning.capacity import CapacityResult
from kvplan.planning.extras import Extras
from kvplan.records import Record
from kvplan.render.extras import extras_lines
from kvplan.render.payload import INLINE, OMIT_NONE
from kvplan.render.size import GroupPayload, Parallel, group_payload

if TYPE_CHECKING:
    from kvplan.launch.write import Written

# The engine knobs that decided the budget, by their flat names (Settings.items()), with the release's defaults
# filled in. An open mapping: the knobs are the engines' (a new knob is a name here), and nothing but --json reads it.
SETTING_KEYS = ("entry_point", "max_num_batched_tokens", "max_num_seqs", "sampler", "enforce_eager", "moe_backend",
                "max_lora_rank", "gpu_memory_utilization", "mem_fraction_static", "chunked_prefill_size",
                "free_gpu_memory_fraction", "async_scheduling", "max_loras", "lora_target_modules",
                "max_cpu_loras", "speculative_model", "speculative_method", "num_speculative_tokens",
                "limit_mm_per_prompt", "cpu_offload_bytes", "kv_offloading_bytes", "hicache_ratio", "lmcache_cpu_bytes")
EngineSettings = dict[str, object]


class OverheadPayload(Record):
    """The --json overhead block: the budget terms between the GPU's memory and the KV cache."""

    source: str
    non_torch_bytes: int
    activation_bytes: int
    cuda_graph_bytes: int
    weights_extra_bytes: int
    draft_weights_bytes: int
    lora_bytes: int
    encoder_cache_bytes: int


class FloorPayload(Record):
    """The memory-bound lower bound on one decode step of the admitted batch (planning/roofline.py)."""

    requests: int
    weights_bytes: int
    kv_bytes: int
    bytes_per_step: int
    bandwidth_bytes_per_s: int
    seconds: float
    tokens_per_s: float
    note: str


class PerRequest(Record):
    """The --json per-request block: a request's steady-state KV bytes and its admission reserve."""

    steady_state_bytes_per_gpu: int
    admission_reserve_bytes_per_gpu: int


class GroupKind(Record):
    """A layer group the engine planned that the layout did not hand over (no size columns). A record: only an
    engine that refused before planning (no layout) makes one, so most runs never generate its methods."""

    kind: str


class CapacityGroup(Record):
    """size's layer group (most loaded GPU) on the engine's layout, then how the engine caches it (None: the
    engine planned no such group)."""

    size: GroupPayload | GroupKind = field(metadata=INLINE)
    engine_kind: str
    engine_groups: int | None
    block_size: int | None
    page_bytes_per_layer: int | None
    blocks_per_request: int | None
    tokens_reserved_per_request: int | None


class LayoutPayload(Record):
    """The layout the numbers are for: one replica of ``gpus`` GPUs (vLLM: dp × tp × pp; SGLang: tp × pp, its DP
    attention inside tp) holding ``pools`` KV pools of ``kv_tokens`` each (one per DP rank)."""

    tp: int
    pp: int
    dp: int
    ep: int
    dcp: int
    gpus: int
    pools: int
    nodes: int = 1
    gpus_per_node: int = 0  # GPUs of the replica on each node


class CapacityPayload(Record):
    """The `kvplan capacity --json` contract."""

    engine: str
    engine_version: str
    model: str
    gpu: str | None
    gpu_memory_bytes: int | None
    parallel: Parallel
    kv_dtype: str
    weights_bytes_per_gpu: int | None
    overhead_bytes_per_gpu: int | None
    overhead: OverheadPayload | None
    budget_terms: tuple[BudgetTerm, ...]
    budget_rule: tuple[str, ...]
    engine_settings: EngineSettings | None
    kv_budget_bytes_per_gpu: int
    kv_budget_bytes_per_stage: tuple[int, ...]
    block_size: int
    page_bytes: int
    num_blocks: int | None
    kv_tokens: int
    max_model_len: int
    max_concurrency: float | None
    max_concurrency_log: str | None
    requests_at_max_model_len: float
    layout: LayoutPayload
    kv_tokens_per_replica: int
    per_request: PerRequest
    layer_groups: tuple[CapacityGroup, ...]
    notes: tuple[str, ...]
    error: str | None
    refusal: str | None
    estimated_max_model_len: int | None
    log_lines: tuple[str, ...]
    decode_step_floor: FloorPayload | None
    extras: Extras = field(metadata=INLINE)  # speculative, lora, encoder_cache, host_tier (kvplan.render.extras)
    log_line: str | None = field(default=None, metadata=OMIT_NONE)  # the log lines joined, when the engine starts
    command: str | None = None  # the launch command of this answer (kvplan.launch.write; None: no flags known)
    flags: Mapping[str, Any] | None = None  # its flags and values, in order (a switch: true)
    command_notes: tuple[str, ...] = ()  # knobs the command could not carry (no flag in that release)
    command_release: str | None = None  # the kvplan engine release the command is for (vllm@0.33)
    verdict_margin_bytes: int | None = None  # how far the budget is from a refusal (< 0: short by that much)
    estimate_error_bytes: int = 0  # the estimated budget terms added up
    verdict_within_estimate: bool = False  # the estimated terms add up to more than the margin: they could turn it


def _engine_group(size: GroupPayload | GroupKind, row: GroupRow | None, kind: str) -> CapacityGroup:
    return CapacityGroup(size=size, engine_kind=kind, engine_groups=row.engine_groups if row else None,
                         block_size=row.block_size if row else None,
                         page_bytes_per_layer=row.page_bytes_per_layer if row else None,
                         blocks_per_request=row.blocks_per_request if row else None,
                         tokens_reserved_per_request=row.tokens_reserved_per_request if row else None)


def _layer_groups(result: CapacityResult) -> tuple[CapacityGroup, ...]:
    """size's layer groups (most loaded GPU) on the engine's layout, plus the engine's blocks per group."""
    plan, layout = result.plan, result.layout
    rows = {g.kind: g for g in plan.groups}
    if layout is None:  # the engine refused before planning
        return tuple(_engine_group(GroupKind(kind=kind), row, kind) for kind, row in rows.items())
    size = KvCacheResult(with_block_size(layout, plan.block_size), result.max_model_len, 1)
    out = []
    for g in (group_payload(g, size) for g in layout.groups):
        kind = "mamba" if g.kind == "linear" and "mamba" in rows else g.kind
        out.append(_engine_group(g, rows.get(kind) or rows.get(kind.split("+")[0]), kind))  # composite: first cache
    return tuple(out)


def _settings(result: CapacityResult) -> EngineSettings | None:
    if result.settings is None:
        return None
    knobs = dict(result.settings.items())
    return {**{k: knobs[k] for k in SETTING_KEYS}, "block_size": result.cache.block_size if result.cache else None}


def _overhead(result: CapacityResult) -> OverheadPayload | None:
    o = result.overhead
    if o is None:
        return None
    return OverheadPayload(source=o.source, non_torch_bytes=o.non_torch_bytes, activation_bytes=o.activation_bytes,
                           cuda_graph_bytes=o.cuda_graph_bytes, weights_extra_bytes=o.weights_extra_bytes,
                           draft_weights_bytes=o.draft_weights_bytes, lora_bytes=o.lora_bytes,
                           encoder_cache_bytes=o.encoder_cache_bytes)


def _floor(result: CapacityResult) -> FloorPayload | None:
    f = result.decode_floor
    if f is None:
        return None
    return FloorPayload(requests=f.requests, weights_bytes=f.weights_bytes, kv_bytes=f.kv_bytes,
                        bytes_per_step=f.bytes_per_step, bandwidth_bytes_per_s=f.bandwidth_bytes_per_s,
                        seconds=f.seconds, tokens_per_s=f.tokens_per_s,
                        note=f"a memory-bound lower bound on one decode step of {f.requests:,} max-length requests at "
                             f"the {f.gpu} data-sheet bandwidth, not a throughput promise")


def launch_of(result: CapacityResult, extra: Mapping[str, Any] | None = None) -> Written | None:
    """The answer's launch command, or None (an engine failed, or kvplan has no flags for its release)."""
    if result.error is not None or result.settings is None or get_engine(result.engine).spelling is None:
        return None
    from kvplan.errors import KvplanError
    from kvplan.launch.write import write_launch

    try:
        return write_launch(result, extra)
    except KvplanError:
        return None


def _layout(result: CapacityResult, written: Written | None) -> LayoutPayload:
    dp, ep = (result.cache.dp, result.cache.ep) if result.cache else (1, 1)
    gpus = result.plan.gpus or result.tp * result.pp
    nodes = written.layout["nodes"] if written else 1
    return LayoutPayload(tp=result.tp, pp=result.pp, dp=dp, ep=ep, dcp=result.dcp, pools=result.plan.pools,
                         gpus=gpus, nodes=nodes,
                         gpus_per_node=written.layout["gpus_per_node"] if written else -(-gpus // nodes))


def _kv_dtype(result: CapacityResult) -> str:
    """The plan's KV dtype; where the engine refused the question outright (no plan), the one asked."""
    if result.error is not None and result.plan.kv_dtype == "-" and result.cache is not None:
        return str(result.cache.kv_dtype)
    return result.plan.kv_dtype


def capacity_payload(result: CapacityResult, extra: Mapping[str, Any] | None = None) -> CapacityPayload:
    """The `kvplan capacity --json` contract (`extra`: the layout a launch command read gave beyond the request)."""
    plan, refusal, conc = result.plan, result.plan.refusal, result.plan.max_concurrency
    written = launch_of(result, extra)
    return CapacityPayload(
        engine=result.engine, engine_version=plan.version, model=result.model.model_id, gpu=result.gpu,
        gpu_memory_bytes=result.gpu_memory_bytes, parallel=Parallel(result.tp, result.pp, result.dcp),
        kv_dtype=_kv_dtype(result), weights_bytes_per_gpu=result.weights_bytes_per_gpu,
        overhead_bytes_per_gpu=result.overhead.total_bytes if result.overhead else None, overhead=_overhead(result),
        budget_terms=result.budget_terms, budget_rule=result.budget_rule, engine_settings=_settings(result),
        kv_budget_bytes_per_gpu=min(result.kv_budget_bytes_per_gpu),
        kv_budget_bytes_per_stage=result.kv_budget_bytes_per_gpu, block_size=plan.block_size,
        page_bytes=plan.page_bytes, num_blocks=plan.num_blocks, kv_tokens=plan.kv_tokens,
        max_model_len=result.max_model_len, max_concurrency=conc,
        max_concurrency_log=None if conc is None else f"{conc:.2f}x", requests_at_max_model_len=plan.requests_at_max_len,
        layout=_layout(result, written), kv_tokens_per_replica=plan.kv_tokens * plan.pools,
        per_request=PerRequest(steady_state_bytes_per_gpu=plan.steady_bytes_per_request,
                               admission_reserve_bytes_per_gpu=plan.reserve_bytes_per_request),
        layer_groups=_layer_groups(result), notes=(*plan.notes, *result.notes), error=result.error,
        refusal=refusal.message if refusal else None,
        estimated_max_model_len=refusal.estimated_max_model_len if refusal else None, log_lines=plan.log_lines,
        decode_step_floor=_floor(result), extras=result.extras,
        log_line=", ".join(plan.log_lines) if plan.log_lines and not refusal else None,
        command=written.command if written else None, flags=written.flags if written else None,
        command_notes=written.notes if written else (),
        command_release=written.engine if written else None, verdict_margin_bytes=result.verdict_margin_bytes,
        estimate_error_bytes=result.estimate_error_bytes, verdict_within_estimate=result.within_estimate)


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
