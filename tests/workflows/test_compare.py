"""`kvplan compare`: several models in one table and one JSON list."""

from __future__ import annotations

import json

import pytest

from kvplan.errors import ShardingError
from kvplan.workflows import compare

MODELS = ("meta-llama/Llama-3.1-70B", "Qwen/Qwen2.5-72B", "deepseek-ai/DeepSeek-V3")


def test_library_matches_size(size_json):
    result = compare(MODELS, max_model_len=32768)
    for r, name in zip(result.results, MODELS, strict=True):
        single = size_json(name, "--seq-len", "32k")
        assert (r.model.model_id, r.bytes_per_token, r.total_bytes_per_gpu) == (
            single["model"], single["bytes_per_token"], single["total_bytes_per_gpu"])


def test_cli_json_list(run_cli):
    code, out, err = run_cli("compare", *MODELS, "--seq-len", "32k", "--tp", "8", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["model"] for r in rows] == list(MODELS)
    by_model = {r["model"]: r for r in rows}
    # engines.md §6: DeepSeek-V3 MLA bf16 = 61 × 576 × 2 B = 70,272 B/token on every GPU, whatever the TP.
    assert by_model["deepseek-ai/DeepSeek-V3"]["bytes_per_token_per_gpu"] == 70_272
    # Llama-3.1-70B: 327,680 B/token, 8 KV heads over tp 8 -> 40,960 B/token/GPU; 32k tokens -> 1.25 GiB
    assert by_model["meta-llama/Llama-3.1-70B"]["bytes_per_token_per_gpu"] == 40_960
    assert by_model["meta-llama/Llama-3.1-70B"]["bytes_per_sequence_per_gpu"] == 40_960 * 32_768


def test_cli_table(run_cli):
    code, out, err = run_cli("compare", *MODELS[:2], "--seq-len", "4k")
    assert code == 0, err
    assert "GQA" in out and "GiB" in out


def test_default_seq_len_is_each_models_max(run_cli):
    code, out, err = run_cli("compare", "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-8B", "--json")
    assert code == 0, err
    assert [r["seq_len"] for r in json.loads(out)] == [4096, 131072]


def test_failure_names_the_model(run_cli):
    with pytest.raises(ShardingError, match="falcon-7b"):
        compare(["meta-llama/Llama-3.1-8B", "tiiuae/falcon-7b"], max_model_len=1024, tp=2)
    code, _, err = run_cli("compare", "meta-llama/Llama-3.1-8B", "tiiuae/falcon-7b", "--tp", "2")
    assert code == 2 and "tiiuae/falcon-7b" in err


def test_unknown_model(run_cli):
    code, _, err = run_cli("compare", "meta-llama/Llama-3.1-8B", "no/such-model")
    assert code == 2 and "no/such-model" in err


def test_readme_library_example():
    # the Library example of the README's workflows section, line for line (expected values in its comments)
    from kvplan.workflows import beam_search, prefix_sharing, sweep, waste

    c = compare(["meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3"], max_model_len=32768, tp=8)
    assert [r.bytes_per_token_per_gpu for r in c.results] == [40960, 70272]
    s = sweep(["Qwen/Qwen3-32B"], max_model_lens=(4096, 32768), batches=(1, 64), kv_dtypes=("bf16", "fp8"))
    # Qwen3-32B bf16: 2 × 64 layers × 8 KV heads × 128 × 2 B = 262,144 B/token × 4,096 = 1 GiB
    assert (len(s.rows), next(s.dicts())["total_bytes_per_gpu"]) == (8, 1073741824)
    p = prefix_sharing("meta-llama/Llama-3.1-8B", max_model_len=1200, batch=32, shared_prefix_tokens=1000)
    assert (p.by_name("paged").kv_tokens, p.by_name("paged", shared=False).kv_tokens) == (7648, 38400)
    b = beam_search("meta-llama/Llama-3.1-8B", prompt_tokens=1500, output_tokens=548, beam_width=4)
    assert [m.kv_tokens for m in b.allocators] == [8192, 3728, 3692]
    w = waste("meta-llama/Llama-3.1-8B", lengths=[100, 4096, 2000], max_model_len=4096)
    assert [round(r.waste_pct, 1) for r in w.rows] == [49.6, 0.2, 0.0]


def test_compare_engines_cli(run_cli):
    # --kv-budget 20GiB: Llama-3.1-8B bf16 holds 20 × 2^30 / 131,072 = 163,840 tokens = 40 requests of 4k (vLLM).
    # Qwen3-32B is configured for 40,960 tokens: at 64k vLLM refuses, which is reported, not fatal.
    code, out, err = run_cli("compare", "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-32B", "--seq-len", "4k",
                             "--engine", "vllm,sglang", "--kv-budget", "20GiB", "--json")
    assert code == 0, err
    llama = json.loads(out)[0]
    vllm = {c["engine"]: c for c in llama["capacity"]}["vllm"]
    assert (vllm["kv_tokens"], vllm["max_concurrency"], vllm["error"]) == (163_840, 40.0, None)
    assert [c["engine"] for c in llama["capacity"]] == ["vllm", "sglang"]
    code, out, err = run_cli("compare", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B", "--seq-len", "64k",
                             "--engine", "vllm", "--kv-budget", "20GiB")
    assert code == 0, err
    assert "capacity per engine" in out and "40,960" in err


def test_compare_engines_library():
    result = compare(["meta-llama/Llama-3.1-8B"], max_model_len=8192, engines=("vllm",), kv_budget_bytes=(20 * 2**30,))
    (point,) = result.capacity[0]
    assert (point.max_concurrency, point.requests_at_max_len) == (20.0, 20.0)  # 163,840 / 8,192


def test_engine_releases_keep_their_names():
    # the same model, budget and length under two vLLM releases: 40 GiB // 2 MiB = 20,480 blocks either way;
    # 0.11 logs 20,480 × 16 = 327,680 tokens, 0.33 int(20,480 / 512 × 8,192) = 327,680 too; the names tell them apart
    result = compare(["meta-llama/Llama-3.1-8B"], max_model_len=8192, engines=("vllm@0.11", "vllm"), kv_budget_bytes=(40 * 2**30,))
    assert [(p.engine, p.kv_tokens) for p in result.capacity[0]] == [("vllm@0.11", 327_680), ("vllm", 327_680)]
