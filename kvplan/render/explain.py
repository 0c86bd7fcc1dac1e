"""`--explain`: every number of a size result next to the formula that produced it.

The per-token and per-state formulas come from ``kvplan.formulas.per_token`` (``layer_cost``,
``state_cost``), which computes each cache's bytes and its formula in one code path (the dtype rules
included: sparse MLA at fp8 is the fp8_ds_mla latent), so an explanation can never drift from the
answer it explains. The other lines restate the sizing with the result's own inputs and print the
values the result holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.formulas.layout import Group
from kvplan.formulas.per_token import PartCost, StateDtypes, layer_cost, state_cost
from kvplan.formulas.sizing import KvCacheResult
from kvplan.specs import AttnSpec, LinearState, MLAAttn, parts


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupExplain:
    """A layer group's per-token formula with its values, and what TP, state and windows add ("" where nothing)."""

    formula: str
    tp: str
    state: str
    window: str


def _tp_text(group: Group, result: KvCacheResult) -> str:
    layout, spec = result.layout, group.spec
    if isinstance(spec, MLAAttn) and layout.tp > 1:
        return f"TP {layout.tp}: the MLA latent is replicated on every rank"
    if isinstance(spec, AttnSpec) and isinstance(group.spec_per_gpu, AttnSpec) and layout.tp > 1:
        heads = group.spec_per_gpu.num_kv_heads
        return (f"TP {layout.tp}: KV heads per GPU = max(1, {spec.num_kv_heads} // {layout.tp}) = {heads}"
                f" -> {group.bytes_per_token_per_layer_per_gpu:,} B per layer per token per GPU")
    return ""


def _state_text(group: Group, result: KvCacheResult) -> str:
    layout = result.layout
    dtypes = StateDtypes(layout.state_dtype, layout.ssm_state_dtype)
    costs = [(s.mixer, state_cost(s, dtypes)) for s in parts(group.spec) if isinstance(s, LinearState)]
    return "; ".join(f"{mixer} state per sequence: {c.formula} = {c.bytes:,} B per layer" for mixer, c in costs)


def _window_text(group: Group) -> str:
    return f"holds min(seq_len, {group.token_limit:,}) tokens of a sequence" if group.token_limit else ""


def _explained(group: Group, result: KvCacheResult) -> tuple[PartCost, GroupExplain]:
    cost = layer_cost(group.spec, result.layout.kv_dtype)
    return cost, GroupExplain(formula=cost.formula, tp=_tp_text(group, result), state=_state_text(group, result),
                              window=_window_text(group))


def group_explain(group: Group, result: KvCacheResult) -> GroupExplain:
    """A layer group's per-token formula with its values, and what TP, state and windows add."""
    return _explained(group, result)[1]


def _group_lines(group: Group, cost: PartCost, texts: GroupExplain) -> list[str]:
    """The formula and the bytes it gives (the layout's: the same per_token code computed both)."""
    lines = [f"[{group.spec.kind}] {group.num_layers} layers; per layer per token: {cost.formula} = {cost.bytes:,} B"]
    return lines + [f"  {text}" for text in (texts.tp, texts.state, texts.window) if text]


def explain(result: KvCacheResult) -> list[str]:
    return explained(result)[1]


def explained(result: KvCacheResult) -> tuple[tuple[GroupExplain, ...], list[str]]:
    """(each layer group's texts, the --explain lines), the groups' formulas computed once for both."""
    layout = result.layout
    groups = [(g, *_explained(g, result)) for g in layout.groups]
    lines = [f"KV dtype {layout.kv_dtype.name} (model dtype {layout.model.dtype}); "
             f"{layout.attention}, {layout.model.num_layers} layers"]
    for group, cost, texts in groups:
        lines += _group_lines(group, cost, texts)
    return tuple(texts for _, _, texts in groups), lines + _size_lines(result)


def _size_lines(result: KvCacheResult) -> list[str]:
    """Per token, per sequence, paged and for the batch, with the values the result holds."""
    layout = result.layout
    lines = [f"bytes per token = Σ groups layers × per-layer bytes = {result.bytes_per_token:,} B"]
    if layout.pp > 1:
        lines.append(f"PP {layout.pp}: layers per stage {[len(r) for r in layout.stage_ranges]} "
                     f"(vLLM get_pp_indices); most loaded stage: {result.heaviest_stage}")
    if layout.dcp > 1:
        lines.append(f"DCP {layout.dcp}: each GPU holds cdiv({result.max_model_len:,}, {layout.dcp}) = "
                     f"{result.tokens_per_gpu:,} tokens of a sequence")
    lines.append(f"bytes per token per GPU = {result.bytes_per_token_per_gpu:,} B")
    lines.append(f"bytes per sequence = full layers × {result.max_model_len:,} tokens + window layers × min(tokens, W)"
                 f" + fixed state = {result.bytes_per_sequence:,} B ({result.bytes_per_sequence_per_gpu:,} B per GPU)")
    if layout.block_size:
        lines.append(f"paged: each layer group rounds its tokens up to blocks of {layout.block_size}: "
                     f"cdiv(tokens, {layout.block_size}) × {layout.block_size} -> "
                     f"{result.bytes_per_sequence_paged:,} B ({result.bytes_per_sequence_paged_per_gpu:,} B per GPU)")
    lines.append(f"total = batch {result.batch} × bytes per sequence = {result.total_bytes:,} B "
                 f"({result.total_bytes_per_gpu:,} B per GPU)")
    lines.append(f"all GPUs = batch × (tp {layout.tp} / dcp {layout.dcp}) × Σ stages per-GPU bytes "
                 f"= {result.total_bytes_all_gpus:,} B (replicas counted)")
    return lines + list(result.notes)
