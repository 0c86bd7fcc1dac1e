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


@pytest.mark.parametrize(("group", "dk", "cache_bytes", "depth"), [
    (4, 128, 1, 2), (8, 64, 1, 2),  # fp8 Llama/Qwen and gpt-oss: two tiles in flight
    (71, 64, 2, 2), (71, 64, 1, 2),  # Falcon's 128-row tiles
    (4, 128, 2, 1), (8, 64, 2, 1),  # 16-bit GQA: one, as run 3 measured best
])
def test_gqa_tiles_in_flight_as_measured(group, dk, cache_bytes, depth):
    """benchmarks/results/h100-run4: the depth that was fastest for each class of tile."""
    first = plan.gqa_tiles(group, dk, dk, cache_bytes, 2, H100)[0]
    assert plan.buffers(first.stages) == depth
    assert plan.gqa_tiles(group, dk, dk, cache_bytes, 2, H100, depth=1)[0].stages == 3  # dequantizing formats


@pytest.mark.parametrize(("heads", "cache_bytes", "stages"), [(16, 2, 5), (128, 2, 5), (16, 1, 2), (128, 1, 5)])
def test_mla_tiles_in_flight_as_measured(heads, cache_bytes, stages):
    """16-bit latents and 64-head tiles: two tiles in flight; fp8 at 16 heads keeps run 3's one (num_stages 2)."""
    assert plan.mla_tiles(heads, 512, 64, cache_bytes, 2, H100)[0].stages == stages


def test_splits_of_two_tiles_keep_one_buffer():
    deep = plan.gqa_tiles(8, 128, 128, 1, 2, H100)
    assert plan.buffers(plan.short_splits(deep, 256)[0].stages) == 1  # 2 tiles of 128
    assert plan.short_splits(deep, 1024)[0] == deep[0]


def test_a_depth_that_does_not_fit_falls_back_to_fewer_buffers():
    tight = plan.Device(sms=8, smem_bytes=48 * 1024)
    tile = plan.gqa_tiles(4, 128, 128, 1, 2, tight, depth=3)[0]
    assert plan.buffers(tile.stages) * tile.tokens * 256 + 16 * (128 + tile.tokens) * 2 <= tight.smem_bytes


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
