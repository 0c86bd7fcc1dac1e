"""`kvplan diff` end to end: the table, the JSON, bad input (exit 2) and two identical setups."""

from __future__ import annotations

import json
from typing import Any

import pytest

QWEN_NEXT = ("Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100", "--tp", "2", "--max-model-len", "32k")
UPGRADE = ("--engine", "vllm@0.25", "--engine", "vllm@0.29")
# The rules of vLLM 0.26-0.29 that move this answer, as rows_late.py cites them (release and file:line).
MOVING = {"tp_comm": "0.26.0 distributed/device_communicators/cuda_communicator.py:341-375",
          "persistent_sampler_buffers": "0.27.0 utils/mem_utils.py:314-326; v1/worker/gpu_worker.py:517",
          "mrv2_sampler": "0.28.0 v1/worker/gpu/sample/sampler.py:192-196",
          "mrv2": "0.29.0 config/vllm.py:644-677; v1/worker/gpu/model_runner.py:896-898"}


def run_json(run_cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("diff", *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def capacity_json(run_cli: Any, *args: str) -> dict[str, Any]:
    _, out, _ = run_cli("capacity", *args, "--json")  # exit 1 (refuses) still prints the answer
    data: dict[str, Any] = json.loads(out)
    return data


def test_the_issue_example_names_every_rule_with_file_line(run_cli: Any) -> None:
    code, out, err = run_cli("diff", *QWEN_NEXT, *UPGRADE)
    assert code == 0, err
    moving = out[out.index("rules that change the answer:"):out.index("changed in the rows, no effect")]
    for field, source in MOVING.items():
        assert f" {field}: " in moving and source in moving, field
    # 0.29's hybrid block rule changed in the rows but moves nothing here: both releases refuse before any block
    assert "hybrid_block_legacy" not in moving and "hybrid_block_legacy (0.29)" in out
    assert out.rstrip().splitlines()[-1].startswith("vLLM 0.29 has 3.30 GiB more KV budget per GPU than vLLM 0.25 "
                                                    "(both refuse): the logits all-gather goes through PyNccl")


def test_the_json_agrees_with_capacity_and_adds_up(run_cli: Any) -> None:
    d = run_json(run_cli, *QWEN_NEXT, *UPGRADE)
    assert list(d)[:8] == ["model", "a", "b", "summary", "same_engine", "quantities", "causes", "unexplained"]
    q = {row["key"]: row for row in d["quantities"]}
    for side, release in (("a", "0.25"), ("b", "0.29")):  # each side is capacity's own answer
        cap = capacity_json(run_cli, *QWEN_NEXT, "--engine", f"vllm@{release}")
        assert q["kv_budget_bytes"][side] == cap["kv_budget_bytes_per_gpu"]
        assert d["answers"][0 if side == "a" else 1]["kv_budget_bytes_per_gpu"] == cap["kv_budget_bytes_per_gpu"]
    # the usable memory is the same (0.92 × the H100 in both), so the budget moves by exactly the terms' sum
    terms = sum((r["b"] or 0) - (r["a"] or 0) for k, r in q.items() if k.startswith("term:"))
    assert q["kv_budget_bytes"]["b"] - q["kv_budget_bytes"]["a"] == -terms
    assert q["term:TP communicator created in the profile run"]["b"] is None  # 0.26: tp_comm lazy -> none
    causes = {c["field"]: c for c in d["causes"] if "kv_budget_bytes" in c["moves"]}
    assert {f: c["rules"][0]["source"] for f, c in causes.items() if f in MOVING} == MOVING
    assert d["unexplained"] == [] and d["same_engine"] is True


def test_two_identical_setups_change_nothing(run_cli: Any) -> None:
    d = run_json(run_cli, "Qwen/Qwen3-8B", "--gpu", "H100", "--engine", "vllm@0.29", "--engine", "vllm@0.29")
    assert not any(row["changed"] for row in d["quantities"]) and d["causes"] == []
    assert d["summary"] == "vLLM 0.29 gives the same answer as vLLM 0.29"


def test_two_kv_dtypes_double_the_tokens(run_cli: Any) -> None:
    d = run_json(run_cli, "Qwen/Qwen3-8B", "--gpu", "H100", "--kv-cache-dtype", "auto", "--kv-cache-dtype", "fp8")
    q = {row["key"]: row for row in d["quantities"]}
    # the KV dtype is not a budget term: same budget; fp8 halves the page (bf16 -> 1 byte), so the blocks double
    assert q["kv_budget_bytes"]["a"] == q["kv_budget_bytes"]["b"]
    assert q["page_bytes"]["a"] == 2 * q["page_bytes"]["b"]
    assert q["num_blocks"]["b"] in (2 * q["num_blocks"]["a"], 2 * q["num_blocks"]["a"] + 1)
    assert d["causes"] == [] and d["summary"].endswith("KV dtype bf16 -> fp8")


def test_two_engines_have_no_rule_timeline(run_cli: Any) -> None:
    d = run_json(run_cli, "Qwen/Qwen3-8B", "--gpu", "H100", "--engine", "vllm", "--engine", "sglang")
    assert d["same_engine"] is False and d["causes"] == [] and "two engines" in d["summary"]


@pytest.mark.parametrize(("args", "said"), [
    pytest.param(["Qwen/Qwen3-8B", "--gpu", "H100"], "diff compares two setups", id="one-setup"),
    pytest.param(["Qwen/Qwen3-8B", "--engine", "vllm@0.25,vllm@0.26,vllm@0.29"], "diff compares two setups",
                 id="three-engines"),
    pytest.param(["Qwen/Qwen3-8B", "--engine", "vllm@0.25,"], "diff compares two setups", id="empty-item"),
    pytest.param(["Qwen/Qwen3-8B", "--engine", "vllm@0.25", "--engine", "vllm@9"], "unknown engine 'vllm@9'",
                 id="unknown-release"),
    pytest.param(["Qwen/Qwen3-8B", "--kv-cache-dtype", "auto", "--kv-cache-dtype", "fp9"], "fp9", id="bad-dtype"),
])
def test_bad_input_is_one_line_and_exit_2(run_cli: Any, args: list[str], said: str) -> None:
    code, out, err = run_cli("diff", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err
