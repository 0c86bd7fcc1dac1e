"""vLLM's start-up check and its estimated maximum length, release by release (``VllmRelease.start_check``):
each module unpadded up to 0.13, the whole model's padded groups with the first group's blocks only in 0.14-0.16,
each worker's padded groups with the first group's blocks in 0.17-0.18, each worker's padded groups with every
group's blocks from 0.19 (0.29.0 v1/core/kv_cache_utils.py:2041-2070, called at :2331-2336).

google/gemma-3-27b-it (bundled config): 62 layers, 52 sliding (window 1,024) and 10 full, 16 KV heads × 128 dims,
bf16: one layer's 16-token page = 16 × 2 × 16 × 128 × 2 = 131,072 B. Groups of min(52, 10) = 10 layers: 6 sliding
groups (9, 9, 9, 9, 8, 8 layers) and 1 full group, padded to width 10: one block id = 10 × 131,072 = 1,310,720 B.
At 32,768 tokens the full group needs 32,768 / 16 = 2,048 blocks; a sliding group cdiv(1,023 + in-flight, 16) + 1,
in-flight = 8,192 tokens (one batch) before 0.26 -> 577 blocks, 2 × 8,192 = 16,384 from 0.26 (async scheduling,
pp 1) -> 1,089 blocks.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.planning.capacity import capacity

GIB = 2**30
GEMMA = "google/gemma-3-27b-it"
PAGE, WIDTH = 131_072, 10


def _plan(engine: str, budget: int, **kw: Any) -> Any:
    return capacity(GEMMA, engine=engine, gpu="H100", max_model_len=32768, kv_budget_bytes=(budget,), **kw).plan


@pytest.mark.parametrize(("engine", "estimate"), [
    # 10 GiB = 8,192 block ids; 0.29 on checks 8,191 (the null block left out). 6 × 1,089 = 6,534 sliding blocks;
    # the full group keeps 8,192 - 6,534 = 1,658 blocks -> 26,528 tokens (0.26-0.28), 1,657 -> 26,512 (0.29 on)
    ("vllm@0.26", 26_528), ("vllm@0.28", 26_528), ("vllm@0.29", 26_512), ("vllm@0.33", 26_512)])
def test_padded_groups_refuse_gemma3_at_10_gib(engine: str, estimate: int) -> None:
    # (6 × 1,089 + 2,048) × 1,310,720 = 11,248,599,040 B = 10.48 GiB > 10 GiB; the layers unpadded need only
    # (52 × 1,089 + 10 × 2,048) × 131,072 = 10,106,109,952 B (9.41 GiB), which kvplan counted before (31,278 tokens)
    plan = _plan(engine, 10 * GIB)
    assert plan.reserve_bytes_per_request == (6 * 1089 + 2048) * WIDTH * PAGE == 11_248_599_040
    assert plan.refusal is not None and plan.refusal.estimated_max_model_len == estimate
    assert "(10.48 GiB KV cache is needed" in plan.refusal.message
    assert f"the estimated maximum model length is {estimate}." in plan.refusal.message


@pytest.mark.parametrize(("engine", "refused"), [("vllm@0.13", False), ("vllm@0.19", True), ("vllm@0.25", True)])
def test_before_0_19_the_layers_unpadded_after_the_padded_groups(engine: str, refused: bool) -> None:
    # 6.5 GiB = 6,979,321,856 B. One-batch in-flight: padded (6 × 577 + 2,048) × 1,310,720 = 7,222,067,200 B
    # (6.73 GiB) does not fit; unpadded (52 × 577 + 10 × 2,048) × 131,072 = 6,617,038,848 B does (0.13's
    # check_enough_kv_cache_memory, 0.13.0 v1/core/kv_cache_utils.py:664-720). 0.19-0.25: the longest length
    # keeps 3,462 sliding blocks: 3,462 + cdiv(L, 16) <= 6,979,321,856 // 1,310,720 = 5,324 -> L = 1,862 × 16 = 29,792
    plan = _plan(engine, 6 * GIB + GIB // 2)
    assert (plan.refusal is not None) == refused
    if refused:
        assert plan.refusal.estimated_max_model_len == 29_792
        assert "(6.73 GiB KV cache is needed" in plan.refusal.message
    else:
        assert plan.check_bytes_per_request == 6_617_038_848


@pytest.mark.parametrize(("engine", "refused"), [("vllm@0.16", True), ("vllm@0.17", False)])
def test_0_14_to_0_16_check_the_whole_model_against_the_smallest_budget(engine: str, refused: bool) -> None:
    # pp 2, 0.5 GiB per worker: the first (sliding) group's 577 blocks × page × group width; 0.14-0.16 take the whole
    # model's width 10: 10 × 131,072 × 577 = 756,285,440 B > 536,870,912 (refused); 0.17 each worker's projected
    # groups, width 5 (31 layers a stage): 378,142,720 B fits (0.17.0 v1/core/kv_cache_utils.py:1558-1577)
    plan = _plan(engine, GIB // 2, pp=2)
    assert (plan.refusal is not None) == refused
    if refused:
        assert "(0.7 GiB KV cache is needed" in plan.refusal.message
