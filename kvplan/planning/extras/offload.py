"""The host (CPU) memory a replica pins: its host KV tier (``kvplan.engines.host_tier``, one rule per connector) and
the weights it keeps in host memory (``--cpu-offload-gb``, per GPU), per rank, per node and per replica, against the
node's RAM.

``--kv-offloading-size`` (vLLM) is KV: a total over every rank of the replica. ``--cpu-offload-gb`` is weights:
per GPU. Both are pinned host memory and both count against the node. A node that cannot hold what its ranks pin
is a refusal (exit 1, the numbers shown): the engine dies at start (SGLang's own check) or the kernel's OOM killer
ends it (SemiAnalysisAI/InferenceX PR #3004: a HiCache ratio of 1.5 pinned 679 GB on a TP 4 node).
"""

from __future__ import annotations

from typing import NamedTuple

from kvplan.engines import Engine
from kvplan.engines.base import EnginePlan, Request
from kvplan.engines.host_tier import CONNECTORS, HostTier, TierInput
from kvplan.engines.settings import Settings
from kvplan.errors import InputError
from kvplan.records import Record
from kvplan.specs import MLAAttn, parts
from kvplan.units import GIB, cdiv, format_gib

TIB = 1024 * GIB


class Server(NamedTuple):
    gpus: int
    host_memory_bytes: int
    source: str


# The usual server of a GPU (its vendor's reference system): GPUs per node and system memory, for the default
# --host-mem. DGX data sheets: DGX H100 / H200 / B200 "2TB" of system memory, 8 GPUs (32 × 64 GB DIMMs: 2 TiB);
# DGX A100 640GB "2TB", DGX A100 320GB "1TB".
SERVERS = {
    "H100-SXM": Server(8, 2 * TIB, "NVIDIA DGX H100: 8 GPUs, 2 TB system memory"),
    "H200": Server(8, 2 * TIB, "NVIDIA DGX H200: 8 GPUs, 2 TB system memory"),
    "B200": Server(8, 2 * TIB, "NVIDIA DGX B200: 8 GPUs, 2 TB system memory (4 TB option)"),
    "A100-80G": Server(8, 2 * TIB, "NVIDIA DGX A100 640GB: 8 GPUs, 2 TB system memory"),
    "A100-40G": Server(8, TIB, "NVIDIA DGX A100 320GB: 8 GPUs, 1 TB system memory"),
}
GPUS_PER_NODE = 8  # where the catalog knows no server


class HostMemory(Record):
    """What a replica pins in host memory, per rank and per node, against the node (JSON ``host_memory``)."""

    ranks: int  # processes of one replica (tp × pp)
    ranks_per_node: int
    nodes: int
    kv_tier_bytes_per_rank: int  # the host KV tier (--kv-offloading-size, --hicache-*, LMCache, Mooncake)
    weights_offload_bytes_per_rank: int  # --cpu-offload-gb: weights, per GPU
    pinned_bytes_per_rank: int
    pinned_bytes_per_node: int
    pinned_bytes_per_replica: int
    reserve_bytes_per_node: int  # what the engine's own check keeps free (SGLang HiCache: 10 GiB)
    node_memory_bytes: int | None  # --host-mem, else the usual server's (None: unknown)
    node_memory_source: str
    fits: bool | None  # None: no node memory to check against
    refusal: str | None


def connector(profile: Engine, s: Settings) -> str | None:
    """The connector these settings ask of this engine (None: no host tier); one the engine has no such tier for
    is bad input."""
    native = s.kv_offloading_bytes is not None or s.sglang.hicache_ratio is not None
    if s.sglang.hicache_ratio is not None and profile.native_host_tier != "hicache":
        raise InputError(f"hicache_ratio is SGLang's HiCache; {profile.version} takes kv_offloading_bytes",
                         arg="hicache_ratio")
    if s.lmcache_cpu_bytes is not None and (native or s.mooncake_segment_bytes is not None):
        raise InputError("give one host tier: lmcache_cpu_bytes or kv_offloading_bytes", arg="lmcache_cpu_bytes")
    asked, arg = (("mooncake", "mooncake_segment_bytes") if s.mooncake_segment_bytes is not None else
                  ("lmcache", "lmcache_cpu_bytes") if s.lmcache_cpu_bytes is not None else
                  (profile.native_host_tier, "kv_offloading_bytes") if native else (None, ""))
    if (native and asked is None) or (asked is not None and asked not in profile.host_tiers):
        raise InputError(f"kvplan models no host KV tier ({arg}) for {profile.version}; it takes "
                         f"{', '.join(sorted(profile.host_tiers)) or 'none'}", arg=arg)
    return asked


def host_tier(profile: Engine, request: Request, plan: EnginePlan) -> HostTier | None:
    """The host tier the engine builds from the request's settings (None: none asked, or no GPU pool)."""
    found = connector(profile, request.settings)
    if found is None or not plan.kv_tokens:
        return None
    mla = any(isinstance(p, MLAAttn) for spec in request.model.layer_specs for p in parts(spec))
    return CONNECTORS[found](TierInput(plan=plan, settings=request.settings, ranks=request.tp * request.pp,
                                       tp=request.tp, mla=mla))


def node_memory(gpu: str | None, given: int | None) -> tuple[int, int | None, str]:
    """GPUs per node, the node's memory and where it comes from."""
    server = SERVERS.get(gpu or "")
    gpus = server.gpus if server else GPUS_PER_NODE
    if given is not None:
        return gpus, given, "--host-mem"
    if server:
        return gpus, server.host_memory_bytes, f"the usual {gpu} server ({server.source}); give --host-mem for yours"
    return gpus, None, f"kvplan knows no usual server for {gpu or 'this GPU'}: give --host-mem to check the node"


def host_memory(tier: HostTier | None, weights_offload: int, ranks: int, gpu: str | None,
                given: int | None) -> HostMemory | None:
    """The replica's pinned host memory against its node (None: it pins none)."""
    if tier is None and not weights_offload:
        return None
    gpus, node, source = node_memory(gpu, given)
    per_node_ranks = min(ranks, gpus)
    kv = tier.host_bytes_per_rank if tier else 0
    per_rank = kv + weights_offload
    reserve = tier.reserve_bytes if tier else 0  # each rank checks what the node has left: one reserve a node
    pinned = per_rank * per_node_ranks
    fits = None if node is None else pinned + reserve <= node
    refusal = None if fits is not False or node is None else (
        f"host memory: {per_node_ranks} rank(s) per node pin {format_gib(pinned)} GiB ({format_gib(per_rank)} GiB "
        f"each{_parts(kv, weights_offload)}){_reserve(reserve)}, more than the node's {format_gib(node)} GiB")
    return HostMemory(ranks=ranks, ranks_per_node=per_node_ranks, nodes=cdiv(ranks, gpus), kv_tier_bytes_per_rank=kv,
                      weights_offload_bytes_per_rank=weights_offload, pinned_bytes_per_rank=per_rank,
                      pinned_bytes_per_node=pinned, pinned_bytes_per_replica=per_rank * ranks,
                      reserve_bytes_per_node=reserve, node_memory_bytes=node, node_memory_source=source, fits=fits,
                      refusal=refusal)


def _parts(kv: int, weights: int) -> str:
    return f": KV tier {format_gib(kv)} + weights (--cpu-offload-gb) {format_gib(weights)}" if kv and weights else ""


def _reserve(reserve: int) -> str:
    return f" and the engine keeps {format_gib(reserve)} GiB free" if reserve else ""


__all__ = ["HostMemory", "HostTier", "connector", "host_memory", "host_tier"]
