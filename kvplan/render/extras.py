"""What shares the GPU with the KV cache (speculative decoding, LoRA slots, the encoder cache) and the host
tier behind it: a table and --explain lines from ``kvplan.planning.extras.Extras``.

JSON keys (added to ``kvplan capacity --json``; ``null`` when a feature is off): ``speculative``,
``lora``, ``encoder_cache``, ``host_tier``, ``host_memory``, ``role``: the ``Extras`` summaries themselves, field by field
(``CapacityPayload.extras``). Bytes are ints; GiB appears only in table cells.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.render import gib
from kvplan.render.tables import Table

if TYPE_CHECKING:  # annotations only: the features' modules are imported where a request asks for them
    from kvplan.planning.extras import Extras, HostMemory
    from kvplan.planning.extras.speculative import SpeculativeSummary


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
        rows.append((f"host KV tier: {h.backend}", f"{gib(h.host_bytes_per_rank)} host",
                     f"per rank; {h.tokens:,} tokens off-GPU; {gib(h.host_bytes_total)} on {h.ranks} rank(s); "
                     f"+0 GPU tokens; {' '.join(h.flags)}"))
    if r := extras.role:
        descriptors = ", ".join(f"{n:,} @ block {b}" for b, n in r.descriptors_per_request_per_rank.items())
        rows.append((f"{r.role} instance ({r.transfer})", f"{gib(r.transfer_bytes_per_request)} / request",
                     f"KV moved per max-length request ({gib(r.transfer_bytes_per_request_per_rank)} per rank); "
                     f"descriptors per rank: {descriptors}; reserve {r.reserve_tokens_per_request} tokens/request; "
                     f"{r.requests_at_max_len:,.2f} requests at max length"))
    return [*rows, *_host_rows(extras.host_memory)]


def _host_rows(m: HostMemory | None) -> list[tuple[str, str, str]]:
    """Pinned host memory per rank and per node, against the node."""
    if m is None:
        return []
    weights = (f"; weights (--cpu-offload-gb, per GPU) {gib(m.weights_offload_bytes_per_rank)}"
               if m.weights_offload_bytes_per_rank else "")
    node = "unknown" if m.node_memory_bytes is None else gib(m.node_memory_bytes)
    verdict = {True: "fits", False: "EXCEEDS the node", None: "not checked"}[m.fits]
    reserve = f" + {gib(m.reserve_bytes_per_node)} the engine keeps free" if m.reserve_bytes_per_node else ""
    return [("host pinned / rank", f"{gib(m.pinned_bytes_per_rank)} host",
             f"KV tier (--kv-offloading-size and kin) {gib(m.kv_tier_bytes_per_rank)}{weights}"),
            ("host pinned / node", f"{gib(m.pinned_bytes_per_node)} host",
             f"{m.ranks_per_node} rank(s) per node{reserve}; node {node} ({m.node_memory_source}): {verdict}; "
             f"replica {gib(m.pinned_bytes_per_replica)} on {m.nodes} node(s)")]


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
        lines.append(f"host tier ({h.backend}): {h.rule} -> {h.tokens:,} tokens; no GPU tokens added [{h.source}]")
    if r := extras.role:
        lines.append(f"{r.role} instance: {r.rule}")
    if (m := extras.host_memory) and m.node_memory_bytes is not None:
        lines.append(f"host memory per node: {m.ranks_per_node} × {m.pinned_bytes_per_rank:,} B + "
                     f"{m.reserve_bytes_per_node:,} B kept free vs {m.node_memory_bytes:,} B ({m.node_memory_source})")
    return lines
