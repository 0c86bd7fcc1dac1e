"""The whole vLLM 0.33 sample (../shared/reference/vllm-oracle-sample.json), one test per record.

Each record was produced by vLLM 0.33's own planning code (H100 platform) from a KV budget; the
profile must reproduce num_blocks, the token and concurrency logs (to the printed digit), the page
bytes of one block, the final block size, and every refusal: start-up errors (heads a TP size cannot
split) as errors, a request too long for the memory as the answer's refusal, word for word with
vLLM's estimate of the longest length. Nothing here is derived from kvplan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvplan.engines import Request
from kvplan.errors import KvplanError
from kvplan.planning.capacity import plan_request

# A verbatim copy of shared/reference/vllm-oracle-sample.json (numbers computed by vLLM 0.33's own code).
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "vllm-oracle-sample.json"
RECORDS: list[dict[str, Any]] = json.loads(SAMPLE.read_text())
DEFAULT_BUDGET_BYTES = 64961380352  # refused records carry no budget; 60.5 GiB as the grid's others


def _id(r: dict[str, Any]) -> str:
    name = r["model"].split("/")[-1]
    return (f"{name}-tp{r['tp']}-pp{r['pp']}-{r['kv_cache_dtype']}-bs{r['block_size'] or 'auto'}"
            f"-len{r['max_model_len']}-{(r['available_bytes'] or 0) / 2**30:g}GiB")


def _plan(model: Any, r: dict[str, Any]) -> Any:
    request = Request.of(model(r["model"]), tp=r["tp"], pp=r["pp"], kv_dtype=r["kv_cache_dtype"],
                      max_model_len=r["max_model_len"], block_size=r["block_size"])
    return plan_request(request, (r["available_bytes"] or DEFAULT_BUDGET_BYTES,), "vllm")


def test_sample_is_complete() -> None:
    assert len(RECORDS) == 314


@pytest.mark.parametrize("record", [pytest.param(r, id=_id(r)) for r in RECORDS])
def test_vllm_record(model: Any, record: dict[str, Any]) -> None:
    r = record
    if r["error"] and "estimated maximum model length is" in r["error"]:
        # vLLM: "... (16.0 GiB KV cache is needed, ... (10.0 GiB) ... maximum model length is 81904. ..."
        estimate = r["error"].split("maximum model length is ")[1].split(".")[0]
        needed = r["error"].split("(")[2].split(" KV cache")[0]
        refusal = _plan(model, r).refusal
        assert refusal.estimated_max_model_len == int(estimate) and needed in refusal.message
        assert refusal.message == r["error"].removeprefix("ValueError: ")
        return
    if r["error"]:
        with pytest.raises(KvplanError):
            _plan(model, r)
        return
    plan = _plan(model, r)
    assert plan.refusal is None
    assert plan.num_blocks == r["num_blocks"]
    assert plan.kv_tokens == r["kv_tokens"]
    assert plan.max_concurrency == pytest.approx(r["max_concurrency"], rel=1e-12)
    assert f"{plan.max_concurrency:.2f}x" == r["max_concurrency_log"]
    assert f"GPU KV cache size: {plan.kv_tokens:,} tokens" in r["log_line"]
    assert plan.page_bytes == r["page_size_bytes_total_per_block"]
    assert plan.block_size == r["final_block_size"]
    groups = r["kv_cache_groups"]
    assert sum(g.engine_groups for g in plan.groups) == len(groups)
    by_kind = {g.kind: g for g in plan.groups}
    for g in groups:
        kind = {"SlidingWindowSpec": "sliding", "FullAttentionSpec": "full", "MLAAttentionSpec": "mla"}[g["spec_type"]]
        assert by_kind[kind].blocks_per_request == g["max_memory_usage_bytes"] // g["page_size_bytes"]
        assert by_kind[kind].page_bytes_per_layer == g["page_size_bytes"]
