"""The host (CPU) KV tier: host memory per rank, tokens held off-GPU, and no change to GPU admission.

Qwen3-8B at tp 2 (36 layers, 4 of 8 KV heads per rank × 128 × K,V × 2 B): 73,728 B per token per rank; a vLLM
block of 16 tokens 1,179,648 B. Rules: vLLM 0.33 ``config/cache.py:383-387`` (size for all ranks) and
``v1/kv_offload/cpu/spec.py:96-125`` (chunks of one block per worker, page-aligned); LMCache
``v1/cache_engine.py`` ``MixedMemoryAllocator(int(max_local_cpu_size * 1024**3))`` in every rank (LMCache#2901),
256-token chunks; SGLang 0.5.23 ``mem_cache/pool_host/base.py:220-229``, ``arg_groups/hicache_hook.py:119-122``;
TensorRT-LLM ``_torch/pyexecutor/resource_manager.py`` ``calculate_max_num_blocks``. GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity

GIB = 2**30


def tier(engine: str, **settings: Any) -> Any:
    return capacity("Qwen/Qwen3-8B", engine=engine, kv_budget_bytes=(20 * GIB,), tp=2, max_model_len=32768,
                    settings=Settings.of(**settings))


def test_vllm_native_offloading_splits_one_size_over_the_ranks() -> None:
    # chunk = round_up(1,179,648 × 2 workers, 4,096) = 2,359,296; 100 GiB // 2,359,296 = 45,511 blocks × 16 tokens
    r = tier("vllm", kv_offloading_bytes=100 * GIB)
    h = r.extras.host_tier
    assert (h.tokens, h.host_bytes_total) == (45_511 * 16, 45_511 * 2_359_296)
    assert h.host_bytes_per_rank == 45_511 * 2_359_296 // 2 and h.ranks == 2


def test_lmcache_allocates_the_full_size_in_every_rank() -> None:
    # 50 GiB per rank, 2 ranks = 100 GiB of host memory; 50 GiB // (256 × 73,728) = 2,844 chunks × 256 tokens
    h = tier("vllm", lmcache_cpu_bytes=50 * GIB).extras.host_tier
    assert (h.host_bytes_per_rank, h.host_bytes_total) == (50 * GIB, 100 * GIB)
    assert h.tokens == 53_687_091_200 // (256 * 73_728) * 256 == 728_064


def test_sglang_hicache_ratio_and_size() -> None:
    # device pool 20 GiB // 73,728 = 291,271 tokens; ratio 2.0: 582,542, + one pad page of 1 = 582,543
    ratio = tier("sglang", hicache_ratio=2.0)
    assert ratio.plan.kv_tokens == 291_271
    h = ratio.extras.host_tier
    assert h.tokens == 2 * 291_271 + 1 and h.host_bytes_per_rank == (2 * 291_271 + 1) * 73_728
    assert h.host_bytes_total == 2 * h.host_bytes_per_rank  # every TP rank has its own host pool
    # --hicache-size 100 GB (SGLang's unit is 10^9 B) per rank: 10^11 // 73,728 = 1,356,336, + 1
    assert tier("sglang", kv_offloading_bytes=10**11).extras.host_tier.tokens == 10**11 // 73_728 + 1 == 1_356_337


def test_trtllm_secondary_pool() -> None:
    # int(100 GiB / 73,728 / 32) = 45,511 blocks of 32 tokens, per rank
    h = tier("trtllm", kv_offloading_bytes=100 * GIB).extras.host_tier
    assert (h.tokens, h.host_bytes_per_rank, h.host_bytes_total) == (45_511 * 32, 100 * GIB, 200 * GIB)


@pytest.mark.parametrize(("engine", "settings"), [
    pytest.param("vllm", {"kv_offloading_bytes": 100 * GIB}, id="vllm-native"),
    pytest.param("vllm", {"lmcache_cpu_bytes": 50 * GIB}, id="lmcache"),
    pytest.param("sglang", {"hicache_ratio": 4.0}, id="sglang-hicache"),
    pytest.param("trtllm", {"kv_offloading_bytes": 100 * GIB}, id="trtllm-host-cache"),
])
def test_a_host_tier_adds_no_gpu_tokens(engine: str, settings: dict[str, Any]) -> None:
    plain, with_tier = tier(engine), tier(engine, **settings)
    assert with_tier.extras.host_tier.gpu_tokens_added == 0
    assert (with_tier.plan.kv_tokens, with_tier.plan.requests_at_max_len) == \
        (plain.plan.kv_tokens, plain.plan.requests_at_max_len)


def test_cpu_offload_moves_decoder_weights_off_the_gpu() -> None:
    # --cpu-offload-gb 4: 4 GiB of decoder-layer weights leave the GPU; the KV budget grows by as much
    plain = capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100", tp=2, max_model_len=32768)
    moved = capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100", tp=2, max_model_len=32768,
                     settings=Settings.of(cpu_offload_bytes=4 * GIB))
    term = next(t for t in moved.budget_terms if t.bytes < 0)
    assert term.bytes == -4 * GIB and term.kind == "weights"
    assert min(moved.kv_budget_bytes_per_gpu) - min(plain.kv_budget_bytes_per_gpu) == 4 * GIB


@pytest.mark.parametrize(("engine", "settings", "arg"), [
    pytest.param("vllm@0.11", {"kv_offloading_bytes": GIB}, "kv_offloading_bytes", id="vllm-0.11-no-native-tier"),
    pytest.param("vllm", {"hicache_ratio": 2.0}, "hicache_ratio", id="hicache-is-sglang"),
    pytest.param("trtllm", {"lmcache_cpu_bytes": GIB}, "lmcache_cpu_bytes", id="lmcache-not-trtllm"),
    pytest.param("vllm", {"lmcache_cpu_bytes": GIB, "kv_offloading_bytes": GIB}, "lmcache_cpu_bytes", id="one-tier"),
])
def test_host_tiers_an_engine_lacks_are_bad_input(engine: str, settings: dict[str, Any], arg: str) -> None:
    with pytest.raises(InputError) as err:
        tier(engine, **settings)
    assert err.value.arg_names == (arg,)
