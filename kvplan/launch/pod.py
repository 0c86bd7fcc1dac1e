"""The pod one node of a replica runs in: its GPUs and the container memory it must request.

container memory = the engine's processes + the host memory its ranks pin (the host KV tier and weights kept in host
memory, ``kvplan.planning.extras.offload``) + ``/dev/shm`` (a memory-backed emptyDir counts against the container's
memory; the engine's own rule, ``Engine.shm_bytes``). KServe leaves container memory to the user (kserve PR #6086);
this is that figure. A replica over several nodes is one pod a node (a leader and its workers).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engines import get_engine
from kvplan.launch.write import engine_name
from kvplan.planning.capacity import CapacityResult
from kvplan.planning.extras.offload import GPUS_PER_NODE, SERVERS
from kvplan.units import GIB, cdiv

# kvplan's allowance for one rank's engine process in host memory (the CUDA driver and runtime, torch, the engine,
# tokenizer and the API server's share), not measured: give --process-mem with a measured RSS
PROCESS_BYTES_PER_RANK = 8 * GIB


@dataclass(frozen=True, kw_only=True)
class Pod:
    """One node's pod of a replica (JSON ``pod``)."""

    gpus: int  # GPUs the pod requests (the ranks on its node)
    pods: int  # pods of one replica (its nodes)
    process_bytes: int  # the engine's processes
    pinned_host_bytes: int  # the host KV tier and offloaded weights of the pod's ranks
    shm_bytes: int  # /dev/shm (emptyDir medium Memory)
    memory_bytes: int  # container memory request and limit: the sum
    rule: str


def pod(result: CapacityResult, process_bytes_per_rank: int | None = None) -> Pod:
    """The pod of one node of this answer's replica."""
    profile = get_engine(engine_name(result))
    ranks = profile.replica_gpus(result.cache.parallel) if result.cache is not None else result.tp * result.pp
    server = SERVERS.get(result.gpu or "")
    per_node = min(ranks, server.gpus if server else GPUS_PER_NODE)
    host = result.extras.host_memory
    pinned = host.pinned_bytes_per_node if host else 0
    shm, shm_rule = profile.shm_bytes(per_node)
    process = (process_bytes_per_rank or PROCESS_BYTES_PER_RANK) * per_node
    rule = (f"engine processes {per_node} × {process // per_node:,} B"
            f"{'' if process_bytes_per_rank else ' (kvplan allowance)'} + pinned host {pinned:,} B + /dev/shm "
            f"{shm:,} B ({shm_rule})")
    return Pod(gpus=per_node, pods=cdiv(ranks, per_node), process_bytes=process, pinned_host_bytes=pinned,
               shm_bytes=shm, memory_bytes=process + pinned + shm, rule=rule)
