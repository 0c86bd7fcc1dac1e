"""The MXFP4 MoE backend a vLLM release picks for a request's GPU, from its row's ``Mxfp4Rule``.

The backend decides how the experts are laid out in memory (``kvplan.planning.weights.loaded``): Marlin pads them,
triton_kernels swizzles their scales, FlashInfer's TRT-LLM MoE pads and interleaves them, DeepGEMM packs its scales.
vLLM picks it per compute capability: the first entry of the release's priority list that runs on the GPU. The pick
is an assumption (the budget term an estimate, the reason in its note) when the GPU's capability is not known, or
when the entry needs a package vLLM may run without (triton_kernels before 0.12, FlashInfer).
"""

from __future__ import annotations

from typing import NamedTuple

from kvplan.engines.base import Request
from kvplan.engines.vllm.families import DSV4_TYPES as DSV4_TYPES
from kvplan.engines.vllm.families import experts_kind
from kvplan.engines.vllm.row import Capability, MoeBackendRule, VllmRelease

ROCM_CAPABILITIES = ((9, 4), (9, 5))  # how vLLM reads gfx942 / gfx950 (the catalog's MI300X, MI325X, MI35xX)


class Mxfp4Pick(NamedTuple):
    backend: str | None  # None: the model has no MXFP4 experts
    assumed: str  # "" when the release's rule decides it for this GPU; else what kvplan assumed
    keeps_scales: bool  # the triton_kernels layout keeps the original block scales (0.10-0.24)
    source: str


def _runs_on(entry: MoeBackendRule, cc: Capability) -> bool:
    return entry.low <= cc < entry.high


def mxfp4_pick(rel: VllmRelease, req: Request) -> Mxfp4Pick:
    """The backend for the request's MXFP4 experts on its GPU; a ``--moe-backend`` other than the release's own
    pick wins (a resolved request carries the pick itself)."""
    auto = release_pick(rel, req)
    given = req.settings.vllm.moe_backend
    if auto.backend is not None and given and given != auto.backend:
        return auto._replace(backend=given, assumed="", source="--moe-backend")
    return auto


def release_pick(rel: VllmRelease, req: Request) -> Mxfp4Pick:
    """The backend the release's rule picks for the request's GPU, whatever ``--moe-backend`` says."""
    kind, rule = experts_kind(req), rel.mxfp4
    if kind is None or rule is None:
        return Mxfp4Pick(rel.mxfp4_backend if kind else None, "", False, "")
    keeps = rule.triton_keeps_scales
    entries = rule.gpt_oss if kind == "gpt_oss" else rule.deepseek_v4
    cc = req.device.compute_capability if req.device else None
    if cc is None or cc in ROCM_CAPABILITIES:
        entries = tuple(e for e in entries if _runs_on(e, (9, 0)))
        note = ("the GPU's compute capability is not known" if cc is None else
                "ROCm's MXFP4 MoE backends (AITER, triton) are not modelled") + ": Hopper's (sm90) backend assumed"
        return Mxfp4Pick(entries[0].backend if entries else None, note, keeps, rule.source)
    assumed = ""
    for entry in entries:
        if not _runs_on(entry, cc):
            continue
        if entry.optional:
            state = "present" if entry.assumed_present else "absent"
            assumed = f"{entry.backend} needs {entry.optional}, assumed {state}"
            if not entry.assumed_present:
                continue
        return Mxfp4Pick(entry.backend, assumed, keeps, rule.source)
    return Mxfp4Pick(None, f"no MXFP4 MoE backend of {rel.label} runs on sm{cc[0]}{cc[1]}", keeps, rule.source)
