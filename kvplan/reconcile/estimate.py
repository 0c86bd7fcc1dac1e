"""kvplan's own estimate for a log's setup, with nothing from the log but its inputs: the weights the engine
loads (checkpoint, rotary cache, Marlin padding, absorbed MLA matrices, LoRA slots: kvplan's budget terms) and
the KV budget on the log's GPU. Reconcile checks the weights against the log; the budget is compared with the
logged one by the collected-log tests (tests/reconcile/test_budgets.py), where it depends on the engine's
release row.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from kvplan.engines import get_engine
from kvplan.engines.base import term_bytes
from kvplan.errors import KvplanError
from kvplan.planning.capacity import CapacityResult, capacity
from kvplan.planning.request import CapacityRequest
from kvplan.planning.weights import weight_bytes_per_gpu
from kvplan.reconcile.inputs import Inputs
from kvplan.reconcile.parse import GIB, StartupLog


def gpu_memory_bytes(log: StartupLog) -> int | None:
    """The GPU's total memory where the log prints it (vLLM V0 and the V1 breakdown, TensorRT-LLM's profiling)."""
    found = log.numbers("total")
    return int(found[0][1].value * GIB) if found else None


@lru_cache(maxsize=512)
def estimate(inputs: Inputs, memory_bytes: int | None) -> CapacityResult | str:
    """kvplan's capacity for the log's setup on a GPU of `memory_bytes` (None: the --gpu given, else an H100)."""
    memory = replace(inputs.memory, kv_budget_bytes=None,
                     gpu_memory_bytes=memory_bytes if memory_bytes is not None else inputs.memory.gpu_memory_bytes)
    try:
        return capacity(CapacityRequest(model=inputs.model, cache=inputs.cache, settings=inputs.settings,
                                        memory=memory), engine=inputs.profile)
    except KvplanError as exc:
        return str(exc)


def loaded_weights(inputs: Inputs) -> int | None:
    """The bytes the engine's weight loading leaves on the most loaded GPU, by kvplan's terms (None: kvplan cannot
    count them)."""
    found = estimate(inputs, None)
    if not isinstance(found, str) and found.budget_terms:
        return term_bytes(found.budget_terms, get_engine(found.engine).loaded_kinds)
    try:
        return weight_bytes_per_gpu(inputs.model, tp=inputs.tp, pp=inputs.pp, weights_dtype=inputs.weights_dtype)
    except KvplanError:
        return None


def loaded_reasons(inputs: Inputs) -> tuple[str, ...]:
    """Why kvplan's loaded weights are an estimate (the estimated_because of its load terms; empty: exact)."""
    found = estimate(inputs, None)
    if isinstance(found, str):
        return ()
    kinds = get_engine(found.engine).loaded_kinds
    return tuple(dict.fromkeys(b for t in found.budget_terms if t.kind in kinds for b in t.estimated_because))
