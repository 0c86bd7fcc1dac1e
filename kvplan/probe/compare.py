"""Predicted vs measured bytes: the probe's result types and its payload. No torch here.

Predicted bytes come only from ``kvplan.formulas`` (never from the tensors):
attention/MLA group = ``num_layers × page_bytes(spec_per_gpu, kv_dtype, block_size) × num_blocks``;
linear-state group = ``num_layers × state_bytes_per_sequence(spec_per_gpu, state_dtype) × num_seqs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvplan.formulas import KvDtype, page_bytes, state_bytes_per_sequence
from kvplan.specs import LayerSpec

KernelCheck = str  # "pass" | "fail" | "skipped"
PER_SEQUENCE_KINDS = ("linear", "none")  # groups that hold per-sequence state, not pages


def predicted_group_bytes(spec: LayerSpec, num_layers: int, kv_dtype: KvDtype, state_dtype: KvDtype,
                          block_size: int, num_blocks: int, num_seqs: int) -> int:
    """num_layers × (page_bytes × num_blocks + state_bytes_per_sequence × num_seqs)."""
    paged = page_bytes(spec, kv_dtype, block_size) * num_blocks
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
    def error(self) -> float:
        return relative_error(self.measured_bytes, self.predicted_bytes)

    def passes(self, tolerance: float) -> bool:
        """Every group and the total within tolerance, and no kernel check failed."""
        errors = [self.error, *(g.error for g in self.groups)]
        return all(abs(e) <= tolerance for e in errors) and self.kernel_check != "fail"


def _finite(error: float) -> float | None:
    """JSON has no infinity: a group predicted empty that holds bytes reads as null (and fails)."""
    return error if error != float("inf") else None


def _group_dict(g: GroupResult) -> dict[str, Any]:
    return {"kind": g.kind, "num_layers": g.num_layers, "predicted_bytes": g.predicted_bytes,
            "measured_bytes": g.measured_bytes, "reserved_bytes": g.reserved_bytes,
            "driver_bytes": g.driver_bytes, "error": _finite(g.error)}


def _floor_s(read_bytes: int, gbps: float | None) -> float | None:
    return read_bytes / (gbps * 1e9) if gbps and read_bytes else None


def decode_plan(r: ProbeResult, peak_gbps: float | None) -> dict[str, Any]:
    """Planning numbers: the measured step over the allocated cache, and the least time one decode step
    that reads the whole KV budget (kv_bytes) takes at the measured decode bandwidth and at the peak."""
    return {"decode_step_s": r.decode_step_s, "decode_step_bytes": r.decode_step_bytes, "kv_bytes": r.kv_bytes,
            "decode_floor_s": _floor_s(r.kv_bytes, r.decode_gbps),
            "decode_floor_peak_s": _floor_s(r.kv_bytes, peak_gbps),
            "decode_fraction_of_peak": r.decode_gbps / peak_gbps if r.decode_gbps and peak_gbps else None}


def result_dict(r: ProbeResult, tolerance: float, peak_gbps: float | None = None) -> dict[str, Any]:
    return {
        "model": r.model, "tp": r.tp, "tp_rank": r.tp_rank, "kv_dtype": r.kv_dtype, "layout": r.layout,
        "num_blocks": r.num_blocks, "block_size": r.block_size, "num_seqs": r.num_seqs,
        "predicted_bytes": r.predicted_bytes, "measured_bytes": r.measured_bytes,
        "reserved_bytes": r.reserved_bytes, "driver_bytes": r.driver_bytes, "error": _finite(r.error),
        "kernel_check": r.kernel_check, "kernel_notes": list(r.kernel_notes),
        "write_gbps": r.write_gbps, "decode_gbps": r.decode_gbps,
        "write_fraction_of_peak": r.write_gbps / peak_gbps if r.write_gbps and peak_gbps else None,
        **decode_plan(r, peak_gbps), "ok": r.passes(tolerance), "groups": [_group_dict(g) for g in r.groups],
    }


def replication_rows(results: list[ProbeResult], whole_bytes: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """Per (model, kv dtype) under TP: Σ measured over ranks / the unsharded prediction (1.0: no replica)."""
    rows = []
    for (model, kv_dtype), whole in whole_bytes.items():
        ranks = [r for r in results if (r.model, r.kv_dtype) == (model, kv_dtype)]
        measured = sum(r.measured_bytes for r in ranks)
        rows.append({"model": model, "kv_dtype": kv_dtype, "tp": len(ranks), "all_ranks_measured_bytes": measured,
                     "unsharded_predicted_bytes": whole, "replication": measured / whole if whole else None})
    return rows


def probe_payload(device: str, results: list[ProbeResult], tolerance: float, *, peak_gbps: float | None = None,
                  bandwidth_note: str | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON contract: {device, results: [...], ok} plus the tolerance and bandwidth context."""
    rows = [result_dict(r, tolerance, peak_gbps) for r in results]
    payload: dict[str, Any] = {"device": device, "tolerance": tolerance, "peak_gbps": peak_gbps,
                               "bandwidth_note": bandwidth_note, "results": rows,
                               "ok": bool(rows) and all(row["ok"] for row in rows)}
    return {**payload, **(extra or {})}
