"""Tensor parallel on a real torch.distributed runtime: every rank allocates its own shard.

Two ways in, one worker body: ``spawn`` starts the ranks itself (torch.multiprocessing, a free
localhost port), ``under_torchrun`` joins the group torchrun set up (RANK / WORLD_SIZE /
LOCAL_RANK). Backends: gloo on CPU, nccl on GPUs. Every rank probes every target, then all ranks
exchange their results (all_gather_object) so rank 0 can report per-rank bytes against the per-GPU
prediction: replicated KV heads and replicated MLA latents show up as measured memory.
"""

from __future__ import annotations

import os
import pickle
import socket
import tempfile
from typing import Any

import torch
import torch.distributed as dist

from kvplan.probe.compare import ProbeResult
from kvplan.probe.run import ProbeOptions, probe_model

Targets = list[tuple[str, str]]


def torchrun_world() -> tuple[int, int, int] | None:
    """(rank, world_size, local_rank) when launched by torchrun, else None."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return rank, world, int(os.environ.get("LOCAL_RANK", rank))


def rank_device(device: torch.device, local_rank: int) -> torch.device:
    """CPU ranks share the CPU; GPU rank r takes the r-th device after the one asked for."""
    if device.type != "cuda":
        return device
    return torch.device("cuda", (device.index or 0) + local_rank)


def _probe_and_gather(targets: Targets, opts: ProbeOptions, device: torch.device, rank: int,
                      world: int) -> list[ProbeResult]:
    """Probe every target on this rank, then give every rank everyone's results (ordered by model, rank)."""
    mine = [probe_model(model, kv_dtype, opts, device, tp=world, rank=rank) for model, kv_dtype in targets]
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, mine)
    by_rank = [list(r) for r in gathered]
    return [by_rank[r][i] for i in range(len(targets)) for r in range(world)]


def _init(backend: str, device: torch.device, **kwargs: Any) -> None:
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, **kwargs)


def _worker(rank: int, world: int, port: int, targets: Targets, opts: ProbeOptions, device_str: str,
            out_path: str) -> None:
    device = rank_device(torch.device(device_str), rank)
    backend = "nccl" if device.type == "cuda" else "gloo"
    _init(backend, device, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        results = _probe_and_gather(targets, opts, device, rank, world)
        if rank == 0:  # a file, not a queue: a full pipe would block rank 0 while the parent waits in join
            with open(out_path, "wb") as f:
                pickle.dump(results, f)
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(world: int, targets: Targets, opts: ProbeOptions, device: torch.device) -> list[ProbeResult]:
    """Start `world` ranks, probe on each, and return every rank's results (from rank 0)."""
    from torch.multiprocessing.spawn import start_processes

    with tempfile.TemporaryDirectory(prefix="kvplan-probe-") as tmp:
        out_path = os.path.join(tmp, "results.pickle")
        args = (world, _free_port(), targets, opts, str(device), out_path)
        start_processes(_worker, args=args, nprocs=world, join=True,  # type: ignore[no-untyped-call, unused-ignore]
                        start_method="spawn")
        with open(out_path, "rb") as f:
            results: list[ProbeResult] = pickle.load(f)
    return results


def under_torchrun(targets: Targets, opts: ProbeOptions, device: torch.device) -> tuple[int, list[ProbeResult]]:
    """Join torchrun's process group; returns (this rank, every rank's results)."""
    world_info = torchrun_world()
    assert world_info is not None
    rank, world, local_rank = world_info
    device = rank_device(device, local_rank)
    _init("nccl" if device.type == "cuda" else "gloo", device, init_method="env://")
    try:
        return rank, _probe_and_gather(targets, opts, device, rank, world)
    finally:
        dist.destroy_process_group()
