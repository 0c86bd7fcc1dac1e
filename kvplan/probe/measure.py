"""Measured bytes: what the tensors take, as torch and the CUDA driver see it.

- CPU: the bytes of the tensors' distinct storages (``untyped_storage().nbytes()``).
- CUDA: ``memory_allocated`` before/after (exact tensor bytes, rounded by the caching allocator to
  512 B), ``memory_reserved`` (the allocator's segments) and ``mem_get_info`` (the driver's free
  memory, so what the rest of the GPU loses). The last two are reported, never compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from kvplan.probe.allocate import Allocator, CacheShape, Tensors, allocate_group


@dataclass(frozen=True, slots=True)
class Reading:
    allocated_bytes: int
    reserved_bytes: int
    free_bytes: int


@dataclass(frozen=True, slots=True)
class Measured:
    measured_bytes: int
    reserved_bytes: int | None
    driver_bytes: int | None


def read(device: torch.device) -> Reading | None:
    """The allocator's and the driver's view of one CUDA device; None on CPU."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    free_bytes, _ = torch.cuda.mem_get_info(device)
    return Reading(torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device), free_bytes)


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors` (views of one storage count once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def all_tensors(layers: list[Tensors]) -> list[torch.Tensor]:
    return [t for layer in layers for t in layer.values()]


def allocate_measured(shape: CacheShape, device: torch.device, alloc: Allocator | None = None,
                      ) -> tuple[list[Tensors], Measured]:
    """Allocate one group and measure it: allocator delta on CUDA, storage bytes on CPU."""
    before = read(device)
    layers = allocate_group(shape, device, alloc)
    after = read(device)
    if before is None or after is None:
        return layers, Measured(storage_bytes(all_tensors(layers)), None, None)
    return layers, Measured(after.allocated_bytes - before.allocated_bytes,
                            after.reserved_bytes - before.reserved_bytes, before.free_bytes - after.free_bytes)


def release(device: torch.device) -> None:
    """Give cached blocks back to the driver so the next model's driver view starts clean."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
