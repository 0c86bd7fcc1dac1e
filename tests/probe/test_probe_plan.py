"""Launch plans (tiles from shared memory, split-KV from the SM count) and the never-a-traceback fallback."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kvplan.probe.kernels import plan
from kvplan.probe.kernels.combine import DoesNotFit, launch_first_fitting

H100 = plan.Device(sms=132, smem_bytes=232_448)
SMALL = plan.Device(sms=8, smem_bytes=48 * 1024)


def _smem(t: plan.Tile, width: int, qk: int, cache_bytes: int, dot_bytes: int) -> int:
    return plan.buffers(t.stages) * t.tokens * width * cache_bytes + t.rows * (qk + t.tokens) * dot_bytes


@pytest.mark.parametrize("device", [H100, SMALL], ids=["h100", "48KB"])
@pytest.mark.parametrize(("group", "dk", "cache_bytes"), [(4, 128, 2), (71, 64, 2), (8, 128, 1), (1, 256, 2)])
def test_gqa_tiles_fit_the_device(device, group, dk, cache_bytes):
    tiles = plan.gqa_tiles(group, dk, dk, cache_bytes, 2, device)
    assert tiles and all(t.rows >= 16 and t.rows >= min(group, 128) for t in tiles)
    first = tiles[0]
    assert _smem(first, 2 * dk, dk, cache_bytes, 2) <= device.smem_bytes
    assert first.tokens * 2 * dk * cache_bytes <= 64 * 1024 or first.tokens == 16


def test_triton_buffers_per_num_stages():
    """The K/V loads sit one level below the block-table load: triton 3.6 gives them ceil((stages - 2) / 2)
    buffers (read off the compiled kernels' shared-memory allocations: benchmarks/kernel_report.py)."""
    assert [plan.buffers(s) for s in (1, 2, 3, 4, 5, 6, 7)] == [1, 1, 1, 1, 2, 2, 3]


@pytest.mark.parametrize(("dk", "cache_bytes", "depth"), [(128, 1, 3), (128, 2, 1), (64, 2, 3)])
def test_tiles_keep_up_to_96k_in_flight(dk, cache_bytes, depth):
    """fp8 Llama (32 KB tiles): three in flight; bf16 Llama (64 KB tiles): one, as measured in run 3."""
    first = plan.gqa_tiles(4, dk, dk, cache_bytes, 2, H100)[0]
    assert plan.buffers(first.stages) == depth
    assert depth == 1 or depth * first.tokens * 2 * dk * cache_bytes <= plan.IN_FLIGHT
    assert plan.gqa_tiles(4, dk, dk, cache_bytes, 2, H100, depth=1)[0].stages == 3  # the dequantizing formats


def test_llama_tile_is_the_measured_best():
    """On an H100 (benchmarks/results/h100-run1) 128 tokens × 8 warps × 3 stages read bf16 Llama pages fastest."""
    assert plan.gqa_tiles(4, 128, 128, 2, 2, H100)[0] == plan.Tile(16, 128, 8, 3)


@pytest.mark.parametrize("heads", [1, 16, 20, 128])
@pytest.mark.parametrize("device", [H100, SMALL], ids=["h100", "48KB"])
def test_mla_tiles_tile_the_heads_and_fit(heads, device):
    tiles = plan.mla_tiles(heads, 512, 64, 2, 2, device)
    assert tiles[0].rows <= max(16, plan.pow2(heads)) and tiles[0].rows <= 64  # 128 heads: two programs or more
    fitting = [t for t in tiles if _smem(t, 576, 576, 2, 2) <= device.smem_bytes]
    assert fitting or tiles == [plan.Tile(16, 16, 8, 1)]  # a device too small still gets one last try


@pytest.mark.parametrize(("programs", "max_tokens", "count"), [
    (8, 32768, 32),  # batch 1 × 8 KV heads at 32k: 32 splits of 1024 tokens
    (256, 8192, 5),  # batch 32 × 8 heads at 8k: enough programs for ~8 waves with 5 splits
    (1024, 32768, 2),
    (8, 2048, 8),  # short context: splits no shorter than 256 tokens
    (10_000, 32768, 1),  # the grid already fills the GPU many times
    (1, 32768, 128),  # one KV head at batch 1 (Llama-70B at TP 8, MLA): as many splits as allowed
])
def test_splits_follow_the_sm_count(programs, max_tokens, count):
    s = plan.plan_splits(programs, max_tokens, 128, H100)
    assert s.count == count
    assert s.tokens % 128 == 0 and s.count * s.tokens >= max_tokens > (s.count - 1) * s.tokens


def test_forced_splits_and_the_cap():
    assert plan.plan_splits(1, 4096, 64, H100, forced=3).count == 3
    assert plan.plan_splits(1, 1 << 20, 16, H100, forced=10_000).count <= plan.MAX_SPLITS
    assert plan.plan_splits(4, 100, 16, plan.CPU).count == 1  # one program at a time: no reason to split


def test_a_refused_tile_falls_back_and_none_fitting_is_one_line():
    from triton.runtime.errors import OutOfResources

    tried = []

    def launch(tile: int) -> None:
        tried.append(tile)
        if tile > 16:
            raise OutOfResources(tile * 4096, 232_448, "shared memory")

    assert launch_first_fitting(launch, [64, 32, 16], key="t1") == 16
    assert launch_first_fitting(launch, [64, 32, 16], key="t1") == 16
    assert tried == [64, 32, 16, 16]  # a refused tile is not retried for the same key
    with pytest.raises(DoesNotFit, match="no tile fits") as info:
        launch_first_fitting(launch, [64, 32], key="t2")
    assert "\n" not in str(info.value)
