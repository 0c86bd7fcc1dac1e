"""Bandwidth of the probe's kernels: CUDA-event timings turned into GB/s (10^9 bytes per second).

write: bytes read from the new rows + bytes written into the pages; decode: the K/V bytes of every
cached token read once per KV head (the MLA latent once). Only on CUDA: interpreted Triton on CPU
says nothing about memory bandwidth, so CPU runs report null.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import torch

GB = 10**9


def time_s(fn: Callable[[], object], device: torch.device, iters: int = 20, warmup: int = 3) -> float:
    """Mean seconds per call, timed with CUDA events."""
    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call, unused-ignore]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call, unused-ignore]
    torch.cuda.synchronize(device)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1000.0 / iters


def _rows(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape, device=device).to(dtype)
    return torch.randint(0, 127, shape, device=device, dtype=dtype)


def write_gbps(ops: ModuleType, cache: torch.Tensor, device: torch.device, max_tokens: int = 1 << 16) -> float:
    """reshape_and_cache of up to 64k tokens into shuffled slots of one (NB, BS, H, W) cache view."""
    num_slots = cache.shape[0] * cache.shape[1]
    tokens = min(num_slots, max_tokens)
    slots = torch.randperm(num_slots, device=device)[:tokens]
    src = _rows((tokens, *cache.shape[2:]), cache.dtype, device)
    seconds = time_s(lambda: ops.reshape_and_cache(src, slots, cache), device)
    return 2 * src.numel() * src.element_size() / seconds / GB


def decode_gbps(ops: ModuleType, k: torch.Tensor, v: torch.Tensor, num_heads: int, device: torch.device,
                mla_rank: int | None = None, batch: int = 32, max_blocks_per_seq: int = 512) -> float:
    """paged_decode of `batch` sequences that together cover most of the pages, in shuffled order."""
    num_blocks, block_size = k.shape[0], k.shape[1]
    per_seq = max(1, min(num_blocks // batch, max_blocks_per_seq))
    batch = min(batch, num_blocks)
    table = torch.randperm(num_blocks, device=device)[: batch * per_seq].view(batch, per_seq).int()
    lens = torch.full((batch,), per_seq * block_size, dtype=torch.int32, device=device)
    q_dtype = k.dtype if k.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.float32
    q = torch.randn(batch, num_heads, k.shape[-1], device=device).to(q_dtype)
    scale = k.shape[-1] ** -0.5
    if mla_rank is not None:
        seconds = time_s(lambda: ops.paged_decode_mla(q, k, mla_rank, table, lens, scale), device)
        row_bytes = k.shape[-1] * k.element_size()
    else:
        seconds = time_s(lambda: ops.paged_decode(q, k, v, table, lens, scale), device)
        row_bytes = k.shape[2] * (k.shape[3] * k.element_size() + v.shape[3] * v.element_size())
    return batch * per_seq * block_size * row_bytes / seconds / GB


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
