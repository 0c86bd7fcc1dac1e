"""`kvplan capacity` and `kvplan fit` with what shares the GPU: flags, JSON keys, the table, --explain, errors.

The numbers are derived in tests/planning/test_speculative.py, test_lora.py, test_encoder.py and
test_host_tier.py; here they travel through the flags. GiB = 2**30.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

GIB = 2**30
EXTRAS = ("speculative", "lora", "encoder_cache", "host_tier")


def cap(run_cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("capacity", *args, "--json")
    assert code == 0, err
    payload: dict[str, Any] = json.loads(out)
    return payload


def test_the_keys_are_null_when_nothing_shares_the_gpu(run_cli: Any) -> None:
    p = cap(run_cli, "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--max-model-len", "8k")
    assert all(p[k] is None for k in EXTRAS)
    assert p["engine_settings"]["speculative_model"] is None and p["overhead"] is None


def test_speculative_model_flags(run_cli: Any) -> None:
    # the draft's 16 layers share the pool: 1,310,720 + 131,072 B per block (test_speculative.py)
    p = cap(run_cli, "meta-llama/Llama-3.1-70B", "--tp", "4", "--kv-budget", "40GiB", "--max-model-len", "32k",
            "--speculative-model", "meta-llama/Llama-3.2-1B", "--num-speculative-tokens", "4")
    assert p["page_bytes"] == 1_441_792 and p["num_blocks"] == 29_789
    assert p["speculative"] == {
        "method": "draft_model", "num_speculative_tokens": 4, "draft_model": "meta-llama/Llama-3.2-1B", "draft_tp": 4,
        "draft_kv_layers": 16, "draft_kv_bytes_per_token_per_gpu": 8_192, "draft_weights_bytes_per_gpu": 618_008_576,
        "draft_weights_in_budget": False, "lookahead_tokens_per_request": 4}


def test_draft_weights_are_a_budget_term(run_cli: Any) -> None:
    p = cap(run_cli, "meta-llama/Llama-3.1-70B", "--tp", "4", "--gpu", "H100", "--max-model-len", "32k",
            "--speculative-model", "meta-llama/Llama-3.2-1B", "--num-speculative-tokens", "4")
    term = next(t for t in p["budget_terms"] if t["kind"] == "draft_weights")
    assert term["bytes"] == 618_008_576 == p["overhead"]["draft_weights_bytes"]
    assert p["speculative"]["draft_weights_in_budget"] is True


def test_lora_flags(run_cli: Any) -> None:
    # 4 slots of rank 64 of q/k/v (packed) on Qwen3-8B: 4 × 84,934,656 B (test_lora.py)
    p = cap(run_cli, "Qwen/Qwen3-8B", "--kv-budget", "20GiB", "--max-loras", "4", "--max-lora-rank", "64",
            "--lora-target-modules", "q_proj,v_proj")
    assert p["lora"]["bytes_per_gpu"] == 4 * 84_934_656 and p["lora"]["target_modules"] == ["q_proj", "v_proj"]
    assert p["engine_settings"]["lora_target_modules"] == ["q_proj", "v_proj"]


def test_lora_target_all_is_every_module(run_cli: Any) -> None:
    p = cap(run_cli, "Qwen/Qwen3-8B", "--kv-budget", "20GiB", "--max-lora-rank", "8", "--lora-target-modules", "all")
    assert p["lora"]["target_modules"] is None and len(p["lora"]["modules"]) == 7


def test_host_tier_flags(run_cli: Any) -> None:
    # a bare number is GiB: 100 -> 100 GiB over 2 ranks: 45,511 blocks × 16 tokens (test_host_tier.py)
    p = cap(run_cli, "Qwen/Qwen3-8B", "--tp", "2", "--kv-budget", "20GiB", "--max-model-len", "32k",
            "--kv-offloading-size", "100")
    assert p["host_tier"]["tokens"] == 45_511 * 16 and p["host_tier"]["gpu_tokens_added"] == 0
    q = cap(run_cli, "Qwen/Qwen3-8B", "--tp", "2", "--kv-budget", "20GiB", "--max-model-len", "32k",
            "--lmcache-cpu-size", "50GiB")
    assert q["host_tier"]["host_bytes_total"] == 100 * GIB and q["kv_tokens"] == p["kv_tokens"]


def test_a_node_short_of_the_pinned_host_memory_refuses_with_its_numbers(run_cli: Any) -> None:
    # the issue's command (Qwen3-32B, TP 4, HiCache ratio 1.5): the 4 ranks' host pools against the node
    args = ("capacity", "Qwen/Qwen3-32B", "--gpu", "H100", "--tp", "4", "--engine", "sglang", "--hicache-ratio", "1.5",
            "--max-model-len", "32k", "--json", "--host-mem")
    code, out, err = run_cli(*args, "512GiB")
    assert code == 0, err
    m = json.loads(out)["host_memory"]
    assert m["fits"] and m["ranks_per_node"] == 4 and m["pinned_bytes_per_node"] == 4 * m["pinned_bytes_per_rank"]
    code, out, _ = run_cli(*args, "256GiB")  # 4 × 73.43 GiB + 10 GiB kept free > 256 GiB
    p = json.loads(out)
    assert code == 1 and p["host_memory"]["fits"] is False
    assert p["refusal"].startswith("host memory: 4 rank(s) per node pin") and "256.00 GiB" in p["refusal"]
    assert "--enable-hierarchical-cache --hicache-ratio 1.5" in p["command"]


def test_help_tells_kv_offloading_from_weight_offloading(run_cli: Any) -> None:
    _, out, _ = run_cli("capacity", "--help")
    text = " ".join(w for w in out.split() if w != "│")  # the panels' borders out
    assert "Host KV tier (KV, not weights)" in text and "WEIGHTS (not KV) kept in pinned host memory, per GPU" in text


def test_encoder_cache_key(run_cli: Any) -> None:
    p = cap(run_cli, "google/gemma-3-27b-it", "--kv-budget", "20GiB", "--max-model-len", "32k")
    assert p["encoder_cache"]["bytes_per_gpu"] == 88_080_384 and p["encoder_cache"]["items_profiled"] == 32
    assert cap(run_cli, "google/gemma-3-27b-it", "--kv-budget", "20GiB", "--max-model-len", "32k",
               "--limit-mm-per-prompt", "0")["encoder_cache"] is None


def test_table_and_explain(run_cli: Any) -> None:
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--max-model-len", "8k",
                             "--max-loras", "2", "--max-lora-rank", "16", "--explain")
    assert code == 0, err
    assert "beside the KV cache" in out and "LoRA: 2 slots × rank 16" in out
    assert "LoRA: 2 slots × (A rank × input + B output × rank)" in out


@pytest.mark.parametrize(("args", "flag"), [
    pytest.param(("--speculative-method", "medusa"), "--speculative-method", id="unknown-method"),
    pytest.param(("--num-speculative-tokens", "0"), "--num-speculative-tokens", id="zero-k"),
    pytest.param(("--engine", "vllm@0.11", "--speculative-model", "meta-llama/Llama-3.2-1B",
                  "--num-speculative-tokens", "2"), "--speculative-method", id="vllm-0.11-draft-model"),
    pytest.param(("--engine", "trtllm", "--max-lora-rank", "8"), "--max-lora-rank", id="trtllm-lora"),
    pytest.param(("--hicache-ratio", "2"), "--hicache-ratio", id="hicache-on-vllm"),
    pytest.param(("--cpu-offload-gb", "lots"), "size", id="bad-size"),
    pytest.param(("--mooncake-segment-size", "4"), "--mooncake-segment-size", id="mooncake-on-vllm"),
    pytest.param(("--host-mem", "512"), "--host-mem", id="host-mem-under-a-mib"),
    pytest.param(("--host-mem", "0"), "--host-mem", id="host-mem-zero"),
])
def test_bad_input_is_one_line_and_exit_2(run_cli: Any, args: tuple[str, ...], flag: str) -> None:
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag in err


def test_fit_takes_the_flags(run_cli: Any) -> None:
    code, out, err = run_cli("fit", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--context", "8k", "--concurrency",
                             "4", "--max-loras", "4", "--max-lora-rank", "64", "--json")
    assert code == 0, err
    assert json.loads(out)["best"]["tp"] == 1
