"""Bandwidth of the probe's kernels: CUDA-event timings turned into GB/s (10^9 bytes per second).

write: bytes read from the new rows + bytes written into the pages; decode: the bytes of every cached
token's pages (K/V of every KV head, or the MLA latent, scales included) read once. Only on CUDA:
interpreted Triton on CPU says nothing about memory bandwidth, so CPU runs report null.

The planning numbers: ``decode_step_s`` is one decode step over every layer's allocated pages
(sequences that together cover all blocks), and ``floor_s(bytes, gbps)`` the time a step that reads
``bytes`` of KV cannot beat at a bandwidth (the measured one, or the catalog's peak).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from types import ModuleType

import torch

from kvplan.probe.data import random_data
from kvplan.probe.pages import Pages

GB = 10**9


def time_s(fn: Callable[[], object], device: torch.device, iters: int = 20, warmup: int = 3) -> float:
    """Median seconds per call over `iters` calls, each timed with CUDA events, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call, unused-ignore]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call, unused-ignore]
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)) / 1000.0)
    return statistics.median(times)


def write_gbps(ops: ModuleType, cache: torch.Tensor, device: torch.device, max_tokens: int = 1 << 16) -> float:
    """reshape_and_cache of up to 64k tokens into shuffled slots of one (NB, BS, H, W) cache view."""
    num_slots = cache.shape[0] * cache.shape[1]
    tokens = min(num_slots, max_tokens)
    slots = torch.randperm(num_slots, device=device)[:tokens]
    src = random_data((tokens, *cache.shape[2:]), cache.dtype, torch.Generator().manual_seed(0), device=device)
    seconds = time_s(lambda: ops.reshape_and_cache(src, slots, cache), device)
    return 2 * src.numel() * src.element_size() / seconds / GB


def full_batch(pages: Pages, num_heads: int, device: torch.device, batch: int,
               max_blocks_per_seq: int | None = None) -> tuple[Callable[[ModuleType], object], int]:
    """A decode of `batch` sequences over shuffled blocks that together cover the pages (up to
    max_blocks_per_seq each): (call, bytes it reads)."""
    per_seq = max(1, pages.num_blocks // batch)
    per_seq = min(per_seq, max_blocks_per_seq) if max_blocks_per_seq else per_seq
    batch = min(batch, pages.num_blocks)
    table = torch.randperm(pages.num_blocks, device=device)[: batch * per_seq].view(batch, per_seq).int()
    lens = torch.full((batch,), per_seq * pages.block_size, dtype=torch.int32, device=device)
    q_dtype = torch.float32 if pages.k.dtype == torch.float32 else torch.bfloat16
    width = pages.q_width or pages.k.shape[-1]
    q = torch.randn(batch, num_heads, width, device=device).to(q_dtype)
    tokens = batch * per_seq * pages.block_size
    return (lambda ops: pages.decode(ops, q, table, lens, width**-0.5)), tokens * pages.token_bytes()


def decode_gbps(ops: ModuleType, pages: Pages, num_heads: int, device: torch.device, batch: int = 32,
                max_blocks_per_seq: int = 512) -> float:
    """paged_decode of `batch` sequences that together cover most of the pages, in shuffled order."""
    call, read_bytes = full_batch(pages, num_heads, device, batch, max_blocks_per_seq)
    return read_bytes / time_s(lambda: call(ops), device) / GB


def decode_step_s(ops: ModuleType, layers: list[Pages], num_heads: int, device: torch.device,
                  batch: int = 32) -> tuple[float, int]:
    """(seconds, bytes) of one decode step over every given layer's whole pages, one launch per layer."""
    calls = [full_batch(pages, num_heads, device, batch) for pages in layers]

    def step() -> None:
        for call, _ in calls:
            call(ops)

    return time_s(step, device, iters=5, warmup=1), sum(read for _, read in calls)


def floor_s(read_bytes: int, gbps: float | None) -> float | None:
    """The least time a step that reads `read_bytes` can take at `gbps` (None without a bandwidth)."""
    return read_bytes / (gbps * GB) if gbps else None


def peak_gbps(device: torch.device) -> float | None:
    """The catalog's peak memory bandwidth of this GPU (kvplan.planning.gpus), None when unknown."""
    if device.type != "cuda":
        return None
    try:
        from kvplan.planning import gpus

        gpu = gpus.lookup_gpu(torch.cuda.get_device_name(device))
        return float(gpu.bandwidth_bytes_per_s) / GB
    except Exception:  # the catalog is optional here: no entry or no module means no peak to compare with
        return None
