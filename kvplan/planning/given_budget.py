"""Does a given KV budget (``kv_budget_bytes``, --kv-budget) fit the GPU beside what is resident when the engine
allocates it? A budget no engine could hold is answered as a refusal with the numbers, not planned.

vLLM's --kv-cache-memory-bytes (0.11 on) replaces the profiled budget: the worker still runs the profile run (to
compile), then returns the given bytes as its KV memory without comparing them with the device (0.33.0
v1/worker/gpu_worker.py:656-681; 0.11.0 :235-252), and the cache is one backing ``torch.zeros`` of num_blocks ×
bytes per block (0.33.0 v1/worker/utils.py:564-596): CUDA out of memory when the weights, the CUDA context and
the persistent buffers leave less. The profile run's activations are freed by then; CUDA graphs are captured
after. SGLang sizes its pool from the memory it profiles and caps a larger --max-total-tokens to it (0.5.8
model_executor/model_runner_kv_cache_mixin.py:299-306), and TensorRT-LLM allocates KvCacheConfig.max_gpu_total_bytes
as its pool in place of its fraction of free memory (tensorrt_llm/_torch/pyexecutor/resource_manager.py
``KVCacheManager.calculate_max_num_blocks_from_cpp``): either way a budget that does not fit beside the weights is
not one the engine can log or hold.

Resident at the allocation: every budget term but the profile's activation peak and CUDA graphs, plus the kept
sampler buffers, and the CUDA context (vLLM V1: what its start-up snapshot holds, ``after_kv``). The context, NCCL
and graph sizes are estimates (``kvplan.planning.budget``).
"""

from __future__ import annotations

from kvplan.engines import BudgetRules, BudgetTerm, Engine, Refusal, Resolved
from kvplan.engines.base import term_bytes
from kvplan.errors import KvplanError
from kvplan.planning.after_kv import CUDA_CONTEXT_BYTES, snapshot_bytes
from kvplan.planning.budget import weights_per_stage
from kvplan.planning.budget_terms import overridden, stage_terms
from kvplan.planning.request import Memory
from kvplan.planning.verdict import estimate_error_bytes
from kvplan.records import Record
from kvplan.units import format_gib

CONTEXT_TERMS = ("cuda_context", "context_cublas_absolute")  # non-torch terms that already hold the CUDA context
FREED = ("activation", "cuda_graphs")  # not resident when the cache is allocated
class Held(Record):
    """One GPU of a stage when its KV cache is allocated."""

    stage: int
    kv_bytes: int
    resident_bytes: int
    weights_bytes: int
    gpu_bytes: int
    estimated_bytes: int = 0  # of the resident bytes, what is an estimate (kvplan.planning.verdict)

    @property
    def over_bytes(self) -> int:
        return self.kv_bytes + self.resident_bytes - self.gpu_bytes


def resident_bytes(request: Resolved, rules: BudgetRules, terms: tuple[BudgetTerm, ...], last_stage: bool) -> int:
    """What one GPU holds when its cache is allocated: the terms but the freed ones, the kept sampler buffers, and
    the CUDA context (vLLM V1: its start-up snapshot, with NCCL created at init and uncounted buffers)."""
    held = term_bytes(tuple(t for t in terms if t.kind not in FREED))
    if rules.profile is not None and last_stage:
        held += rules.profile.sampler_buffer_bytes
    if rules.after_kv is not None:
        return held + snapshot_bytes(request, rules)
    return held + (0 if any(k in rules.non_torch for k in CONTEXT_TERMS) else CUDA_CONTEXT_BYTES)


def stages_held(profile: Engine, request: Resolved, memory: Memory, budgets: tuple[int, ...]) -> list[Held] | None:
    """Each stage's GPU at the allocation (None: no GPU, or the weights cannot be sized)."""
    from kvplan.engines.protocol import rules_of  # the budget's, computed once per request

    if request.device is None:
        return None
    try:
        rules = rules_of(profile, request)
        weights_dtype = memory.weights_for(request.model)
        weights = weights_per_stage(request, profile.weight_split(request), weights_dtype)
        out = []
        for stage, (w, kv) in enumerate(zip(weights, budgets, strict=True)):
            terms = overridden(stage_terms(request, rules, w, stage, weights_dtype), memory)
            resident = resident_bytes(request, rules, terms, stage == request.pp - 1)
            kept = tuple(t for t in terms if t.kind not in FREED)
            out.append(Held(stage=stage, kv_bytes=kv, weights_bytes=term_bytes(terms, ("weights",)),
                            resident_bytes=resident, gpu_bytes=request.device.memory_bytes,
                            estimated_bytes=estimate_error_bytes(kept) + resident - term_bytes(kept)))
    except KvplanError:
        return None  # the weights are informative only when a budget is given
    return out


def check(profile: Engine, request: Resolved, memory: Memory, budgets: tuple[int, ...]) -> tuple[
        tuple[str, ...], Refusal | None, Held | None]:
    """The lines of the check and, where a stage's GPU cannot hold its budget, the refusal; the stage closest to it
    (its headroom, what of it is estimated: the verdict's margin)."""
    held = stages_held(profile, request, memory, budgets)
    if not held:
        return (), None, None
    worst = max(held, key=lambda h: h.over_bytes)
    lines, refusal = _said(profile, held, worst)
    return lines, refusal, worst


def _said(profile: Engine, held: list[Held], worst: Held) -> tuple[tuple[str, ...], Refusal | None]:
    line = (f"{format_gib(worst.kv_bytes)} GiB of KV + {format_gib(worst.resident_bytes)} GiB resident at its "
            f"allocation = {format_gib(worst.kv_bytes + worst.resident_bytes)} GiB on a {format_gib(worst.gpu_bytes)} "
            f"GiB GPU" + (f", PP stage {worst.stage}" if len(held) > 1 else ""))
    resident = (f"resident: {format_gib(worst.weights_bytes)} GiB of weights, the CUDA context and kept buffers, the "
                "profile's activations freed")
    if worst.over_bytes <= 0:
        return (f"the given budget fits: {line}; {resident}",), None
    head, why = profile.budget_overflow  # what happens, and why, as the engine does it
    message = f"{head} (kvplan: {line}, {format_gib(worst.over_bytes)} GiB over; {resident}" + (
        f"; {why})" if why else ")")
    return (f"the given budget does not fit: {line}; {resident}",), Refusal(message=message, stage=worst.stage if
                                                                 len(held) > 1 else None)
