"""The host (CPU) KV tier: host memory per rank, tokens held off-GPU, and no change to GPU admission.

Qwen3-8B at tp 2 (36 layers, 4 of 8 KV heads per rank × 128 × K,V × 2 B): 73,728 B per token per rank; a vLLM
block of 16 tokens 1,179,648 B. Rules (``kvplan.engines.host_tier.SOURCES``, each with its release and file:line):
vLLM 0.25.0 ``config/cache.py:182-186`` (size for all ranks) and ``v1/kv_offload/cpu/spec.py:63-92`` (chunks of one
block per worker, page-aligned); LMCache 0.5.6 ``v1/storage_backend/local_cpu_backend.py:380-403`` in every rank
(LMCache#2901), 256-token chunks; SGLang 0.5.8 ``srt/mem_cache/memory_pool_host.py:150-176`` (and its 10 GiB
reserve), Mooncake's segment ``mooncake_store.py:266-270``; TensorRT-LLM ``resource_manager.py`` KVCacheManager.
GiB = 2**30.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.engines.host_tier import CONNECTORS, SOURCES
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity

GIB = 2**30


def tier(engine: str, host_memory_bytes: int | None = None, **settings: Any) -> Any:
    return capacity("Qwen/Qwen3-8B", engine=engine, kv_budget_bytes=(20 * GIB,), tp=2, max_model_len=32768,
                    settings=Settings.of(**settings), host_memory_bytes=host_memory_bytes)


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


# SGLang HiCache at ratio 2.0 (above): 582,543 tokens × 73,728 B = 42,949,730,304 B (40.00 GiB) per rank
HICACHE_RANK = 582_543 * 73_728


@pytest.mark.parametrize(("node", "fits"), [
    # 2 ranks × 42,949,730,304 = 85,899,460,608 B + SGLang's 10 GiB reserve = 96,636,878,848 B
    pytest.param(128 * GIB, True, id="128GiB-holds-it"),
    pytest.param(90 * GIB, False, id="90GiB-short-of-the-reserve"),  # 96,636,878,848 > 96,636,764,160
    pytest.param(64 * GIB, False, id="64GiB"),
])
def test_the_node_holds_what_every_rank_pins(node: int, fits: bool) -> None:
    r = tier("sglang", host_memory_bytes=node, hicache_ratio=2.0)
    m = r.extras.host_memory
    assert (m.pinned_bytes_per_rank, m.pinned_bytes_per_node, m.ranks_per_node) == (HICACHE_RANK, 2 * HICACHE_RANK, 2)
    assert m.reserve_bytes_per_node == 10 * GIB and m.fits is fits and m.node_memory_bytes == node
    if fits:
        assert r.plan.refusal is None and m.refusal is None
    else:  # the refusal states the numbers: per node, per rank, the reserve and the node
        assert r.plan.refusal is not None and r.plan.refusal.message == m.refusal
        assert all(s in m.refusal for s in ("80.00 GiB", "40.00 GiB each", "10.00 GiB", f"{node / GIB:.2f} GiB"))


def test_mooncake_adds_the_ranks_share_of_the_segment() -> None:
    # HiCache pool 42,949,730,304 + global_segment_size 8 GiB // tp 2 (4,294,967,296) + 16 MiB local buffer
    h = tier("sglang", hicache_ratio=2.0, mooncake_segment_bytes=8 * GIB).extras.host_tier
    assert h.host_bytes_per_rank == HICACHE_RANK + 4 * GIB + 16 * 2**20 == 47_261_474_816
    assert h.connector == "mooncake" and "--hicache-storage-backend mooncake" in h.flags


def test_offloaded_weights_count_per_gpu_beside_the_kv_tier() -> None:
    # --cpu-offload-gb 4 is weights, per GPU; --kv-offloading-size 100 is KV, for both ranks (above: 45,511 chunks)
    r = capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100", tp=2, max_model_len=32768,
                 settings=Settings.of(cpu_offload_bytes=4 * GIB, kv_offloading_bytes=100 * GIB))
    m = r.extras.host_memory
    assert m.weights_offload_bytes_per_rank == 4 * GIB
    assert m.kv_tier_bytes_per_rank == 45_511 * 2_359_296 // 2
    assert m.pinned_bytes_per_node == 2 * (4 * GIB + 45_511 * 2_359_296 // 2)
    # no --host-mem: the DGX H100's 2 TiB, said where it comes from
    assert m.node_memory_bytes == 2 * 2**40 and "DGX H100" in m.node_memory_source and m.fits


def test_a_gpu_without_a_usual_server_is_not_checked() -> None:
    r = capacity("Qwen/Qwen3-8B", engine="vllm", gpu="L40S", tp=2, max_model_len=8192,
                 settings=Settings.of(cpu_offload_bytes=GIB))
    assert r.extras.host_memory.fits is None and "--host-mem" in r.extras.host_memory.node_memory_source


def test_every_connector_cites_a_release_and_file_lines() -> None:
    assert set(SOURCES) == set(CONNECTORS)
    for name, source in SOURCES.items():
        assert re.search(r"(vLLM|LMCache|SGLang|TensorRT-LLM) (\d+\.\d+\.\d+|main @ [0-9a-f]{8})", source), name
        assert re.search(r"\.py(:\d+)?", source), name
