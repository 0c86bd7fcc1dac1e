"""The budget model against real vLLM start-up memory profiles, one test per profile.

``tests/data/vllm-memory-profiles.json`` is a verbatim copy of shared/reference/vllm-memory-profiles.json:
22 profiles quoted from public issues and notebooks, each with its ``source`` (vllm-project/vllm#NNNN, a
notebook at a commit, a public file) and the log lines the numbers come from. Expected numbers are read
from that file; nothing expected is computed by kvplan.

Target (issue 11): where a profile's inputs are complete, the predicted KV budget is within 1 % of the
usable memory (total × gpu_memory_utilization, as the log prints it) of the logged KV memory ("the rest of
the memory reserved for KV Cache", "Available KV cache memory"), and the weights as loaded within 1 % of
"Model loading took". Inputs a log does not print are stated per case (the release's defaults, the catalog's
GPU). The profiles kvplan cannot meet are pinned to their error, with the reason, so a change shows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from published_configs import LLAMA3_8B, QWEN3_4B, QWEN3_30B_A3B, QWEN25_1_5B, QWEN25_14B, bundled

from kvplan.config.hf import normalize
from kvplan.config.model import ModelConfig
from kvplan.engines import Settings
from kvplan.planning.capacity import CapacityResult, capacity

GIB = 2**30
DATA = Path(__file__).resolve().parents[1] / "data" / "vllm-memory-profiles.json"
PROFILES: dict[str, dict[str, Any]] = {p["id"]: p for p in json.loads(DATA.read_text())}
GPTQ_INT4 = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
FP8_BLOCK = {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}


@dataclass(frozen=True)
class Case:
    profile: str  # id in the data file
    config: dict[str, Any]
    engine: str  # the release the log's version and sites point to
    max_model_len: int
    tp: int = 1
    pp: int = 1
    settings: dict[str, Any] = field(default_factory=dict)  # what the launch set (quoted) beyond the defaults
    total_gib: float | None = None  # when the log does not print the GPU total (the catalog's figure)
    util: float | None = None  # when the log does not print it (the release's default)
    non_torch_gib: float | None = None  # kvplan's estimate replaced by the logged value
    kv_gib: float | None = None  # when the log gives tokens, not GiB: tokens × bytes per token
    stage: str | None = None  # a per-rank KV figure (PP): which rank


def model(case: Case) -> ModelConfig:
    return normalize(case.config, model_id=PROFILES[case.profile]["model"], source=case.profile)


def usable_gib(case: Case) -> float:
    """total × u as the log prints it (u is printed with two decimals), else computed."""
    p = PROFILES[case.profile]
    for line in p["quoted_lines"]:
        found = re.search(r"gpu_memory_utilization \(([0-9.]+)\) = ([0-9.]+)GiB|can use\s+([0-9.]+)GiB", line)
        if found:
            return float(found.group(2) or found.group(3))
    return (p["gpu_memory_utilization"] or case.util) * (p["total_gpu_memory_gib"] or case.total_gib)


def run(case: Case) -> CapacityResult:
    p = PROFILES[case.profile]
    total = p["total_gpu_memory_gib"] or case.total_gib
    util = usable_gib(case) / total  # the printed product carries more digits than the printed u
    return capacity(model(case), engine=case.engine, gpu_memory_bytes=int(total * GIB), tp=case.tp, pp=case.pp,
                    max_model_len=case.max_model_len, settings=Settings.of(gpu_memory_utilization=util, **case.settings),
                    non_torch_bytes=int(case.non_torch_gib * GIB) if case.non_torch_gib is not None else None)


def logged_kv_gib(case: Case) -> float:
    kv = PROFILES[case.profile]["kv_cache_gib"]
    if case.kv_gib is not None:
        return case.kv_gib
    return float(kv[case.stage] if case.stage else kv)


def error_pct(case: Case) -> float:
    """(predicted − logged KV) in % of usable memory."""
    r = run(case)
    stage = 0 if case.stage in (None, "rank0", "rank1") else r.pp - 1
    return 100 * (r.kv_budget_bytes_per_gpu[stage] / GIB - logged_kv_gib(case)) / usable_gib(case)


MEETS = [
    # gpt-oss-120b on one H100 (~v0.10.1 log sites): u, total and max_model_len not in the excerpt, so the
    # defaults (0.90, the catalog's 79.18 GiB, 131,072); Marlin MXFP4 experts (the log's warning); KV −2.14 GiB.
    pytest.param(Case("vllm23278-gpt-oss-120b-h100", bundled("openai/gpt-oss-120b"), "vllm@0.10", 131072,
                      total_gib=79.18, util=0.9), id="vllm23278-gpt-oss-120b-0.10"),
    # The same on ~v0.11 with the quoted `--gpu-memory-utilization 0.95 --max-num-batched-tokens 1024`.
    pytest.param(Case("vllm27508-gpt-oss-120b-h100-util095", bundled("openai/gpt-oss-120b"), "vllm@0.11", 131072,
                      settings={"max_num_batched_tokens": 1024}, total_gib=79.18), id="vllm27508-gpt-oss-120b-0.11"),
    # V0 0.6.4 single-line profile; max_model_len 20,000 / 29,000 (chunked prefill off: the profile batch is that long).
    pytest.param(Case("vllm10517-llama31-8b-rtx3090-20k", bundled("meta-llama/Llama-3.1-8B"), "vllm@0.6.4", 20000),
                 id="vllm10517-20k-0.6.4"),
    pytest.param(Case("vllm10517-llama31-8b-rtx3090-29k", bundled("meta-llama/Llama-3.1-8B"), "vllm@0.6.4", 29000),
                 id="vllm10517-29k-0.6.4"),
    # V0 (Feb 2025), tp 2 on RTX 4090s with the quoted u 0.98; the catalog's 23.64 GiB; KV from the refusal's
    # 81,536 tokens × 98,304 B (48 layers × 4 KV heads per GPU × 256 × 2 B).
    pytest.param(Case("vllm13061-r1-distill-qwen14b-tp2-4090", QWEN25_14B, "vllm@0.7", 131072, tp=2,
                      total_gib=23.64, util=0.98, kv_gib=81536 * 98304 / GIB), id="vllm13061-qwen14b-tp2-0.7"),
    # Llama-3.1-8B on an H100 (~v0.9) with an EAGLE draft kvplan does not model (its ~0.47 GiB of weights are
    # left out: −0.19 %; with them −0.84 %); defaults u 0.90 and 79.18 GiB assumed.
    pytest.param(Case("vllm19996-llama31-8b-eagle-h100", bundled("meta-llama/Llama-3.1-8B"), "vllm@0.9", 131072,
                      total_gib=79.18, util=0.9), id="vllm19996-llama31-8b-0.9"),
    # Unsloth on V0 0.8.x: the banner's max_num_seqs and LoRA rank; chunked prefill 2,048 (the default at 2,048).
    pytest.param(Case("unsloth-qwen3-4b-base-t4", {**QWEN3_4B, "max_position_embeddings": 32768, "torch_dtype": "float16"},
                      "vllm@0.8-v0", 2048, settings={"max_num_seqs": 160, "max_lora_rank": 32}), id="unsloth-qwen3-4b-t4"),
    pytest.param(Case("unsloth-llama32-3b-instruct-t4", bundled("meta-llama/Llama-3.2-3B-Instruct", torch_dtype="float16"),
                      "vllm@0.8-v0", 2048, settings={"max_num_seqs": 160, "max_lora_rank": 64}), id="unsloth-llama32-3b-t4"),
    pytest.param(Case("unsloth-llama32-3b-instruct-a100-40gb", bundled("meta-llama/Llama-3.2-3B-Instruct"),
                      "vllm@0.8-v0", 2048, settings={"max_num_seqs": 320, "max_lora_rank": 64}),
                 id="unsloth-llama32-3b-a100"),
    # max_num_seqs=1 (the quoted docker env), max_model_len 10k: the forward over 10,000 tokens is the peak.
    pytest.param(Case("doc-qwen3-4b-rtx2060-12gb", {**QWEN3_4B, "torch_dtype": "float16"}, "vllm@0.8-v0", 10000,
                      settings={"max_num_seqs": 1}), id="doc-qwen3-4b-rtx2060"),
    # V0 0.7.1 in DJL-LMI: MLA (chunked prefill off: 8,192-token profile), max_rolling_batch_size 2 -> 2 seqs;
    # tp 8 NCCL + custom all-reduce as logged (2.10 GiB).
    pytest.param(Case("doc-deepseek-coder-v2-lite-tp8-a100-40gb-sagemaker",
                      bundled("deepseek-ai/DeepSeek-V2-Lite", torch_dtype="float16"), "vllm@0.7", 8192, tp=8,
                      settings={"max_num_seqs": 2}, non_torch_gib=2.10), id="doc-deepseek-coder-v2-lite-tp8"),
    pytest.param(Case("doc-qwen25-1.5b-instruct-t4-kaggle", {**QWEN25_1_5B, "torch_dtype": "float16"}, "vllm@0.7",
                      32768), id="doc-qwen25-1.5b-t4"),
    # The PR branch logged 1.79 GiB of non-torch memory at tp 1 (released V0 logs show 0.01-0.16): with it, exact.
    pytest.param(Case("vllm10511-llama3-8b-tp1-h100", LLAMA3_8B, "vllm@0.6.5", 8192, non_torch_gib=1.79),
                 id="vllm10511-tp1-logged-non-torch"),
    # L4 ×4, tp 2 pp 2, eager; u and total assumed. Pinned at -1.43 / -1.64 % while kvplan charged 256 MiB per NCCL
    # group; 0.13 GiB per group (the 0.10.1.1 A100 TP-2 pair, kvplan.engines.vllm.row.COMM_GROUP_BYTES) meets it.
    pytest.param(Case("vllm20665-deepseek-v2-lite-tp2-pp2-l4", bundled("deepseek-ai/DeepSeek-V2-Lite"), "vllm@0.9",
                      1024, tp=2, pp=2, settings={"enforce_eager": True}, total_gib=22.05, util=0.9, stage="rank3"),
                 id="vllm20665-pp-stage1"),
    pytest.param(Case("vllm20665-deepseek-v2-lite-tp2-pp2-l4", bundled("deepseek-ai/DeepSeek-V2-Lite"), "vllm@0.9",
                      1024, tp=2, pp=2, settings={"enforce_eager": True}, total_gib=22.05, util=0.9, stage="rank0"),
                 id="vllm20665-pp-stage0"),
]


@pytest.mark.parametrize("case", MEETS)
def test_kv_budget_within_one_percent_of_usable(case: Case) -> None:
    assert abs(error_pct(case)) <= 1.0


# (case, error in % of usable, why kvplan cannot meet 1 %)
MISSES = [
    # 9.37 GiB of activations logged: 7× what 8,192 tokens and 256 rows make (the same model and version log 1.26
    # on an H100); the excerpt shows no launch settings (≈ 2,048 sampler rows would match).
    pytest.param(Case("vllm12330-llama3-8b-a100-40gb", LLAMA3_8B, "vllm@0.6.6", 8192), 22.99,
                 id="vllm12330-unexplained-activation"),
    # Non-torch 1.79 GiB at tp 1 on the profiler PR's branch; kvplan's estimate is 0.05 (see the case above).
    pytest.param(Case("vllm10511-llama3-8b-tp1-h100", LLAMA3_8B, "vllm@0.6.5", 8192), 2.46, id="vllm10511-tp1-branch"),
    # 4.09 GiB non-torch at tp 1 on an A40-48Q vGPU (the vGPU's own reservation counts in 0.6.4).
    pytest.param(Case("vllm11230-qwen25-72b-gptq-a40", bundled("Qwen/Qwen2.5-72B", torch_dtype="float16",
                      quantization_config=GPTQ_INT4), "vllm@0.6.4", 8192), 9.06, id="vllm11230-vgpu-non-torch"),
    # V1 0.8.5 on A10 ×4: u not visible (0.90 assumed; 0.95 would give ≈ +0.5 %); KV from the token log.
    pytest.param(Case("vllm17327-qwen3-30b-a3b-tp4-a10", QWEN3_30B_A3B, "vllm@0.8", 8192, tp=4, total_gib=21.99,
                      util=0.9, kv_gib=198784 * 24576 / GIB), -4.35, id="vllm17327-utilization-unknown"),
    # FP8 MoE, tp 4 H100: version (0.9.2 or 0.10.0), sampler path and LMCache buffers unknown; 1.2 GiB unexplained
    # beside the TP communicator of an NVSwitch GPU (1.33 GiB, the 0.10.2 H200 log; 3.00 % with 256 MiB before).
    pytest.param(Case("vllm21348-qwen3-235b-a22b-fp8-tp4-h100", bundled("Qwen/Qwen3-235B-A22B",
                      quantization_config=FP8_BLOCK), "vllm@0.10", 40960, tp=4, total_gib=79.18, util=0.9), 1.48,
                 id="vllm21348-ambiguous"),
]


@pytest.mark.parametrize(("case", "error"), MISSES)
def test_profiles_kvplan_cannot_meet_keep_their_documented_error(case: Case, error: float) -> None:
    assert error_pct(case) == pytest.approx(error, abs=0.1)


def loaded_weights_gib(case: Case) -> float:
    """What vLLM logs as "Model loading took": everything allocated inside load_model, LoRA slots and a draft's
    weights included (they are created in the same DeviceMemoryProfiler: 0.11 gpu_model_runner.py:2631-2651)."""
    r = run(case)
    return sum(t.bytes for t in r.budget_terms if t.kind in ("weights", "weights_extra", "lora", "draft_weights")) / GIB


WEIGHTS = [c for c in (p.values[0] for p in MEETS + MISSES) if PROFILES[c.profile]["weights_gib"]] + [
    # tp 2 of the profiler PR branch (KV cut off): 7.48 GiB logged
    Case("vllm10511-llama3-8b-tp2-h100", LLAMA3_8B, "vllm@0.6.5", 8192, tp=2),
    # Jetson Thor (total memory not printed: no budget to check): 14.9889 GiB logged
    Case("doc-llama31-8b-jetson-thor", bundled("meta-llama/Llama-3.1-8B"), "vllm@0.10", 131072,
         settings={"enforce_eager": True}, total_gib=120.0, util=0.85),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.profile}-tp{c.tp}") for c in WEIGHTS
                                  if c.profile != "vllm13061-r1-distill-qwen14b-tp2-4090"])
def test_weights_as_loaded_within_one_percent(case: Case) -> None:
    logged = PROFILES[case.profile]["weights_gib"]
    assert abs(loaded_weights_gib(case) - logged) / logged <= 0.01


@pytest.mark.parametrize(("case", "error"), [
    # R1-Distill-Qwen-14B tp 2 (V0): 13.79 GiB counted vs 13.9476 logged, 0.16 GiB unexplained (−1.15 %)
    pytest.param(next(c for c in WEIGHTS if c.profile.startswith("vllm13061")), -1.15, id="vllm13061-tp2"),
    # gpt-oss-120b on 0.14.1 with the Triton MoE backend: 64.38 GiB logged. kvplan has no 0.14 row: the 0.33 row's
    # triton_kernels layout (swizzled scales padded to 256-row tiles, fp32 expert biases: +0.198 GiB over the
    # checkpoint's 60.80) does not keep the original block scales, which 0.14-0.24 keep beside the swizzled ones
    # (+3.34 GiB; 0.14 quantization/mxfp4.py:782-786 deletes only the weights): −5.26 %. With that release's
    # rule, 64.34 GiB (−0.07 %): test_weights_loaded.py.
    pytest.param(Case("vllm33155-gpt-oss-120b-h100-v0141", bundled("openai/gpt-oss-120b"), "vllm@0.33", 131072,
                      total_gib=79.18, util=0.92), -5.26, id="vllm33155-triton-layout-0.33-row"),
])
def test_weights_kvplan_cannot_meet_keep_their_documented_error(case: Case, error: float) -> None:
    logged = PROFILES[case.profile]["weights_gib"]
    assert 100 * (loaded_weights_gib(case) - logged) / logged == pytest.approx(error, abs=0.05)


def test_activation_of_the_tp2_branch_profile() -> None:
    # vllm#10511 tp 2: 1.26 GiB activation peak logged; V0 gathers logits to rank 0: 2 B × 8,192 × 4,096 hidden
    # + 256 rows × 128,256 × 38.7 B = 1.246 GiB
    r = run(Case("vllm10511-llama3-8b-tp2-h100", LLAMA3_8B, "vllm@0.6.5", 8192, tp=2))
    activation = next(t for t in r.budget_terms if t.kind == "activation")
    assert activation.bytes / GIB == pytest.approx(PROFILES["vllm10511-llama3-8b-tp2-h100"]["activation_peak_gib"],
                                                   abs=0.02)


def test_gpt_oss_120b_refusals_are_the_answers_the_issues_report() -> None:
    # vllm#23278: "Available KV cache memory: -2.14 GiB" -> no memory for blocks; vllm#27508: 1.71 GiB is less than
    # one 131,072-token request needs ("the same error about the kv cache")
    no_memory = run(MEETS[0].values[0]).refusal
    assert no_memory is not None and no_memory.message.startswith("No available memory for the cache blocks.")
    too_long = run(MEETS[1].values[0]).refusal
    assert too_long is not None and too_long.message.startswith(
        "To serve at least one request with the models's max seq len (131072)")
