"""The KV budget of each collected vLLM log, two ways.

1. The release's own rule on the terms the log prints (reconcile's job): every log that prints a memory breakdown
   (V0 0.6.4 "Memory profiling results", V0 "the current vLLM instance can use ...", V1 "Free memory on device ...
   Actual usage is ...") has its budget recomputed and matched.
2. kvplan's full estimate (its own weights, activation, non-torch and graph terms for the log's setup on the log's
   GPU) against the logged budget, as an error in % of usable memory (total × utilization). The issue's target is
   1%; this depends on the engine's release rows (kvplan/engines/vllm/releases.py), so the logs within 1% today
   and today's misses are both pinned: a change either way fails here and is re-pinned with its evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from collected_logs import COLLECTED

from kvplan.planning.gpus import lookup_gpu
from kvplan.reconcile import Options, parse_log, reconcile
from kvplan.reconcile.estimate import estimate, gpu_memory_bytes
from kvplan.reconcile.inputs import build_inputs

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
GIB = 2**30

# log -> the flags its reconcile case uses (test_reconcile.py and collected_logs.py)
FLAGS: dict[str, dict[str, Any]] = {
    **{name: case[0] for name, case in COLLECTED.items()},
    "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s": {},
    "vllm-nightly-llama31-8b-a100-80gb-fragments": {"model": "meta-llama/Llama-3.1-8B"},
}
# log -> its GPU where the log prints no total: a catalog name (the sidecar's GPU), or GiB the capture prints
GPUS: dict[str, str | float] = {
    "vllm-v0101-gpt-oss-120b-h100-negative-kv": "H100", "vllm-v01011-gpt-oss-120b-tp4-ray-util08-a100-80gb": "A100-80G",
    "vllm-v01011-qwen2-7b-tp2-ray2node-util05-a100-40gb": "A100-40G",
    "vllm-v01011-qwen2-7b-tp2-util025-a100-80gb": "A100-80G", "vllm-v01011-qwen2-7b-tp2-util05-a100-80gb": "A100-80G",
    "vllm-v01011-qwen2-7b-util025-a100-80gb": "A100-80G", "vllm-v01011-qwen2-7b-util05-a100-80gb": "A100-80G",
    "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s": "L40S", "vllm-v0112-llama32-1b-fp8block-lora-l4": "L4",
    "vllm-v0151-llama31-8b-131k-eager-a100-40gb": "A100-40G", "vllm-v0190-qwen35-9b-l40s": "L40S",
    "vllm-v0191-qwen3-8b-a100-40gb": "A100-40G", "vllm-nightly-llama31-8b-a100-80gb-fragments": "A100-80G",
    "vllm-v092dev-deepseek-v2-lite-tp2-pp2-eager-l4": "L4",
    # "GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition 95.01 GiB sm_120" in the capture
    "vllm-v0271-qwen3-32b-pp2-rtxpro6000": 95.01, "vllm-v0271-qwen3-32b-tp2-rtxpro6000": 95.01,
    "vllm-v0271-qwen3-32b-tp1-refusal-rtxpro6000": 95.01,
    # issue 29's collection: the GPUs the posts name (totals not printed)
    "vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000": "RTX-PRO-6000",
    "vllm-v0231dev-qwen36-27b-nvfp4-fp8kv-gb10-util07": "GB10",
    "vllm-v0231dev-qwen36-27b-nvfp4-mtp2-fp8kv-gb10-util07": "GB10", "vllm-v0230-qwen25-vl-7b-util022-a100-80gb-refusal": "A100-80G",
    "vllm-v0130nv-qwen3-30b-a3b-fp8-fp8kv-gb10-util03": "GB10", "vllm-v0191dev-minimax-m25-fp8-tp4-h100-util095": "H100",
    "vllm-v0181dev-qwen35-35b-a3b-fp8-gb10-util08": "GB10",
    # issue 29, part 3
    "vllm-v0211dev-deepseek-v4-flash-tp2-2node-gb10-mtp2-fp8kv": "GB10",
    "vllm-v0190-gpt-oss-20b-a100-80gb-util065-excerpt": "A100-80G", "vllm-gemma4-26b-a4b-a100-80gb-eager-excerpt": "A100-80G",
    "vllm-v0180-qwen35-9b-fp8kv-l40s-modal": "L40S",
}
_BNB = "kvplan counts no bitsandbytes weights (Unsloth's dynamic 4-bit keeps some layers in 16 bits)"
_STAND_IN = "a quantized checkpoint the stand-in's bf16 weights do not represent"
_LORA = "Unsloth's LoRA rank is not printed (its slots are part of the weights)"
_NO_GPU = "the GPU's memory is neither printed nor named"
INCOMPLETE: dict[str, str] = {
    "vllm-v071-phi4-bnb4-t4": _BNB, "vllm-v071-qwen25-3b-bnb4-t4": _BNB, "vllm-v073-llama31-8b-bnb4-t4": _BNB,
    "vllm-v082-phi4-bnb4-lora-a100-80gb": _BNB, "vllm-v0851-deepseek-r1-0528-qwen3-8b-bnb4-t4": _BNB,
    "vllm-v0851-mistral-7b-v03-bnb4-rtx4090": _BNB, "vllm-v092-qwen25-vl-7b-bnb4-t4": _BNB,
    "vllm-v082-llama32-3b-gguf-q8-eager-rtx4070-laptop": "kvplan counts no GGUF weights",
    "vllm-v0641-qwen25-32b-awq-4k-a6000": _STAND_IN, "vllm-v0641-qwen25-72b-gptq-int4-8k-refusal-a40": _STAND_IN,
    "vllm-v0160-llama3-70b-awq-tp2-l40s": _STAND_IN, "vllm-v0151-qwen25-14b-awq-16k-refusal": _STAND_IN,
    "vllm-v0210-qwen25-omni-7b-int4-24gb": _STAND_IN, "vllm-v0200-qwen36-35b-a3b-nvfp4-fp8kv-wsl-32gb": _STAND_IN,
    "vllm-v0200-qwen36-27b-nvfp4-mtp1-fp8kv-wsl": _STAND_IN,
    "vllm-v0191-nemotron-cascade2-30b-a3b-nvfp4-marlin-h100": _STAND_IN,
    "vllm-v0230-gemma4-31b-it-kaggle-95gb": _STAND_IN,
    "vllm-v0191dev-glm51-fp8-tp8-h200": "GLM-5.1-FP8's weights: the log names no checkpoint",
    "vllm-v0260-lfm25-1.2b-sm90": "LFM2.5's weights (LFM2-1.2B stands in for its layout only); " + _NO_GPU,
    "vllm-v081-llama32-3b-lora-a100-40gb": _LORA, "vllm-v0851-llama32-3b-lora-t4": _LORA,
    "vllm-v0851-qwen3-4b-base-lora-t4": _LORA,
    "vllm-v0180-qwen25-7b-fp16-eager-volta": "the GPU is inferred (a V100-32GB by its capability), not named",
    "vllm-v0220-qwen25-7b-48gb": _NO_GPU, "vllm-v0280-qwen25-7b-awq-runpod": _NO_GPU,
    "vllm-v0310-qwen25-7b-instruct-awq-h200": "gpu_memory_utilization is not shown; " + _STAND_IN,
    "vllm-v0251-gpt-oss-120b-h100-util095-excerpt": "an author's excerpt: no release, utilization or GPU in its lines",
    "vllm-v0110rc2dev-gemma3-27b-it-rocm-limitmm2": "an AMD GPU not named; " + _NO_GPU,
    "vllm-minimax-m25-fp8-tp4-rtxpro6000-excerpt": "an author's excerpt: release not printed, GPU from the guide",
    "vllm-gemma4-26b-a4b-a100-80gb-eager-excerpt": "an author's excerpt: release not printed",
    "vllm-v0221dev-qwen36-35b-a3b-nvfp4-mtp2-fp8kv-gb10-util085": _STAND_IN,
    "vllm-v0192dev-gemma4-26b-a4b-nvfp4-fp8kv-wsl-32gb": _STAND_IN,
    "vllm-v0202-gemma4-26b-a4b-nvfp4-fp8kv-256k-rtx5090-wsl": _STAND_IN,
    "vllm-v0200-qwen36-35b-a3b-redhat-nvfp4-fp8kv-120gb": _STAND_IN,
    "vllm-v0200-qwen36-35b-a3b-redhat-nvfp4-fp8kv-8k-rtx5090-wsl": _STAND_IN,
}
# the logs whose budget kvplan's estimate puts within 1% of usable memory today (17 of 37, after the release rows of
# issue 21 and the multimodal profile run of issue 29). The estimate here takes only what the log says: where it does not name its sampler, the release's
# default path (sort for 0.10) is assumed; tools/log_budgets.py reads the inputs of tests/data/logs/
# budget-inputs-vllm.json, where the 0.10 Qwen2-7B runs are inferred to have used FlashInfer's sampler (their
# numbers fit ~15 B/logit, not the sort's 38), and puts those within 0.5%.
WITHIN_1_PERCENT = {
    "vllm-v0101-gpt-oss-120b-h100-negative-kv", "vllm-v01011-qwen2-7b-tp2-ray2node-util05-a100-40gb",
    "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s", "vllm-v0102-qwen3-8b-fp8-lora-l4",
    "vllm-v0102-qwen3-next-80b-a3b-tp2-h200", "vllm-v072-qwen25-1.5b-util05-t4-kaggle",
    "vllm-v072-qwen25-math-1.5b-22gb", "vllm-v082-llama32-3b-serve-t4", "vllm-v0151-llama31-8b-131k-eager-a100-40gb",
    "vllm-v0271-qwen3-32b-tp2-rtxpro6000", "vllm-nightly-llama31-8b-a100-80gb-fragments",
    "vllm-v0191-qwen3-8b-a100-40gb", "vllm-v092dev-deepseek-v2-lite-tp2-pp2-eager-l4",
    "vllm-v0190-qwen35-9b-l40s",  # the Qwen3.5 tower's profile run (issue 29)
    "vllm-v0211dev-deepseek-v4-flash-tp2-2node-gb10-mtp2-fp8kv",  # MTP x2 on two GB10s (issue 29)
    "vllm-v0190-gpt-oss-20b-a100-80gb-util065-excerpt",  # MXFP4 through Marlin on an A100 (issue 29)
    "vllm-v0180-qwen35-9b-fp8kv-l40s-modal",  # the Qwen3.5 tower's profile run, fp8 KV (issue 29)
}


# logs whose estimate kvplan refuses today -> the refusal (strict: when kvplan plans one, it is judged above)
REFUSED = {
}


def budget_logs() -> list[str]:
    """vLLM logs that print a KV budget in GiB, are reconciled, and whose inputs are complete."""
    out = []
    for name in sorted(FLAGS):
        log = parse_log((LOGS / f"{name}.log").read_text())
        if name.startswith("vllm") and any(n.unit == "GiB" for _, n in log.numbers("kv_budget")):
            out.append(name)
    return out


def error_percent(name: str) -> float | str:
    """(kvplan's budget − the logged one) / (total × utilization), in %; the smallest budget of each (kvplan's
    refusal where it plans no budget)."""
    log = parse_log((LOGS / f"{name}.log").read_text())
    inputs = build_inputs(log, Options(**FLAGS[name]))
    given = GPUS.get(name)
    total = gpu_memory_bytes(log) or (int(given * GIB) if isinstance(given, float) else
                                      lookup_gpu(given).memory_bytes if given else None)
    assert total is not None, f"{name}: no GPU memory printed or pinned"
    found = estimate(inputs, total)
    if isinstance(found, str):
        return found
    assert found.settings is not None
    utilization = found.settings.vllm.gpu_memory_utilization or 0.9
    logged = min(float(n.value) for _, n in log.numbers("kv_budget") if n.unit == "GiB") * GIB
    return (min(found.kv_budget_bytes_per_gpu) - logged) / (total * utilization) * 100


def test_every_budget_log_is_judged_or_said_incomplete() -> None:
    assert set(INCOMPLETE) <= set(budget_logs())
    assert set(budget_logs()) - set(INCOMPLETE) >= WITHIN_1_PERCENT
    assert len(budget_logs()) >= 40


@pytest.mark.parametrize("name", [n for n in budget_logs() if n not in INCOMPLETE])
def test_kvplan_estimate_against_the_logged_budget(name: str) -> None:
    error = error_percent(name)
    if name in REFUSED or isinstance(error, str):
        assert isinstance(error, str) and REFUSED.get(name, "?") in error, f"{name}: {error}: re-pin with the evidence"
        return
    print(f"{name}: kvplan's budget − the log's = {error:+.2f}% of usable memory")
    assert (abs(error) <= 1.0) == (name in WITHIN_1_PERCENT), f"{error:+.2f}% of usable: re-pin with the evidence"


BREAKDOWN = {  # log -> the budget checks of its printed breakdown (all match)
    "vllm-v0641-qwen25-32b-awq-4k-a6000": 1, "vllm-v0641-qwen25-72b-gptq-int4-8k-refusal-a40": 1,
    "vllm-v065-phi4-gptq4-util015-80gb": 1, "vllm-v066-llama3-8b-a100-40gb": 1, "vllm-v066-internvl3-78b-tp8-l40s": 1,
    "vllm-v071-deepseek-coder-v2-lite-tp8-a100-40gb-sagemaker": 1, "vllm-v071-llama31-8b-131k-refusal-a10": 1,
    "vllm-v073-llama31-8b-bnb4-t4": 1, "vllm-v0102-qwen3-8b-fp8-lora-l4": 1, "vllm-v0102-qwen3-next-80b-a3b-tp2-h200": 1,
    "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s": 4,
}


@pytest.mark.parametrize("name", sorted(BREAKDOWN))
def test_the_release_rule_on_the_logged_terms(name: str) -> None:
    flags = FLAGS.get(name, {"model": "Qwen/Qwen2.5-72B"})
    result = reconcile(parse_log((LOGS / f"{name}.log").read_text()), Options(**flags))
    budgets = [c for c in result.checks if c.quantity == "kv_budget_bytes"]
    assert len(budgets) == BREAKDOWN[name] and all(c.match for c in budgets)


@pytest.mark.parametrize(("name", "low", "high"), [
    # 0.26 (Model Runner V2, no graph estimate): total 15.55 × 0.9 = 13.995 ± 0.0045 − 0.93 − 1.06 − 0.07 (each ± 0.005)
    # = 11.9155-11.9545 ∋ 11.94
    ("vllm-v0260-qwen25-0.5b-fp16-16gb-v2runner", 11.915, 11.955),
    # 0.27: ceil(23.99 × 0.92) ≈ 22.07 − consumed 1.23 − activation 0.31 (the estimate inside it) = 20.53 ± 0.015
    ("vllm-v0271-qwen25-0.5b-rtx4090-wsl", 20.51, 20.55),
])
def test_the_budget_rule_needs_no_model_term(name: str, low: float, high: float) -> None:
    """The budget uses only the printed terms: a stand-in model (kvplan bundles no Qwen2.5-0.5B) does not change it."""
    result = reconcile(parse_log((LOGS / f"{name}.log").read_text()), Options(model="Qwen/Qwen2.5-1.5B"))
    budget = next(c for c in result.checks if c.quantity == "kv_budget_bytes")
    assert budget.match and low < budget.low / GIB < budget.high / GIB < high
