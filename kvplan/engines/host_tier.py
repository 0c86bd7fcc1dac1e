"""The host (CPU) KV tiers the engines connect to, one rule per connector, each read from its release's code.

A host tier keeps evicted or offloaded blocks for reuse (prefix hits); it adds no GPU tokens. Every rule gives the
pinned host bytes of each rank (the node and the replica are summed in ``kvplan.planning.extras.offload``):
- ``vllm_native``: vLLM ``--kv-offloading-size`` (GiB, a total over every rank: the world size), native backend;
- ``lmcache``: LMCache ``max_local_cpu_size`` (GiB, allocated by every rank, chunks of 256 tokens);
- ``hicache``: SGLang ``--enable-hierarchical-cache`` (per rank: ``--hicache-size`` or ``--hicache-ratio``);
- ``mooncake``: SGLang HiCache with ``--hicache-storage-backend mooncake``: the host pool above, and the rank's
  share of Mooncake's ``global_segment_size`` registered with the store;
- ``trtllm_host``: TensorRT-LLM ``kv_cache_config.host_cache_size`` (bytes, per rank: the secondary pool).
Which connectors an engine takes, and which one its own offloading flag means, are the engine's (``host_tiers``,
``native_host_tier``); this module never asks for an engine by its name.
"""

from __future__ import annotations

from kvplan.engines.base import EnginePlan
from kvplan.engines.settings import Settings
from kvplan.errors import InputError
from kvplan.records import Record
from kvplan.units import GIB, MIB, cdiv

LMCACHE_CHUNK_TOKENS = 256  # LMCache 0.5.6 v1/config.py:90 chunk_size default
LMCACHE_DEFAULT_GIB = 5.0  # LMCache 0.5.6 v1/config.py:96 max_local_cpu_size default
HICACHE_RATIO = 2.0  # SGLang 0.5.8 srt/server_args.py:504 --hicache-ratio default
PAGE_ALIGNMENT = 4096  # vLLM 0.25.0 v1/kv_offload/cpu/spec.py BLOCK_SIZE_ALIGNMENT (mmap.PAGESIZE on x86-64)
MOONCAKE_SEGMENT_DEFAULT = 4 * GIB  # SGLang 0.5.8 srt/environ.py:277 MOONCAKE_GLOBAL_SEGMENT_SIZE "4gb" (GiB:
# mooncake_store.py:63-75 multiplies "gb" by 1024**3)
MOONCAKE_LOCAL_BUFFER = 16 * MIB  # SGLang 0.5.8 mooncake_store.py:22 DEFAULT_LOCAL_BUFFER_SIZE, per rank

SOURCES = {
    "vllm_native": "vLLM 0.25.0 config/cache.py:182-186 (a total over all TP ranks), config/vllm.py:806-814 "
                   "(cpu_bytes_to_use = size × 2**30), v1/kv_offload/cpu/spec.py:63-92 (blocks = cpu_bytes_to_use // "
                   "round_up(block bytes × world_size, 4096))",
    "lmcache": "LMCache 0.5.6 v1/storage_backend/__init__.py:180-187 (every rank builds a LocalCPUBackend), "
               "v1/storage_backend/local_cpu_backend.py:380-403 (int(max_local_cpu_size × 1024**3); with MLA the "
               "first rank may take first_rank_max_local_cpu_size), v1/config.py:90,96 (chunk 256, 5.0 GiB)",
    "hicache": "SGLang 0.5.8 srt/mem_cache/memory_pool_host.py:150-158 (size = hicache_size × 1e9 // bytes per token, "
               "else device pool × ratio; + one page), :165-176 (refuses above available - 10 GiB), "
               "server_args.py:504-505 (ratio 2.0, size 0)",
    "mooncake": "SGLang 0.5.8 srt/mem_cache/storage/mooncake_store/mooncake_store.py:266-270 (per rank: "
                "global_segment_size // tp_size), :313-318 (setup with a 16 MiB local buffer); srt/environ.py:277 "
                "(4gb); the HiCache host pool in front: memory_pool_host.py:150-158",
    "trtllm_host": "TensorRT-LLM main @ 001541ba tensorrt_llm/_torch/pyexecutor/resource_manager.py "
                   "KVCacheManager.__init__ (max_tokens_secondary = host_cache_size // bytes per token; "
                   "blocks_in_secondary_pool = max_tokens_secondary // tokens_per_block), bytes per rank",
}


class HostTier(Record):
    """The host tier of one replica (JSON ``host_tier``)."""

    backend: str
    ranks: int  # processes that hold a part of the tier (tp × pp)
    host_bytes_per_rank: int  # pinned host memory of the most loaded rank
    host_bytes_total: int  # of the replica
    tokens: int  # tokens of KV the tier holds off-GPU
    gpu_tokens_added: int  # always 0: admission is decided by the GPU pool
    rule: str
    connector: str = ""  # vllm_native, lmcache, hicache, mooncake, trtllm_host
    source: str = ""  # the release and file:line the rule was read from
    flags: tuple[str, ...] = ()  # the launch flags or config lines that ask for it
    reserve_bytes: int = 0  # host memory the engine's own check keeps free per rank (SGLang: 10 GiB)


class TierInput(Record):
    """What a connector's rule reads (a record: no namedtuple code compiled at import, none built without a tier)."""

    plan: EnginePlan
    settings: Settings
    ranks: int  # tp × pp
    tp: int
    mla: bool  # the model's cache is an MLA latent (replicated over TP)


def bytes_per_token(plan: EnginePlan) -> int:
    if not plan.block_size or not plan.page_bytes:
        raise InputError(f"{plan.engine} keeps a contiguous cache: kvplan models no host tier for it",
                         arg="kv_offloading_bytes")
    return plan.page_bytes // plan.block_size


def _tier(c: TierInput, connector: str, backend: str, per_rank: int, tokens: int, rule: str,
          flags: tuple[str, ...], reserve: int = 0) -> HostTier:
    return HostTier(backend=backend, ranks=c.ranks, host_bytes_per_rank=per_rank, host_bytes_total=per_rank * c.ranks,
                    tokens=tokens, gpu_tokens_added=0, rule=rule, connector=connector, source=SOURCES[connector],
                    flags=flags, reserve_bytes=reserve)


def vllm_native(c: TierInput) -> HostTier:
    size = c.settings.kv_offloading_bytes or 0
    chunk = cdiv(c.plan.page_bytes * c.ranks, PAGE_ALIGNMENT) * PAGE_ALIGNMENT
    blocks = size // chunk
    return _tier(c, "vllm_native", "vLLM OffloadingConnector (CPU)", blocks * chunk // c.ranks,
                 blocks * c.plan.block_size,
                 f"kv_offloading_size {size:,} B for all {c.ranks} rank(s) // chunk round_up({c.plan.page_bytes:,} × "
                 f"{c.ranks}, 4096) = {blocks:,} blocks × {c.plan.block_size} tokens",
                 (f"--kv-offloading-size {size / GIB:g}", "--kv-offloading-backend native"))


def lmcache(c: TierInput) -> HostTier:
    size = c.settings.lmcache_cpu_bytes or 0
    per_token = bytes_per_token(c.plan)
    tokens = size // (LMCACHE_CHUNK_TOKENS * per_token) * LMCACHE_CHUNK_TOKENS
    mla = "; MLA: only the first rank stores (save_only_first_rank), the others allocate as much" if c.mla else ""
    return _tier(c, "lmcache", "LMCache (local CPU)", size, tokens,
                 f"every rank allocates max_local_cpu_size {size:,} B; {size:,} // ({LMCACHE_CHUNK_TOKENS} × "
                 f"{per_token:,} B per token per rank) chunks × {LMCACHE_CHUNK_TOKENS} tokens{mla}",
                 (f"LMCACHE_MAX_LOCAL_CPU_SIZE={size / GIB:g}", f"LMCACHE_CHUNK_SIZE={LMCACHE_CHUNK_TOKENS}"))


def _hicache_tokens(c: TierInput) -> tuple[int, str]:
    per_token, page, s = bytes_per_token(c.plan), c.plan.block_size, c.settings
    size, ratio = s.kv_offloading_bytes, s.sglang.hicache_ratio or HICACHE_RATIO
    tokens = size // per_token if size else int(c.plan.kv_tokens * ratio)
    how = f"hicache_size {size:,} B // {per_token:,} B per token" if size else \
        f"device pool {c.plan.kv_tokens:,} × hicache_ratio {ratio}"
    return (tokens // page + 1) * page, f"per rank: {how}, + one pad page of {page}"


def _hicache_flags(s: Settings) -> tuple[str, ...]:
    size = s.kv_offloading_bytes
    how = f"--hicache-size {size / 10**9:g}" if size else f"--hicache-ratio {s.sglang.hicache_ratio or HICACHE_RATIO}"
    return ("--enable-hierarchical-cache", how)


def hicache(c: TierInput) -> HostTier:
    tokens, rule = _hicache_tokens(c)
    return _tier(c, "hicache", "SGLang HiCache (host pool)", tokens * bytes_per_token(c.plan), tokens, rule,
                 _hicache_flags(c.settings), reserve=10 * GIB)


def mooncake(c: TierInput) -> HostTier:
    tokens, rule = _hicache_tokens(c)
    segment = c.settings.mooncake_segment_bytes or MOONCAKE_SEGMENT_DEFAULT
    share = segment // c.tp
    per_rank = tokens * bytes_per_token(c.plan) + share + MOONCAKE_LOCAL_BUFFER
    return _tier(c, "mooncake", "SGLang HiCache + Mooncake store", per_rank, tokens,
                 f"{rule}; + Mooncake global_segment_size {segment:,} B // tp {c.tp} = {share:,} B + a 16 MiB local "
                 "buffer (the master's metadata lives in its own process, not counted)",
                 (*_hicache_flags(c.settings), "--hicache-storage-backend mooncake",
                  f"MOONCAKE_GLOBAL_SEGMENT_SIZE={segment}"), reserve=10 * GIB)


def trtllm_host(c: TierInput) -> HostTier:
    size = c.settings.kv_offloading_bytes or 0
    per_token = bytes_per_token(c.plan)
    blocks = size // per_token // c.plan.block_size
    return _tier(c, "trtllm_host", "TensorRT-LLM secondary (host) pool", size, blocks * c.plan.block_size,
                 f"per rank: host_cache_size {size:,} B // {per_token:,} B per token // {c.plan.block_size} = "
                 f"{blocks:,} blocks", (f"kv_cache_config.host_cache_size: {size}",))


CONNECTORS = {"vllm_native": vllm_native, "lmcache": lmcache, "hicache": hicache, "mooncake": mooncake,
              "trtllm_host": trtllm_host}
