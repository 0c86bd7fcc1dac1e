"""kvplan against vLLM 0.33's own spec classes and planning functions, for the families the full oracle cannot
build on CPU (DeepSeek-V4 needs tilelang) or that have no oracle run (MiMo-V2).

tests/data/vllm-oracle-frontier/<org>__<name>.json were written by ``tools/vllm_oracle/frontier.py`` (vLLM
0.33.0's Python sources on the path; see its docstring): each cache module's spec as the model's modules build
it, and a grid of records (tp, pp, dcp, KV dtype, block size, max_model_len, max_num_batched_tokens × batches in
flight, two KV budgets) planned by vLLM's ``get_global_kv_cache_groups`` / ``get_kv_cache_configs`` /
``get_kv_cache_capacity``, or the error vLLM raises. Nothing in them is derived from kvplan.

Compared exactly: every module's block size, tokens per entry, page (raw and padded); every group's layers, block
size, page sum and blocks per request; num_blocks, the logged tokens and concurrency, one block id's bytes and
the per-request reserve; refusals with their message and vLLM's estimate.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kvplan.config import load_model
from kvplan.engines import Device, Request, Settings, get_engine
from kvplan.engines.vllm.paging import paging
from kvplan.engines.vllm.planner import blocks
from kvplan.engines.vllm.planner import plan as planner_plan
from kvplan.engines.vllm.releases import RELEASES, resolve
from kvplan.errors import KvplanError
from kvplan.formulas.per_token import part_bytes_per_state, tokens_per_state
from kvplan.planning.capacity import engine_layout, plan_request

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm-oracle-frontier"
FIXTURES = {(d := json.loads(p.read_text()))["model"]: d for p in sorted(DATA.glob("*.json"))}
SPEC_TYPES = {"compressed_mla": "MLAAttentionSpec", "indexer": "MLAAttentionSpec", "sliding_mla": "SlidingWindowMLASpec",
              "compressor": "SlidingWindowMLASpec", "full": "FullAttentionSpec", "sliding": "SlidingWindowSpec"}


def _request(model_id: str, r: dict[str, Any]) -> Request:
    settings = Settings.of(max_num_batched_tokens=r["max_num_batched_tokens"], in_flight_batches=r["in_flight_batches"])
    return Request.of(load_model(model_id), tp=r["tp"], pp=r["pp"], dcp=r["dcp"], kv_dtype=r["kv_cache_dtype"],
                      max_model_len=r["max_model_len"], block_size=r["block_size"], settings=settings)


def _records() -> list[Any]:
    return [pytest.param(m, r, id=f"{m.split('/')[-1]}-{i}-tp{r['tp']}pp{r['pp']}dcp{r['dcp']}-{r['kv_cache_dtype']}-"
                                 f"bs{r['block_size'] or 'auto'}-len{r['max_model_len']}-"
                                 f"{r['max_num_batched_tokens']}x{r['in_flight_batches']}-{r.get('available_bytes')}")
            for m, f in FIXTURES.items() for i, r in enumerate(f["records"])]


def _groups(request: Request, budget: int) -> list[tuple[Any, ...]]:
    """kvplan's KV-cache groups: (layers, block, page, blocks per request); a packed group's page is the sum of its
    layers' pages (vLLM's UniformTypeKVCacheSpecs), another group's the page of each of its layers."""
    engine = get_engine("vllm")
    resolved = engine.resolve(request)
    layout = engine_layout(engine, resolved)
    pages = paging(resolved, layout)
    paged = blocks(resolved, pages, (budget,) * request.pp, RELEASES["0.33"])
    specs = pages.specs
    return [(len(g.layers), g.spec.block_size, sum(s.page_bytes for i in g.layers if (s := specs[i]) is not None)
             if pages.packed is not None else g.spec.page_bytes, n) for g, n in zip(paged.groups, paged.need, strict=True)]


@pytest.mark.parametrize(("model_id", "record"), _records())
def test_frontier_record(model_id: str, record: dict[str, Any]) -> None:
    r = record
    request = _request(model_id, r)
    if r.get("error_stage") in ("model_build", "planning") and "num_blocks" not in r and "groups" not in r:
        with pytest.raises(KvplanError) as caught:
            plan_request(request, (r.get("available_bytes") or 2**30,), "vllm")
        assert r["error"].split(": ", 1)[1] in str(caught.value)
        return
    plan = plan_request(request, (r["available_bytes"],), "vllm")
    assert (plan.page_bytes, plan.block_size) == (r["page_size_bytes_total_per_block"], r["final_block_size"])
    assert plan.reserve_bytes_per_request == r["max_memory_usage_bytes_per_request"]
    if request.pp == 1:
        assert _groups(request, r["available_bytes"]) == [
            (g["num_layers"], g["block_size"], g["group_page_size_bytes"], g["blocks_per_request"]) for g in r["groups"]]
    if r.get("error_stage") == "planning":
        expected = r["error"].removeprefix("ValueError: ")
        estimate = int(expected.split("maximum model length is ")[1].split(".")[0])
        assert plan.refusal is not None and plan.refusal.estimated_max_model_len == estimate
        assert plan.refusal.message == expected
        return
    assert plan.refusal is None
    assert (plan.num_blocks, plan.kv_tokens, f"{plan.max_concurrency:.2f}x") == \
        (r["num_blocks"], r["kv_tokens"], r["max_concurrency_log"])
    assert plan.max_concurrency == pytest.approx(r["max_concurrency"], rel=1e-12)


@pytest.mark.parametrize("model_id", list(FIXTURES))
def test_frontier_layers(model_id: str) -> None:
    """Every cache module at tp 1 with vLLM's default block: its spec type, block, tokens per entry and page."""
    request = Request.of(load_model(model_id), max_model_len=8192)
    engine = get_engine("vllm")
    resolved = engine.resolve(request)
    pages = paging(resolved, engine_layout(engine, resolved))
    ours = Counter((SPEC_TYPES[s.spec.kind], s.block_size, tokens_per_state(s.spec),
                    s.block_size // tokens_per_state(s.spec) * part_bytes_per_state(s.spec, engine_layout(
                        engine, resolved).kv_dtype), s.page_bytes) for s in pages.specs if s is not None)
    vllm = Counter({(x["type"], x["block_size"], x["tokens_per_state"], x["real_page_size_bytes"],
                     x["page_size_bytes"]): x["count"] for x in FIXTURES[model_id]["layers"]})
    assert ours == vllm


def test_fixtures_hold_records() -> None:
    """The frontier fixtures are vLLM's grids, not a handful, and include refusals of each kind."""
    records = [r for f in FIXTURES.values() for r in f["records"]]
    assert len(records) > 80
    assert {r.get("error_stage") for r in records} >= {None, "planning", "model_build"}


# ------------------------------------------------------------------------------------------ a real refusal
LOGS = Path(__file__).resolve().parents[1] / "data" / "vllm-frontier-logs"


def _release_022() -> Any:
    """vLLM 0.22's row: the registry's once it has one; until then 0.33's with the two rules this refusal reads
    from 0.22 (one batch of in-flight tokens, no async scheduling; its DeepSeek-V4 block layout is picked by the
    row, VllmRelease.dsv4_block_layout)."""
    if "0.22" in RELEASES:
        return RELEASES["0.22"]
    return dataclasses.replace(RELEASES["0.33"], key="0.22", label="vLLM 0.22", in_flight_per_stage=False,
                               async_scheduling=False)


def test_deepseek_v4_flash_refusal_of_vllm_44376() -> None:
    """vllm-project/vllm#44376: DeepSeek-V4-Flash, LLM class, 2 × GH200, tp 2, max_model_len 30000, fp8 KV, block 256.
    The LLM class on a GPU of ≥ 70 GiB takes max_num_batched_tokens 16384 (0.22 engine/arg_utils.py); one request
    then needs 6.66 GiB. The log prints the available memory rounded (5.44 GiB): every budget that prints so is
    tried, and one gives the log's line character for character, estimate 13528 included."""
    line = (LOGS / "vllm-v022-deepseek-v4-flash-tp2-gh200-refusal.log").read_text().strip()
    expected = line.split("ValueError: ", 1)[1]
    rel = _release_022()
    req = Request.of(load_model("deepseek-ai/DeepSeek-V4-Flash"), tp=2, kv_dtype="fp8", block_size=256,
                     max_model_len=30000, settings=Settings.of(entry_point="llm"),
                     device=Device(name="GH200", memory_bytes=96 * 2**30))
    req = resolve(rel, req)
    assert (req.settings.max_num_batched_tokens, req.settings.vllm.in_flight_batches) == (16384, 1)
    layout = engine_layout(get_engine("vllm"), req)
    messages = {}
    for budget in range(int(5.435 * 2**30), int(5.445 * 2**30), 2**20):
        refusal = planner_plan(req, layout, (budget,), rel).refusal
        assert refusal is not None and "(6.66 GiB KV cache is needed" in refusal.message
        messages[refusal.estimated_max_model_len] = refusal.message
    assert expected in messages.values()
    assert min(messages) <= 13528 <= max(messages)


def test_deepseek_v4_data_parallel_attention() -> None:
    """vLLM -dp 8 -tp 1 --enable-expert-parallel (kvplan: --dp 8 --tp 1 --ep 8): every cache is replicated under TP,
    so one DP rank's pool is TP 8's, and the 8 DP ranks hold 8 pools where TP 8 holds one (the 156.9x vs 20.43x of
    vllm#51454 at 1M context on B200s is this ratio, 8 × 19.6x vs 20.4x there). Until this branch kvplan read
    --tp 8 --dp 8 as "8 GPUs, attention TP 1"; in vLLM that is 64 GPUs."""
    m = load_model("deepseek-ai/DeepSeek-V4-Flash")
    tp8 = plan_request(Request.of(m, tp=8, max_model_len=1048576), (100 * 2**30,), "vllm")
    dp8 = plan_request(Request.of(m, tp=1, dp=8, ep=8, max_model_len=1048576), (100 * 2**30,), "vllm")
    assert (dp8.num_blocks, dp8.kv_tokens, dp8.max_concurrency) == (tp8.num_blocks, tp8.kv_tokens, tp8.max_concurrency)
    assert dp8.requests_at_max_len == 8 * tp8.requests_at_max_len
    assert (dp8.pools, dp8.gpus, tp8.pools, tp8.gpus) == (8, 8, 1, 8)
    assert any("8 engines of TP 1 × PP 1 (8 GPUs)" in n for n in dp8.notes)
