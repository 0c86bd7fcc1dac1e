"""Section 2: bytes per token and per sequence, one row per layer group with its formula and the
values substituted (what `kvplan size --explain` prints, as a table), per GPU and for all GPUs,
exact and paged."""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.render.explain import GroupExplain
from kvplan.render.html.markup import Cell, Html, esc, join, num, pre, section, size, table, tag
from kvplan.render.report import ReportPayload
from kvplan.render.size import GroupPayload, SizePayload


def _dims(g: GroupPayload) -> str:
    h = g.heads
    if h.kv_lora_rank:
        return f"{h.head_dim} latent ({h.kv_lora_rank} + {h.qk_rope_head_dim} rope) / {h.v_head_dim}"
    return f"{h.head_dim} / {h.v_head_dim}"


def _formula(g: GroupPayload, parts: GroupExplain) -> Html:
    extra = "".join(f'<span class="u">{esc(text)}</span>' for text in (parts.tp, parts.state, parts.window) if text)
    return Html(f'<span class="formula">{esc(parts.formula)} = {num(g.bytes_per_token_per_layer)} B</span>{extra}')


def _group_table(p: SizePayload, explained: Sequence[GroupExplain]) -> Html:
    """kind, layers, heads, dims, [window], formula = bytes, B/token (whole, GPU), [state per sequence]."""
    groups = p.layer_groups
    windows, states = any(g.window for g in groups), any(g.state_bytes_per_sequence for g in groups)
    headers = ["kind", "layers (GPU)", "KV heads (GPU)", "head dim K / V", *(["window"] if windows else []),
               "per layer per token", "B / token", "B / token / GPU", *(["state / sequence (GPU)"] if states else [])]
    rows = []
    for g, parts in zip(groups, explained, strict=True):
        rows.append([g.kind, f"{g.num_layers} ({g.num_layers_per_gpu})",
                     f"{g.heads.num_kv_heads} ({g.heads.num_kv_heads_per_gpu})", _dims(g),
                     *([num(g.window)] if windows else []), _formula(g, parts), num(g.bytes_per_token),
                     num(g.bytes_per_token_per_gpu),
                     *([f"{num(g.state_bytes_per_sequence)} ({num(g.state_bytes_per_sequence_per_gpu)})"]
                       if states else [])])
    first_number = headers.index("B / token")
    return table(headers, rows, numeric=range(first_number, len(headers)))


TOTAL_LABELS = ("bytes / token", "one sequence, exact", "one sequence, paged", "the batch, exact", "the batch, paged")


def _totals(sizes: Sequence[SizePayload]) -> Html:
    """Whole model and most loaded GPU, side by side for every KV dtype (batch rows only for a batch > 1)."""
    first = sizes[0]
    shown = len(TOTAL_LABELS) if first.batch > 1 else 3
    totals = [p.totals() for p in sizes]
    rows: list[list[Cell]] = [[label, *(size(v) for t in totals for v in t[i])]
                              for i, label in enumerate(TOTAL_LABELS[:shown])]
    rows.append([f"all {first.num_gpus} GPUs (replicas counted)",
                 *(v for p in sizes for v in (size(p.total_bytes_all_gpus), ""))])
    headers = ["", *(f"{p.kv_dtype}: {h}" for p in sizes for h in ("whole model (B)", "per GPU (B)"))]
    return table(headers, rows, numeric=range(1, len(headers)))


def size_section(payload: ReportPayload) -> Html:
    sizes, first = payload.size, payload.size[0]
    par = first.parallel
    body = [tag("p", f"{first.attention}, model dtype {first.model_dtype}, tp {par.tp} pp {par.pp} dcp "
                     f"{par.dcp}; {first.batch} × {num(first.seq_len)} tokens, paged in blocks of "
                     f"{first.block_size}.")]
    for p, e in zip(sizes, payload.explain.size, strict=True):
        body += [tag("h3", f"KV {p.kv_dtype}"), _group_table(p, e.groups),
                 tag("details", join([tag("summary", f"the arithmetic ({p.kv_dtype}), as kvplan size --explain "
                                                     "prints it"), pre(e.lines, "plain")]))]
    body += [tag("h3", "Per token and per sequence" + (", by KV dtype" if len(sizes) > 1 else "")), _totals(sizes)]
    return section("size", 2, "Per token and per sequence", "One row per group of identical layers: the per-token "
                   "formula with this model's values, then the bytes of one token and one max_model_len sequence, "
                   "for the whole model and for the most loaded GPU. Paged rounds each group up to whole blocks.",
                   body)
