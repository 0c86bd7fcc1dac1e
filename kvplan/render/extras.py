"""What shares the GPU with the KV cache (speculative decoding, LoRA slots, the encoder cache) and the host
tier behind it: a table and --explain lines from ``kvplan.planning.extras.Extras``.

JSON keys (added to ``kvplan capacity --json``; ``null`` when a feature is off): ``speculative``,
``lora``, ``encoder_cache``, ``host_tier``: the ``Extras`` summaries themselves, field by field
(``CapacityPayload.extras``). Bytes are ints; GiB appears only in table cells.
"""

from __future__ import annotations

from kvplan.planning.extras import Extras
from kvplan.planning.extras.speculative import SpeculativeSummary
from kvplan.render import gib
from kvplan.render.tables import Table


def _speculative_row(s: SpeculativeSummary) -> tuple[str, str, str]:
    draft = s.draft_model or ("MTP layers" if s.method == "mtp" else "no model")
    where = "in the budget" if s.draft_weights_in_budget else "not in the budget"
    return (f"draft: {s.method}, K={s.num_speculative_tokens}", gib(s.draft_weights_bytes_per_gpu),
            f"{draft} weights ({where}); {s.draft_kv_layers} KV layers, "
            f"{s.draft_kv_bytes_per_token_per_gpu:,} B/token; +{s.lookahead_tokens_per_request} slots/request")


def _rows(extras: Extras) -> list[tuple[str, str, str]]:
    rows = []
    if extras.speculative:
        rows.append(_speculative_row(extras.speculative))
    if lo := extras.lora:
        rows.append((f"LoRA: {lo.slots} slots × rank {lo.rank}", gib(lo.bytes_per_gpu),
                     f"{gib(lo.bytes_per_slot_per_gpu)} per slot, {len(lo.modules)} modules per layer; "
                     f"host cache {gib(lo.host_bytes_per_rank)} per rank"))
    if e := extras.encoder_cache:
        rows.append(("encoder cache (profile run)", gib(e.bytes_per_gpu),
                     f"{e.items_profiled} {e.modality}s × {e.rows_per_item:,} rows (budget "
                     f"{e.budget_tokens:,} tokens, {e.tokens_per_item} per {e.modality})"))
    if h := extras.host_tier:
        rows.append((f"host: {h.backend}", f"{gib(h.host_bytes_per_rank)} host",
                     f"{h.tokens:,} tokens off-GPU; {gib(h.host_bytes_total)} on {h.ranks} rank(s); +0 GPU tokens"))
    return rows


def extras_table(extras: Extras, engine_version: str) -> Table | None:
    rows = _rows(extras)
    if not rows:
        return None
    table = Table(title=f"beside the KV cache ({engine_version}, per GPU)", title_justify="left")
    for name in ("what", "bytes", "how"):
        table.add_column(name, justify="right" if name == "bytes" else "left", wrap=name == "how")
    for row in rows:
        table.add_row(*row)
    return table


def extras_lines(extras: Extras) -> list[str]:
    """--explain: the rule behind each feature's numbers."""
    lines = []
    if s := extras.speculative:
        lines.append(f"speculative: {s.method} K={s.num_speculative_tokens}, draft {s.draft_model or '-'} at tp "
                     f"{s.draft_tp}: {s.draft_kv_layers} KV layers × their bytes = {s.draft_kv_bytes_per_token_per_gpu:,}"
                     f" B per token per GPU; weights {s.draft_weights_bytes_per_gpu:,} B "
                     f"({'subtracted' if s.draft_weights_in_budget else 'not subtracted: loaded after the pool'})")
    if lo := extras.lora:
        lines.append(f"LoRA: {lo.slots} slots × (A rank × input + B output × rank) per wrapped module and layer = "
                     f"{lo.bytes_per_gpu:,} B per GPU; host cache {lo.host_bytes_per_rank:,} B per rank")
    if e := extras.encoder_cache:
        lines.append(f"encoder cache: {e.items_profiled} items × {e.rows_per_item:,} rows × hidden × dtype = "
                     f"{e.bytes_per_gpu:,} B held while the profile runs (budget {e.budget_tokens:,} tokens)")
    if h := extras.host_tier:
        lines.append(f"host tier ({h.backend}): {h.rule} -> {h.tokens:,} tokens; no GPU tokens added")
    return lines
