"""The /dev/shm vLLM's processes on one node map (vLLM 0.25.0): its message queues are shared-memory ring buffers of
``(max_chunk_bytes + 1 + readers) × max_chunks`` bytes (``distributed/device_communicators/shm_broadcast.py:277-279``):
- the scheduler's broadcast to every worker: chunks of VLLM_MQ_MAX_CHUNK_BYTES_MB (16 MiB, ``envs.py:213``), 10 of
  them (``shm_broadcast.py:374``), read by every local rank (``v1/executor/multiproc_executor.py:151-156``);
- each worker's response queue: ``MessageQueue(1, 1)`` (``multiproc_executor.py:571``), 24 MiB × 10 chunks
  (``shm_broadcast.py:373-374``);
- the TP group's broadcaster where it has more than one rank: 4 MiB × 6 (``distributed/parallel_state.py:497-500``);
and NCCL's segments beside them (``kvplan.engines.protocol.NCCL_SHM_BYTES``).
"""

from __future__ import annotations

MIB = 1024**2


def ring(chunk: int, chunks: int, readers: int) -> int:
    return (chunk + 1 + readers) * chunks


def message_queues(ranks: int) -> int:
    """The bytes of vLLM's message queues on a node of `ranks` workers."""
    broadcast = ring(16 * MIB, 10, ranks)
    responses = ranks * ring(24 * MIB, 10, 1)
    group = ring(4 * MIB, 6, ranks) if ranks > 1 else 0
    return broadcast + responses + group
