"""A KV budget given with a GPU (kv_budget_bytes, --kv-budget) must fit beside what the GPU holds when the engine
allocates it (kvplan.planning.given_budget): vLLM takes --kv-cache-memory-bytes without checking it against the
device (0.33.0 v1/worker/gpu_worker.py:656-681) and allocates the cache in one tensor (v1/worker/utils.py:596), so
a budget the GPU cannot hold is CUDA out of memory; SGLang caps a larger pool to what it profiled (0.5.8
model_executor/model_runner_kv_cache_mixin.py:299-306). Refused with the numbers (exit 1), never planned as a start.

meta-llama/Llama-3.1-70B (bundled config) at TP 2: 70,555,025,408 B of bf16 weights per GPU (kvplan's tensor count,
65.71 GiB) + 60 GiB of KV = 125.71 GiB before anything else, on an H100's 79.18 GiB (85,018,542,080 B).
"""

from __future__ import annotations

import json

import pytest

from kvplan.planning.capacity import capacity
from kvplan.planning.fit import fit

GIB = 2**30
LLAMA70 = "meta-llama/Llama-3.1-70B"


def test_llama70b_tp2_60_gib_is_refused_with_the_numbers() -> None:
    r = capacity(LLAMA70, gpu="H100", tp=2, kv_budget_bytes=60 * GIB, max_model_len=32768)
    assert r.weights_bytes_per_gpu == 70_555_025_408
    assert r.refusal is not None
    message = r.refusal.message
    assert message.startswith("CUDA out of memory allocating the KV cache (kvplan: 60.00 GiB of KV + ")
    assert "65.71 GiB of weights" in message and "on a 79.18 GiB GPU" in message
    assert "v1/worker/gpu_worker.py:656-681" in message
    assert r.plan.log_lines[-1] == message


def test_500_gib_on_one_h100_is_refused() -> None:
    r = capacity("meta-llama/Llama-3.1-8B", gpu="H100", kv_budget_bytes=500 * GIB)
    assert r.refusal is not None and "500.00 GiB of KV" in r.refusal.message


def test_a_budget_that_fits_still_starts_and_says_so() -> None:
    # 10 GiB + 65.71 GiB of weights + the CUDA context and buffers (about 1.35 GiB) < 79.18 GiB
    r = capacity(LLAMA70, gpu="H100", tp=2, kv_budget_bytes=10 * GIB, max_model_len=32768)
    assert r.refusal is None
    assert any(line.startswith("the given budget fits: 10.00 GiB of KV + ") for line in r.budget_lines)


def test_without_a_gpu_the_budget_alone_is_planned() -> None:
    r = capacity(LLAMA70, tp=2, kv_budget_bytes=60 * GIB, max_model_len=32768)
    assert r.gpu is None and r.refusal is None


@pytest.mark.parametrize(("engine", "head"), [
    ("sglang", "SGLang cannot hold this KV budget"),
    ("trtllm", "CUDA out of memory allocating the KV cache pool"),
    ("hf", "CUDA out of memory: this KV budget does not fit beside what the GPU holds"),
])
def test_every_engine_refuses_what_no_gpu_holds(engine: str, head: str) -> None:
    r = capacity(LLAMA70, engine=engine, gpu="H100", tp=2, kv_budget_bytes=60 * GIB, max_model_len=32768)
    assert r.refusal is not None and r.refusal.message.startswith(head)


def test_fit_never_picks_a_setup_whose_gpu_cannot_hold_the_budget() -> None:
    # 60 GiB of KV per GPU fits beside the 70B weights only from 4 GPUs a replica (16.4 GiB of weights at TP 4);
    # before the check fit picked 2 replicas of TP 1 (131 GiB of weights + 60 GiB on a 79 GiB card)
    result = fit(LLAMA70, concurrency=10, gpu="H100", kv_budget_bytes=60 * GIB, max_model_len=32768)
    assert result.best is not None and result.best.tp * result.best.pp >= 4
    on_two = fit(LLAMA70, concurrency=10, gpu="H100", kv_budget_bytes=60 * GIB, max_model_len=32768, max_gpus=2)
    assert on_two.best is None and on_two.candidates
    assert all(c.reason.startswith("the engine refuses: CUDA out of memory") for c in on_two.candidates)


def test_cli_exits_1_with_the_numbers(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli("capacity", LLAMA70, "--gpu", "H100", "--tp", "2", "--kv-budget", "60GiB",
                           "--max-model-len", "32k", "--json")
    assert code == 1
    found = json.loads(out)
    result = found[0] if isinstance(found, list) else found
    assert "60.00 GiB of KV" in json.dumps(result)
