"""`--explain`: every number of a size result next to the formula that produced it.

The text restates the formulas with the result's own inputs and prints the value the formulas
returned, so an explanation can never drift from the answer it explains.
"""

from __future__ import annotations

from kvplan.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.layout import Group
from kvplan.formulas.per_token import StateDtypes
from kvplan.formulas.sizing import KvCacheResult
from kvplan.specs import AttnSpec, Composite, CrossAttn, IndexerCache, LayerSpec, LinearState, MLAAttn, NoKV, parts


def _elem(dtype: KvDtype) -> str:
    return f"{dtype.element_bits / 8:g} B"


def per_layer_formula(spec: LayerSpec, dtype: KvDtype) -> str:
    """The per-token, per-layer formula of a spec, in words and numbers."""
    if isinstance(spec, Composite):
        return " + ".join(f"[{p.kind}] {per_layer_formula(p, dtype)}" for p in spec.parts)
    if isinstance(spec, IndexerCache):
        return f"{spec.head_dim} × 1 B fp8 + {spec.head_dim}/128 × 4 B scales (indexer key, any KV dtype)"
    if isinstance(spec, CrossAttn):
        return f"0 per decoder token (K/V of {spec.encoder_tokens:,} encoder tokens per sequence)"
    if isinstance(spec, MLAAttn):
        if spec.sparse and dtype.name == "fp8":
            dtype = resolve_kv_dtype("fp8_ds_mla", "bf16")
        r, rope = spec.kv_lora_rank, spec.qk_rope_head_dim
        if dtype.scale == "ds_mla":
            return f"{r} × 1 B + {r}/128 × 4 B scales + {rope} × 2 B rope (fp8_ds_mla)"
        scales = f" + {r + rope}/{dtype.quant_group} × 2 B scales" if dtype.scale == "group" else ""
        return f"({r} + {rope}) × {_elem(dtype)}{scales} (one latent, no ×2 for V)"
    if isinstance(spec, (LinearState, NoKV)):
        return "0 (no per-token cache)"
    h, widths = spec.num_kv_heads, f"({spec.head_dim} + {spec.v_head_dim})"
    if dtype.scale == "group":
        return f"{h} × {widths} × ({_elem(dtype)} + 2 B / {dtype.quant_group} scale)"
    if dtype.scale == "nvfp4":
        return f"{h} × {widths} × (0.5 B + 1 B / 16 scale)"
    if dtype.scale == "per_token_head":
        return f"{h} × {widths} × 1 B + 2 × {h} × 4 B fp32 scales"
    return f"{h} × {widths} × {_elem(dtype)}"


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
    return "; ".join(f"{s.mixer} state per sequence: {s.conv_elements:,} conv elements × {_elem(dtypes.conv)} + "
                     f"{s.num_state_heads} × {s.state_rows} × {s.state_cols} recurrent elements × "
                     f"{_elem(dtypes.recurrent(s))} = {group.state_bytes_per_layer:,} B per layer"
                     for s in parts(group.spec) if isinstance(s, LinearState))


def _window_text(group: Group) -> str:
    return f"holds min(seq_len, {group.token_limit:,}) tokens of a sequence" if group.token_limit else ""


def group_explain(group: Group, result: KvCacheResult) -> dict[str, str]:
    """A layer group's per-token formula with its values, and what TP, state and windows add (or "")."""
    return {"formula": per_layer_formula(group.spec, result.layout.kv_dtype), "tp": _tp_text(group, result),
            "state": _state_text(group, result), "window": _window_text(group)}


def _group_lines(group: Group, result: KvCacheResult) -> list[str]:
    texts = group_explain(group, result)
    lines = [f"[{group.spec.kind}] {group.num_layers} layers; per layer per token: "
             f"{texts['formula']} = {group.bytes_per_token_per_layer:,} B"]
    return lines + [f"  {texts[k]}" for k in ("tp", "state", "window") if texts[k]]


def explain(result: KvCacheResult) -> list[str]:
    layout = result.layout
    lines = [f"KV dtype {layout.kv_dtype.name} (model dtype {layout.model.dtype}); "
             f"{layout.attention}, {layout.model.num_layers} layers"]
    for group in layout.groups:
        lines += _group_lines(group, result)
    lines.append(f"bytes per token = Σ groups layers × per-layer bytes = {result.bytes_per_token:,} B")
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
