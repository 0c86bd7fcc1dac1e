"""The host (CPU) tier behind the GPU's KV cache: host memory per rank and the tokens it holds off-GPU.

A host tier keeps evicted or offloaded blocks for reuse (prefix hits); it adds no GPU tokens, so the
engine admits exactly as many requests as without it. How the size is read differs by engine:
- vLLM 0.33 ``--kv-offloading-size`` (native ``OffloadingConnector``): GiB for all ranks together
  (``config/cache.py:383-387``); one chunk holds one block of every worker, page-aligned, so the tier holds
  ``size // round_up(block bytes × world, 4096)`` blocks (``v1/kv_offload/cpu/spec.py:96-125``);
- LMCache ``max_local_cpu_size``: allocated by every rank in full (``cache_engine.py``
  ``MixedMemoryAllocator(int(max_local_cpu_size * 1024**3))``; LMCache issue #2901), each rank storing its
  own shard of a token in 256-token chunks: host memory grows with TP, the tokens held do not;
- SGLang HiCache (``--enable-hierarchical-cache``): per rank, ``--hicache-size`` over the rank's bytes per
  token, else ``--hicache-ratio`` (2.0) × the device pool, plus one pad page
  (``mem_cache/pool_host/base.py:220-229``, ``arg_groups/hicache_hook.py:119-122`` in 0.5.23);
- TensorRT-LLM ``host_cache_size`` (bytes, per rank): ``int(size / bytes per token / tokens_per_block)``
  secondary blocks (``_torch/pyexecutor/resource_manager.py`` ``calculate_max_num_blocks``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engines.base import EnginePlan
from kvplan.engines.settings import Settings
from kvplan.errors import InputError
from kvplan.units import cdiv

LMCACHE_CHUNK_TOKENS = 256  # LMCache chunk_size default
HICACHE_RATIO = 2.0  # SGLang --hicache-ratio default (0.5.23, host memory mode "full")
PAGE_ALIGNMENT = 4096  # vLLM SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT (mmap.PAGESIZE on x86-64)


@dataclass(frozen=True, kw_only=True)
class HostTier:
    """The host tier of one replica (JSON ``host_tier``)."""

    backend: str
    ranks: int  # processes that hold a part of the tier (tp × pp)
    host_bytes_per_rank: int
    host_bytes_total: int
    tokens: int  # tokens of KV the tier holds off-GPU
    gpu_tokens_added: int  # always 0: admission is decided by the GPU pool
    rule: str


def _bytes_per_token(plan: EnginePlan) -> int:
    if not plan.block_size or not plan.page_bytes:
        raise InputError(f"{plan.engine} keeps a contiguous cache: kvplan models no host tier (kv_offloading_bytes) "
                         "for it", arg="kv_offloading_bytes")
    return plan.page_bytes // plan.block_size


def lmcache(plan: EnginePlan, size: int, ranks: int) -> HostTier:
    chunk = LMCACHE_CHUNK_TOKENS * _bytes_per_token(plan)
    tokens = size // chunk * LMCACHE_CHUNK_TOKENS
    return HostTier(backend="LMCache (local CPU)", ranks=ranks, host_bytes_per_rank=size,
                    host_bytes_total=size * ranks, tokens=tokens, gpu_tokens_added=0,
                    rule=f"every rank allocates max_local_cpu_size {size:,} B; {size:,} // ({LMCACHE_CHUNK_TOKENS} × "
                         f"{_bytes_per_token(plan):,} B per token per rank) chunks × {LMCACHE_CHUNK_TOKENS} tokens")


def vllm_native(plan: EnginePlan, size: int, ranks: int) -> HostTier:
    chunk = cdiv(plan.page_bytes * ranks, PAGE_ALIGNMENT) * PAGE_ALIGNMENT
    blocks = size // chunk
    return HostTier(backend="vLLM OffloadingConnector (CPU)", ranks=ranks, host_bytes_per_rank=blocks * chunk // ranks,
                    host_bytes_total=blocks * chunk, tokens=blocks * plan.block_size, gpu_tokens_added=0,
                    rule=f"kv_offloading_size {size:,} B for all {ranks} rank(s) // chunk round_up({plan.page_bytes:,} × "
                         f"{ranks}, 4096) = {blocks:,} blocks × {plan.block_size} tokens")


def sglang_hicache(plan: EnginePlan, s: Settings, ranks: int) -> HostTier:
    per_token, page = _bytes_per_token(plan), plan.block_size
    size = s.kv_offloading_bytes
    tokens = size // per_token if size else int(plan.kv_tokens * (s.sglang.hicache_ratio or HICACHE_RATIO))
    tokens = (tokens // page + 1) * page
    how = f"hicache_size {size:,} B // {per_token:,} B per token" if size else \
        f"device pool {plan.kv_tokens:,} × hicache_ratio {s.sglang.hicache_ratio or HICACHE_RATIO}"
    return HostTier(backend="SGLang HiCache (host pool)", ranks=ranks, host_bytes_per_rank=tokens * per_token,
                    host_bytes_total=tokens * per_token * ranks, tokens=tokens, gpu_tokens_added=0,
                    rule=f"per rank: {how}, + one pad page of {page}")


def trtllm_host(plan: EnginePlan, size: int, ranks: int) -> HostTier:
    per_token = _bytes_per_token(plan)
    blocks = int(size / per_token / plan.block_size)
    return HostTier(backend="TensorRT-LLM secondary (host) pool", ranks=ranks, host_bytes_per_rank=size,
                    host_bytes_total=size * ranks, tokens=blocks * plan.block_size, gpu_tokens_added=0,
                    rule=f"per rank: int(host_cache_size {size:,} / {per_token:,} B per token / {plan.block_size}) "
                         f"= {blocks:,} blocks")


def host_tier(engine: str, plan: EnginePlan, s: Settings, ranks: int) -> HostTier | None:
    """The host tier an engine builds from these settings (None: none asked)."""
    if s.sglang.hicache_ratio is not None and engine != "sglang":
        raise InputError(f"hicache_ratio is SGLang's HiCache; {engine} takes kv_offloading_bytes", arg="hicache_ratio")
    native = s.kv_offloading_bytes is not None or s.sglang.hicache_ratio is not None
    if s.lmcache_cpu_bytes is not None and native:
        raise InputError("give one host tier: lmcache_cpu_bytes or kv_offloading_bytes", arg="lmcache_cpu_bytes")
    if s.lmcache_cpu_bytes is not None:
        if engine not in ("vllm", "sglang"):
            raise InputError(f"LMCache (lmcache_cpu_bytes) connects to vLLM and SGLang, not {engine}",
                             arg="lmcache_cpu_bytes")
        return lmcache(plan, s.lmcache_cpu_bytes, ranks)
    if not native:
        return None
    if engine == "sglang":
        return sglang_hicache(plan, s, ranks)
    assert s.kv_offloading_bytes is not None
    if engine == "vllm":
        return vllm_native(plan, s.kv_offloading_bytes, ranks)
    if engine == "trtllm":
        return trtllm_host(plan, s.kv_offloading_bytes, ranks)
    raise InputError(f"kvplan models no host KV tier (kv_offloading_bytes) for {engine}", arg="kv_offloading_bytes")
