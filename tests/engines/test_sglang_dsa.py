"""SGLang's DeepSeek sparse attention (DSA/NSA) pool, release by release: how N is sized (the cell) and what the pool
allocates and logs (``kvplan.engines.sglang.pool.dsa_cell_bytes``, ``dsa_row_bytes``, ``plan.pool_bytes``).

zai-org/GLM-5 (bundled config; the same KV geometry as GLM-5-FP8): 78 layers, kv_lora_rank 512 + rope 64, an indexer
key of 128 fp8 values + one fp32 scale = 132 B per token and layer, the same on every TP rank. SGLang 0.5.8
(model_executor/model_runner_kv_cache_mixin.py:47-80) sizes N at 78 × (576 + 132) = 55,224 B a token with an fp8
cache, but its NSATokenToKVPool stores an fp8 latent row as 512 fp8 + 512/128 × 4 B of scales + 64 × 2 B of bf16
rope = 656 B (mem_cache/memory_pool.py:1697-1707), and logs the latent rows (N + page) plus the index rows
((N + page + 1) // page × page) of every layer (:1832-1836).

Real start-up (GitHub ajith-sirra-amd/Issues, GLM-5-FP8-MI355X-SGLANG-ERROR.md; SGLang v0.5.8.post1, TP 8 on MI355X,
--kv-cache-dtype fp8_e4m3, page 1): "KV Cache is allocated. #tokens: 3262823, KV size: 186.77 GB" (GB = GiB).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines.sglang import pool, pool_bytes
from kvplan.engines.sglang.releases import release_for
from kvplan.planning.capacity import capacity
from kvplan.units import format_gib

GIB = 2**30
GLM5 = "zai-org/GLM-5"
LOGGED_TOKENS = 3_262_823


def _run(release: str, kv_dtype: str = "fp8", budget: int = 100 * GIB) -> Any:
    return capacity(GLM5, engine=f"sglang@{release}", tp=8, kv_dtype=kv_dtype, block_size=1, kv_budget_bytes=budget)


@pytest.mark.parametrize(("release", "kv_dtype", "cell"), [
    ("0.5.3", "fp8", 78 * 576),  # 0.5.3 model_runner.py:1275-1297: the latent alone, no indexer
    ("0.5.4", "fp8", 78 * (576 + 132)),  # 0.5.4 model_runner.py:1383-1416: + the indexer key and its scale
    ("0.5.8", "fp8", 78 * (576 + 132)),  # 55,224: kv_lora_rank + rope fp8 elements, not the 656-B row stored
    ("0.5.8", "fp8_e4m3", 78 * (576 + 132)),
    ("0.5.8", "bf16", 78 * (576 * 2 + 132)),  # 100,152: bf16 rows are stored as counted
    ("0.5.17", "fp8", 78 * (656 + 132)),  # 61,464: from 0.5.17 the cell counts the stored row
])
def test_the_cell_sglang_sizes_n_with(release: str, kv_dtype: str, cell: int) -> None:
    r = _run(release, kv_dtype)
    assert pool.cells(release_for(release), r.layout) == [cell]
    assert r.plan.kv_tokens == 100 * GIB // cell


def test_0_5_8_allocates_the_stored_rows_and_the_index_keys_of_the_logged_pool() -> None:
    # the log's N = 3,262,823, page 1: 78 × (3,262,824 × 656 + 3,262,825 × 132) = 200,546,224,632 B = 186.77 GiB
    # (kvplan counted 78 × 3,262,824 × 576 = 136.52 GiB before: the fp8 latent without its scales, no indexer)
    r = _run("0.5.8")
    _, _, kv = pool_bytes(release_for("0.5.8"), r.layout, 0, LOGGED_TOKENS, 1)
    assert kv == 78 * (3_262_824 * 656 + 3_262_825 * 132) == 200_546_224_632
    assert format_gib(kv) == "186.77"


def test_the_capacity_plan_logs_and_pages_what_it_allocates() -> None:
    # 167.82 GiB of pool budget (the log's 193.90 − 283.48 × (1 − 0.908)) // 55,224 B = 3,262,989 tokens: the pool
    # then holds 78 × (3,262,990 × 656 + 3,262,991 × 132) B = 186.78 GiB, over the budget, as SGLang's did
    r = _run("0.5.8", budget=int(167.82 * GIB))
    assert r.plan.kv_tokens == int(167.82 * GIB) // 55_224 == 3_262_989
    assert r.plan.log_lines == ("KV Cache is allocated. #tokens: 3262989, KV size: 186.78 GB",)
    assert r.plan.page_bytes == 78 * (656 + 132)


def test_0_5_3_logs_the_latent_rows_only() -> None:
    # 0.5.3 mem_cache/memory_pool.py:1094 logs in MLATokenToKVPool's __init__, before the index buffers exist
    r = _run("0.5.3")
    assert pool_bytes(release_for("0.5.3"), r.layout, 0, LOGGED_TOKENS, 1)[2] == 78 * 3_262_824 * 656
