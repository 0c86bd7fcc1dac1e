"""Issue 22's bar: every bundled model gets a capacity answer (weights known), never a weights gap.

On an H200 at the largest TP of 8, 4, 2, 1 that its heads allow, vLLM 0.33 plans every bundled model, except the
architectures its registry no longer serves (refused with the release that last did); those are planned by an
older release that serves them.
"""

from __future__ import annotations

import pytest

import kvplan
from kvplan.config.resolve import bundled_index
from kvplan.errors import KvplanError

NO_LONGER_SERVED = "supported until"  # vLLM's registry: _PREVIOUSLY_SUPPORTED_MODELS, with the last release
# bundled checkpoints whose weights format kvplan cannot read yet (a strict pin: the entry goes when it can)
WEIGHTS_GAPS: dict[str, str] = {}


def _largest_tp(model_id: str, engine: str) -> kvplan.CapacityResult:
    for tp in (8, 4, 2):
        try:
            return kvplan.capacity(model_id, engine=engine, gpu="H200", tp=tp)
        except KvplanError as exc:
            if "divis" not in str(exc) and "divide" not in str(exc):
                raise
    return kvplan.capacity(model_id, engine=engine, gpu="H200", tp=1)


def _older_release(model_id: str) -> kvplan.CapacityResult:
    """The newest of a few older rows that serves it: MiniMax-M1 (0.9.2 until 0.23), RWForCausalLM (until 0.28),
    mllama (until 0.10.2, V0 only: vllm@0.8-v0)."""
    refusals = []
    for engine in ("vllm@0.22", "vllm@0.10", "vllm@0.8-v0"):
        try:
            return _largest_tp(model_id, engine)
        except KvplanError as exc:
            refusals.append(str(exc))
    raise AssertionError(f"{model_id}: no release serves it: {refusals}")


@pytest.mark.parametrize("model_id", [
    pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=WEIGHTS_GAPS[m])) if m in WEIGHTS_GAPS else m
    for m in bundled_index()])
def test_every_bundled_model_gets_a_capacity_answer(model_id: str) -> None:
    try:
        result = _largest_tp(model_id, "vllm")
    except KvplanError as exc:
        assert NO_LONGER_SERVED in str(exc), f"{model_id}: {exc}"
        result = _older_release(model_id)
    assert result.error is None, result.error
    assert result.weights_bytes_per_gpu, f"{model_id}: no weights"
    assert result.plan.kv_tokens > 0 or result.plan.refusal is not None
