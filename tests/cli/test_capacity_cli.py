"""`kvplan capacity` end to end: the JSON contract, hand-derived numbers, budgets, errors and warnings."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from kvplan.errors import InputError
from kvplan.planning.budget import parse_budget
from kvplan.planning.capacity import capacity

GIB = 2**30
CONTRACT = ("engine", "model", "gpu", "gpu_memory_bytes", "parallel", "kv_dtype", "weights_bytes_per_gpu",
            "overhead_bytes_per_gpu", "kv_budget_bytes_per_gpu", "block_size", "page_bytes", "num_blocks",
            "kv_tokens", "max_model_len", "max_concurrency", "layer_groups", "notes")


@pytest.fixture
def cap_json(run_cli: Any) -> Any:
    def run(*args: str) -> Any:
        code, out, err = run_cli("capacity", *args, "--json")
        assert code == 0, err
        return json.loads(out)
    return run


def test_issue_example_qwen3_8b_budget(cap_json: Any) -> None:
    # 36 layers × 16 × 8 heads × 256 × 2 B = 2,359,296 B per block; 20 GiB // that = 9,102 blocks
    # -> 145,632 tokens; 40,960 tokens = 2,560 blocks per request -> 9,102 / 2,560 = 3.56x
    p = cap_json("Qwen/Qwen3-8B", "--kv-budget", "20GiB", "--engine", "vllm", "--block-size", "16",
                 "--max-model-len", "40960")
    assert all(k in p for k in CONTRACT)
    assert (p["page_bytes"], p["num_blocks"], p["kv_tokens"]) == (2_359_296, 9_102, 145_632)
    assert p["max_concurrency"] == 9_102 / 2_560 and p["max_concurrency_log"] == "3.56x"
    assert p["parallel"] == {"tp": 1, "pp": 1, "dcp": 1} and p["kv_budget_bytes_per_gpu"] == 20 * GIB
    assert p["layer_groups"][0]["blocks_per_request"] == 2_560
    assert p["log_line"] == ("GPU KV cache size: 145,632 tokens, Maximum concurrency for 40,960 tokens per "
                             "request: 3.56x")


def test_engine_all_lists_every_engine(cap_json: Any) -> None:
    ps = cap_json("openai/gpt-oss-20b", "--kv-budget", "40GiB", "--engine", "all", "--max-model-len", "128k")
    assert [p["engine"] for p in ps] == ["vllm", "sglang", "trtllm", "hf"]
    assert all(all(k in p for k in CONTRACT) for p in ps)
    vllm, sglang = ps[0], ps[1]
    assert vllm["num_blocks"] == 109_226 and sglang["kv_tokens"] == 970_903  # engines.md §6
    assert sglang["max_concurrency"] is None


def test_gpu_budget_chain_is_consistent(cap_json: Any) -> None:
    # budget = ceil(total × 0.92) − weights − overhead; blocks = budget // page
    p = cap_json("meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "4", "--max-model-len", "32k")
    expected = math.ceil(p["gpu_memory_bytes"] * 0.92) - p["weights_bytes_per_gpu"] - p["overhead_bytes_per_gpu"]
    assert p["kv_budget_bytes_per_gpu"] == expected
    assert p["page_bytes"] == 80 * 16 * 2 * 256 * 2  # 2 KV heads per GPU, K+V of 128, 2 B, 80 layers
    assert p["num_blocks"] == expected // p["page_bytes"]


def test_gpu_mem_and_overhead_overrides(cap_json: Any) -> None:
    p = cap_json("meta-llama/Llama-3.1-8B", "--gpu-mem", "80GiB", "--overhead", "3GiB",
                 "--gpu-memory-utilization", "0.5", "--max-model-len", "8k")
    assert p["gpu_memory_bytes"] == 80 * GIB and p["overhead_bytes_per_gpu"] == 3 * GIB
    assert p["kv_budget_bytes_per_gpu"] == 40 * GIB - p["weights_bytes_per_gpu"] - 3 * GIB


def test_per_stage_budgets(cap_json: Any) -> None:
    # stage budgets floor to bytes: 12.13 × 2^30 = 13,024,488,325.12 -> 13,024,488,325
    p = cap_json("openai/gpt-oss-20b", "--pp", "2", "--kv-budget", "12.13GiB,11GiB")
    assert p["kv_budget_bytes_per_stage"] == [13_024_488_325, 11 * GIB]
    assert p["num_blocks"] == 11 * GIB // 196_608  # min over stages; 6 layers × 32,768 B per block


def test_explain_shows_budget_and_blocks(run_cli: Any) -> None:
    code, out, _ = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--explain",
                           "--max-model-len", "32k")
    assert code == 0
    for needle in ("gpu_memory_utilization 0.92", "available KV", "num_blocks = min over stages",
                   "max concurrency", "steady state", "admission reserve"):
        assert needle in out


def test_vllm_refusal_is_an_answer_exit_1(run_cli: Any) -> None:
    # 10 GiB for a 131,072-token request of 16 GiB: vLLM 0.33 refuses and estimates 81,904 tokens (5,120 blocks
    # − the null block = 5,119 × 16); the answer is still printed: 5,120 blocks, 81,920 tokens
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "10GiB", "--max-model-len", "128k")
    assert code == 1 and err == ""
    assert "refuses (max len 81,904)" in out and "5,120" in out and "81,920" in out
    assert "vllm (vLLM 0.33) refuses to start: To serve at least one request" in out
    code, out, _ = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "10GiB", "--max-model-len", "128k",
                           "--json")
    p = json.loads(out)
    assert code == 1 and p["estimated_max_model_len"] == 81_904 and "(16.0 GiB KV cache is needed" in p["refusal"]
    assert (p["num_blocks"], p["kv_tokens"], p["max_concurrency_log"]) == (5_120, 81_920, "0.62x")
    assert p["log_lines"] == [p["refusal"]] and "log_line" not in p


def test_budget_not_positive_warns(run_cli: Any) -> None:
    # 405B in bf16 is ≈ 756 GiB of weights: one H100 cannot hold them, tp 16 leaves ≈ 25 GiB. vLLM refuses to
    # start ("No available memory for the cache blocks"): an answer, exit 1
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-405B", "--gpu", "H100", "--json")
    assert code == 1 and "warning: KV budget is" in err and "smallest TP with a positive budget: 16" in err
    p = json.loads(out)
    assert p["kv_budget_bytes_per_gpu"] < 0 and p["num_blocks"] == 0 and p["kv_tokens"] == 0
    assert p["refusal"].startswith("No available memory for the cache blocks") and p["estimated_max_model_len"] is None


@pytest.mark.parametrize("args", [
    pytest.param(("--engine", "nope"), id="unknown-engine"),
    pytest.param(("--pp", "2", "--kv-budget", "1GiB,2GiB,3GiB"), id="budget-count"),
    pytest.param(("--kv-budget", "lots"), id="budget-syntax"),
    pytest.param(("--gpu", "H100", "--gpu-memory-utilization", "1.5"), id="bad-fraction"),
    pytest.param(("--gpu", "Z9000"), id="unknown-gpu"),
    pytest.param(("--tp", "3", "--kv-budget", "1GiB"), id="tp-not-dividing-heads"),
])
def test_bad_input_exit_2(run_cli: Any, args: tuple[str, ...]) -> None:
    code, _, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", *args)
    assert code == 2 and err.startswith("kvplan: error:")


def test_library_result_is_frozen(model: Any) -> None:
    r = capacity(model("meta-llama/Llama-3.1-8B"), kv_budget_bytes=(40 * GIB,), max_model_len=131072)
    assert (r.plan.num_blocks, r.plan.kv_tokens) == (20_480, 327_680)
    with pytest.raises(AttributeError):
        r.tp = 2  # type: ignore[misc]


def test_parse_budget() -> None:
    assert parse_budget("20GiB") == (20 * GIB,)
    assert parse_budget("1.5GiB, 1073741824") == (3 * GIB // 2, GIB)
    with pytest.raises(InputError):
        parse_budget("20 parsecs")


def test_budget_path_survives_weights_refusal(cap_json: Any) -> None:
    # with --kv-budget the weights are informative: TRT-LLM phi-4 tp8 (ceil heads) still answers
    p = cap_json("microsoft/phi-4", "--engine", "trtllm", "--tp", "8", "--kv-budget", "40GiB")
    assert p["kv_tokens"] == 1_048_576 and p["weights_bytes_per_gpu"] is None


def test_capacity_plot_writes_a_png(run_cli, tmp_path) -> None:
    path = tmp_path / "capacity.png"
    code, _, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--plot", str(path))
    assert code == 0, err
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(header[16:20], "big") > 0 and int.from_bytes(header[20:24], "big") > 0


def test_issue_command_prints_every_budget_term(run_cli: Any) -> None:
    # vLLM 0.11 on an H100 at u 0.9: int(85,018,542,080 × 0.9) = 76,516,687,872 B usable, minus each term
    args = ("capacity", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--engine", "vllm@0.11",
            "--gpu-memory-utilization", "0.9", "--max-model-len", "16000")
    code, out, _ = run_cli(*args)
    assert code == 0 and "vLLM 0.11" in out and "starts" in out
    for term in ("weights (checkpoint)", "rotary cos/sin cache", "activation peak (sampler)",
                 "non-torch growth after the snapshot", "= KV budget", "76,516,687,872"):
        assert term in out
    code, out, _ = run_cli(*args, "--json")
    p = json.loads(out)
    assert p["kv_budget_bytes_per_gpu"] == 76_516_687_872 - sum(t["bytes"] for t in p["budget_terms"])
    assert {t["name"]: t["exact"] for t in p["budget_terms"]}["weights (checkpoint)"] is True
    assert p["engine_settings"]["max_num_batched_tokens"] == 8192 and p["engine_settings"]["sampler"] == "sort"


def test_engine_knobs_reach_the_budget(cap_json: Any) -> None:
    base = ("meta-llama/Llama-3.1-8B", "--gpu", "H100", "--max-model-len", "8k")
    serve, llm = cap_json(*base, "--engine", "vllm@0.11"), cap_json(*base, "--engine", "vllm@0.11", "--entry-point", "llm")
    assert (serve["engine_settings"]["max_num_batched_tokens"], llm["engine_settings"]["max_num_batched_tokens"]) == (
        8192, 16384)  # vllm serve vs the LLM class on a ≥ 70 GiB GPU
    eager = cap_json(*base, "--enforce-eager")
    assert "CUDA graphs" in {t["name"] for t in cap_json(*base)["budget_terms"]}
    assert "CUDA graphs" not in {t["name"] for t in eager["budget_terms"]}
    flash = cap_json(*base, "--engine", "vllm@0.11", "--sampler", "flashinfer")
    assert flash["kv_budget_bytes_per_gpu"] > serve["kv_budget_bytes_per_gpu"]


@pytest.mark.parametrize("args", [
    pytest.param(("--engine", "vllm@0.34"), id="release-not-followed"),
    pytest.param(("--sampler", "radix"), id="unknown-sampler"),
    pytest.param(("--entry-point", "grpc"), id="unknown-entry-point"),
    pytest.param(("--engine", "vllm@0.8", "--sampler", "flashinfer"), id="sampler-the-release-lacks"),
    pytest.param(("--max-num-seqs", "0"), id="zero-seqs"),
])
def test_bad_engine_knobs_exit_2(run_cli: Any, args: tuple[str, ...]) -> None:
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--gpu", "H100", *args)
    assert code == 2 and out == "" and err.startswith("kvplan: error:") and err.count("\n") == 1


def test_v0_refusal_prints_the_answer(run_cli: Any) -> None:
    # vllm#10517's second run: Llama-3.1-8B at 29,000 tokens on an RTX 3090 under 0.6.4 (u 0.9). The blocks hold
    # fewer than 29,000 tokens: V0 logs its blocks and concurrency, then refuses with its own longest length
    code, out, _ = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--engine", "vllm@0.6.4", "--gpu", "RTX-3090",
                           "--gpu-memory-utilization", "0.9", "--max-model-len", "29000", "--json")
    p = json.loads(out)
    assert code == 1 and p["refusal"].startswith("The model's max seq len (29000) is larger than the maximum number")
    assert p["estimated_max_model_len"] == p["num_blocks"] * 16 < 29000
    assert p["log_lines"][0].startswith("# GPU blocks: ") and p["log_lines"][-1] == p["refusal"]


def test_engine_all_takes_the_newest_releases(cap_json: Any) -> None:
    ps = cap_json("meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--engine", "all", "--max-model-len", "8k")
    assert [p["engine_version"] for p in ps] == ["vLLM 0.33", "SGLang 0.5.23", "TensorRT-LLM 1.x (PyTorch backend)",
                                                 "transformers 5.x"]
