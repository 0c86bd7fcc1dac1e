"""`kvplan size`: the size payload (its keys are a contract) and its tables."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from kvplan.formulas.layout import Group
from kvplan.formulas.sizing import KvCacheResult
from kvplan.records import Record
from kvplan.render import human_bytes
from kvplan.render.payload import INLINE, OMIT_NONE
from kvplan.render.tables import Table
from kvplan.specs import AttnSpec, CompressedMLA, LayerSpec, MLAAttn, SlidingMLA, parts
from kvplan.units import cdiv

if TYPE_CHECKING:
    from rich.console import RenderableType

    from kvplan.render.workload import WorkloadPayload


class Parallel(Record, kw_only=False):
    """The parallel layout a size is shown for: tensor, pipeline and decode-context parallel sizes."""

    tp: int
    pp: int
    dcp: int


class HeadsAndDims(Record):
    """A layer group's attention columns; an MLA group adds its latent's two widths."""

    num_kv_heads: int
    num_kv_heads_per_gpu: int
    head_dim: int
    v_head_dim: int
    kv_lora_rank: int | None = field(default=None, metadata=OMIT_NONE)
    qk_rope_head_dim: int | None = field(default=None, metadata=OMIT_NONE)
    compress_ratio: int | None = field(default=None, metadata=OMIT_NONE)  # DeepSeek-V4: tokens per latent


class GroupPayload(Record):
    """One group of identical layers (most loaded GPU for the per-GPU values)."""

    kind: str
    num_layers: int
    num_layers_per_gpu: int
    heads: HeadsAndDims = field(metadata=INLINE)
    window: int | None
    bytes_per_token_per_layer: int
    bytes_per_token: int
    bytes_per_token_per_gpu: int
    state_bytes_per_sequence: int
    state_bytes_per_sequence_per_gpu: int
    encoder_tokens: int | None = field(default=None, metadata=OMIT_NONE)  # cross-attention groups only
    encoder_bytes_per_sequence: int | None = field(default=None, metadata=OMIT_NONE)


class SizePayload(Record):
    """The `kvplan size --json` contract (keys are stable; new keys may be added)."""

    model: str
    source: str
    attention: str
    kv_dtype: str
    parallel: Parallel
    layer_groups: tuple[GroupPayload, ...]
    bytes_per_token: int
    bytes_per_token_per_gpu: int
    seq_len: int
    batch: int
    block_size: int
    bytes_per_sequence: int
    bytes_per_sequence_per_gpu: int
    bytes_per_sequence_paged: int
    bytes_per_sequence_paged_per_gpu: int
    total_bytes: int
    total_bytes_per_gpu: int
    total_bytes_paged: int
    total_bytes_paged_per_gpu: int
    total_bytes_all_gpus: int
    num_gpus: int
    max_model_len: int | None
    model_dtype: str
    notes: tuple[str, ...]
    # the recurrent (Mamba/linear) state one sequence holds whatever its length: inside bytes_per_sequence
    state_bytes_per_sequence: int
    state_bytes_per_sequence_per_gpu: int
    workload: WorkloadPayload | None = field(default=None, metadata=OMIT_NONE)  # size's workload options only

    def totals(self) -> tuple[tuple[int, int], ...]:
        """(whole model, most loaded GPU) per token, per sequence (exact, paged) and for the batch (exact, paged)."""
        return ((self.bytes_per_token, self.bytes_per_token_per_gpu),
                (self.bytes_per_sequence, self.bytes_per_sequence_per_gpu),
                (self.bytes_per_sequence_paged, self.bytes_per_sequence_paged_per_gpu),
                (self.total_bytes, self.total_bytes_per_gpu), (self.total_bytes_paged, self.total_bytes_paged_per_gpu))


def _attention_part(spec: LayerSpec) -> LayerSpec:
    """What a layer group's heads columns show: its (first) attention cache."""
    return next((p for p in parts(spec) if isinstance(p, (MLAAttn, AttnSpec, CompressedMLA, SlidingMLA))), spec)


def _heads_and_dims(group: Group) -> HeadsAndDims:
    spec, per_gpu = _attention_part(group.spec), _attention_part(group.spec_per_gpu)
    if isinstance(spec, MLAAttn):
        return HeadsAndDims(num_kv_heads=1, num_kv_heads_per_gpu=1, head_dim=spec.latent_dim, v_head_dim=0,
                            kv_lora_rank=spec.kv_lora_rank, qk_rope_head_dim=spec.qk_rope_head_dim)
    if isinstance(spec, (CompressedMLA, SlidingMLA)):  # DeepSeek-V4: one latent, the same on every rank
        return HeadsAndDims(num_kv_heads=1, num_kv_heads_per_gpu=1, head_dim=spec.head_dim, v_head_dim=0,
                            compress_ratio=spec.ratio if isinstance(spec, CompressedMLA) else None)
    if isinstance(spec, AttnSpec):
        assert isinstance(per_gpu, AttnSpec)
        return HeadsAndDims(num_kv_heads=spec.num_kv_heads, num_kv_heads_per_gpu=per_gpu.num_kv_heads,
                            head_dim=spec.head_dim, v_head_dim=spec.v_head_dim)
    return HeadsAndDims(num_kv_heads=0, num_kv_heads_per_gpu=0, head_dim=0, v_head_dim=0)


def group_payload(group: Group, result: KvCacheResult) -> GroupPayload:
    layers_on_gpu = group.stage_layers[result.heaviest_stage]
    encoder = group.encoder_tokens or None
    return GroupPayload(
        kind=group.spec.kind, num_layers=group.num_layers, num_layers_per_gpu=layers_on_gpu,
        heads=_heads_and_dims(group), window=group.window,
        bytes_per_token_per_layer=group.bytes_per_token_per_layer,
        bytes_per_token=group.num_layers * group.bytes_per_token_per_layer,
        bytes_per_token_per_gpu=cdiv(layers_on_gpu * group.bytes_per_token_per_layer_per_gpu, result.layout.dcp),
        state_bytes_per_sequence=group.num_layers * group.state_bytes_per_layer,
        state_bytes_per_sequence_per_gpu=layers_on_gpu * group.state_bytes_per_layer_per_gpu,
        encoder_tokens=encoder, encoder_bytes_per_sequence=None if encoder is None else
        group.num_layers * encoder * group.encoder_bytes_per_token_per_layer)


def size_payload(result: KvCacheResult) -> SizePayload:
    """The `kvplan size --json` contract."""
    layout = result.layout
    groups = tuple(group_payload(g, result) for g in layout.groups)
    return SizePayload(
        model=layout.model.model_id, source=layout.model.source, attention=layout.attention,
        kv_dtype=layout.kv_dtype.name, parallel=Parallel(layout.tp, layout.pp, layout.dcp),
        layer_groups=groups, bytes_per_token=result.bytes_per_token,
        bytes_per_token_per_gpu=result.bytes_per_token_per_gpu, seq_len=result.max_model_len, batch=result.batch,
        block_size=layout.block_size, bytes_per_sequence=result.bytes_per_sequence,
        bytes_per_sequence_per_gpu=result.bytes_per_sequence_per_gpu,
        bytes_per_sequence_paged=result.bytes_per_sequence_paged,
        bytes_per_sequence_paged_per_gpu=result.bytes_per_sequence_paged_per_gpu, total_bytes=result.total_bytes,
        total_bytes_per_gpu=result.total_bytes_per_gpu, total_bytes_paged=result.total_bytes_paged,
        total_bytes_paged_per_gpu=result.total_bytes_paged_per_gpu, total_bytes_all_gpus=result.total_bytes_all_gpus,
        num_gpus=layout.num_gpus, max_model_len=layout.model.max_model_len, model_dtype=layout.model.dtype,
        notes=tuple(result.notes), state_bytes_per_sequence=sum(g.state_bytes_per_sequence for g in groups),
        state_bytes_per_sequence_per_gpu=sum(g.state_bytes_per_sequence_per_gpu for g in groups))


TOTAL_LABELS = ("bytes / token", "bytes / sequence", "bytes / sequence, paged", "total", "total, paged")


def _group_cells(g: GroupPayload, states: bool) -> tuple[str, ...]:
    """A layer group's row: "-" where it has no attention heads (a Mamba/linear group), its state per sequence."""
    h = g.heads
    heads = ("-", "-") if h.num_kv_heads == h.head_dim == 0 else (f"{h.num_kv_heads} ({h.num_kv_heads_per_gpu})",
                                                                  f"{h.head_dim}/{h.v_head_dim}")
    state = (or_dash(g.state_bytes_per_sequence), or_dash(g.state_bytes_per_sequence_per_gpu)) if states else ()
    return (str(g.num_layers), g.kind, *heads, "-" if g.window is None else f"{g.window:,}",
            f"{g.bytes_per_token:,}", f"{g.bytes_per_token_per_gpu:,}", *state)


def or_dash(num_bytes: int) -> str:
    return f"{num_bytes:,}" if num_bytes else "-"


def size_tables(payload: SizePayload) -> list[RenderableType]:
    """The `kvplan size` table: one row per layer group (a state's bytes per sequence in columns of their own
    when a group holds one), then the totals."""
    par = payload.parallel
    title = f"{payload.model}: {payload.attention}, KV {payload.kv_dtype}, tp {par.tp} pp {par.pp} dcp {par.dcp}"
    groups = Table(title=title, title_justify="left")
    states = payload.state_bytes_per_sequence > 0
    for name in ("layers", "kind", "KV heads (per GPU)", "head dim K/V", "window", "B/token", "B/token/GPU",
                 *(("state B/seq", "state B/seq/GPU") if states else ())):
        groups.add_column(name, justify="left" if name == "kind" else "right")
    for g in payload.layer_groups:
        groups.add_row(*_group_cells(g, states))
    totals = Table(title=f"{payload.batch} × {payload.seq_len:,} tokens, block size {payload.block_size}",
                   title_justify="left")
    for i, name in enumerate(("", "whole model (B)", "", "per GPU (B)", "")):
        totals.add_column(name, justify="right" if i else "left")
    for label, (whole, per_gpu) in zip(TOTAL_LABELS, payload.totals(), strict=True):
        totals.add_row(label, f"{whole:,}", human_bytes(whole), f"{per_gpu:,}", human_bytes(per_gpu))
        if label == "bytes / sequence" and states:
            whole, per_gpu = payload.state_bytes_per_sequence, payload.state_bytes_per_sequence_per_gpu
            totals.add_row("  of which state", f"{whole:,}", human_bytes(whole), f"{per_gpu:,}", human_bytes(per_gpu))
    gpus, all_gpus = payload.num_gpus, payload.total_bytes_all_gpus
    totals.add_row(f"total, all {gpus} GPUs" if gpus > 1 else "total, 1 GPU", f"{all_gpus:,}", human_bytes(all_gpus),
                   "", "")
    return [groups, totals]
