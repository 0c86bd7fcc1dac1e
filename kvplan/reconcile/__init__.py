"""Reconcile an engine's start-up log with kvplan: every KV number the log prints, recomputed
from the inputs the log states.

``parse_log(text)`` reads a vLLM (V0 and V1), SGLang or TensorRT-LLM log into a frozen
``StartupLog``; ``reconcile(log, Options(...))`` recomputes each number with kvplan and returns a
``Reconciliation`` of checks (logged, kvplan, match, why) and of numbers it could not recompute. ``Options`` takes
what `kvplan capacity` takes (an engine release, parallel sizes, the cache, engine knobs as ``Settings``, the GPU
and memory as ``Memory``): each fills in what the log does not print, and one that disagrees with it is refused.
"""

from __future__ import annotations

from collections.abc import Callable

from kvplan.errors import InputError
from kvplan.reconcile.check import Check, Outcome, Reconciliation, Skipped, merge
from kvplan.reconcile.given import with_release
from kvplan.reconcile.inputs import Inputs, Options, build_inputs
from kvplan.reconcile.parse import Number, Record, StartupLog, parse_log
from kvplan.reconcile.sglang import sglang_checks
from kvplan.reconcile.trtllm import trtllm_checks
from kvplan.reconcile.vllm import vllm_checks

ENGINE_CHECKS: dict[str, Callable[[StartupLog, Inputs], tuple[list[Outcome], str]]] = {
    "vllm": vllm_checks, "sglang": sglang_checks, "trtllm": trtllm_checks}


def reconcile(log: StartupLog, options: Options | None = None) -> Reconciliation:
    """Each logged KV number next to kvplan's, recomputed from what the log (or `options`) states."""
    if not log.records:
        raise InputError(f"the {log.label} log has no KV-cache line that reconcile reads (blocks, KV cache size, "
                         "available KV memory, weights)")
    options = options or Options()
    log, release_note = with_release(log, options.engine)
    inputs = build_inputs(log, options)
    outcomes, rules = ENGINE_CHECKS[log.engine](log, inputs)
    merged = merge(outcomes)
    return Reconciliation(log=log, model=inputs.model.model_id, rules=rules,
                          checks=tuple(o for o in merged if isinstance(o, Check)),
                          skipped=tuple(o for o in merged if isinstance(o, Skipped)),
                          notes=(*inputs.notes, *((release_note,) if release_note else ())), profile=inputs.profile)


__all__ = ["Check", "Number", "Options", "Reconciliation", "Record", "Skipped", "StartupLog", "parse_log",
           "reconcile"]
