"""Predicted vs measured bytes: the probe's result types. No torch here (the payload and tables are
``kvplan.render.probe``).

Predicted bytes come only from ``kvplan.formulas`` and the engine's page rule (never from the tensors):
attention/MLA group = ``num_layers × page_bytes(spec_per_gpu, kv_dtype, block_size) × num_blocks``;
linear-state group = ``num_layers × state_bytes_per_sequence(spec_per_gpu, state_dtype) × num_seqs``;
DeepSeek-V4's parts (``is_compressed``) take vLLM 0.33's page instead of block_size × bytes per token: the part's
own block (``module_block``) // tokens_per_state entries × the entry's exact bytes (``part_bytes_per_state``, the
``PartLoad`` figures), rounded up to the page alignment (``kvplan.engines.vllm.deepseek_v4.page``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from kvplan.engines.vllm.deepseek_v4 import module_block, page
from kvplan.formulas import KvDtype, page_bytes, state_bytes_per_sequence
from kvplan.formulas.per_token import StateDtypes
from kvplan.specs import CompressedMLA, CompressorState, IndexerCache, LayerSpec, SlidingMLA, parts

KernelCheck = str  # "pass" | "fail" | "skipped"
PER_SEQUENCE_KINDS = ("linear", "none")  # groups that hold per-sequence state, not pages


def is_compressed(part: object) -> TypeGuard[CompressedMLA | SlidingMLA | CompressorState | IndexerCache]:
    """DeepSeek-V4's parts: the latents, the compressor states, and an indexer key kept once per `ratio` tokens."""
    return isinstance(part, (CompressedMLA, SlidingMLA, CompressorState)) or (
        isinstance(part, IndexerCache) and part.ratio > 1)


def layer_page_bytes(spec: LayerSpec, kv_dtype: KvDtype, block_size: int) -> int:
    """One block id of one layer: page_bytes of its token caches, vLLM's own page for each DeepSeek-V4 part."""
    own = [p for p in parts(spec) if is_compressed(p)]
    if not own:
        return page_bytes(spec, kv_dtype, block_size)
    rest = sum(page_bytes(p, kv_dtype, block_size) for p in parts(spec) if not is_compressed(p))
    return rest + sum(page(p, kv_dtype, module_block(p, block_size)) for p in own)


def predicted_group_bytes(spec: LayerSpec, num_layers: int, kv_dtype: KvDtype, state_dtype: KvDtype | StateDtypes,
                          block_size: int, num_blocks: int, num_seqs: int) -> int:
    """num_layers × (layer_page_bytes × num_blocks + state_bytes_per_sequence × num_seqs)."""
    paged = layer_page_bytes(spec, kv_dtype, block_size) * num_blocks
    return num_layers * (paged + state_bytes_per_sequence(spec, state_dtype) * num_seqs)


def relative_error(measured_bytes: int, predicted_bytes: int) -> float:
    """(measured − predicted) / predicted; 0 when both are 0, inf when only the prediction is 0."""
    if predicted_bytes == 0:
        return 0.0 if measured_bytes == 0 else float("inf")
    return (measured_bytes - predicted_bytes) / predicted_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupResult:
    """One group of identical layers on one rank."""

    kind: str
    num_layers: int
    predicted_bytes: int
    measured_bytes: int
    reserved_bytes: int | None = None  # CUDA caching allocator's view (memory_reserved delta)
    driver_bytes: int | None = None  # the driver's view (mem_get_info delta)
    allocated_bytes: int | None = None  # the allocator's blocks (memory_allocated delta: rounded, unsplit)

    @property
    def error(self) -> float:
        return relative_error(self.measured_bytes, self.predicted_bytes)


def _sum_or_none(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """One model on one rank: every group's bytes, the kernel check and the kernels' bandwidth."""

    model: str
    tp: int
    tp_rank: int
    kv_dtype: str
    layout: str
    num_blocks: int
    block_size: int
    num_seqs: int
    groups: tuple[GroupResult, ...]
    kernel_check: KernelCheck
    kernel_notes: tuple[str, ...] = ()
    write_gbps: float | None = None
    decode_gbps: float | None = None
    decode_step_s: float | None = None  # one decode step over every layer's allocated pages, measured
    decode_step_bytes: int | None = None  # the bytes that step read

    @property
    def predicted_bytes(self) -> int:
        return sum(g.predicted_bytes for g in self.groups)

    @property
    def kv_bytes(self) -> int:
        """The paged (attention/MLA) part of the prediction: what a decode step over the full cache reads."""
        return sum(g.predicted_bytes for g in self.groups if g.kind not in PER_SEQUENCE_KINDS)

    @property
    def measured_bytes(self) -> int:
        return sum(g.measured_bytes for g in self.groups)

    @property
    def driver_bytes(self) -> int | None:
        return _sum_or_none([g.driver_bytes for g in self.groups])

    @property
    def reserved_bytes(self) -> int | None:
        return _sum_or_none([g.reserved_bytes for g in self.groups])

    @property
    def allocated_bytes(self) -> int | None:
        return _sum_or_none([g.allocated_bytes for g in self.groups])

    @property
    def error(self) -> float:
        return relative_error(self.measured_bytes, self.predicted_bytes)

    def passes(self, tolerance: float) -> bool:
        """Every group and the total within tolerance, and no kernel check failed."""
        errors = [self.error, *(g.error for g in self.groups)]
        return all(abs(e) <= tolerance for e in errors) and self.kernel_check != "fail"
