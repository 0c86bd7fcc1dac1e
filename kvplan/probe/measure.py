"""Measured bytes: what the tensors take, as torch and the CUDA driver see it.

- CPU: the bytes of the tensors' distinct storages (``untyped_storage().nbytes()``).
- CUDA: the caching allocator's ``requested_bytes`` before/after (the bytes the tensors asked
  for, to the byte: what is compared), ``memory_allocated`` (its blocks: requests rounded to 512 B,
  and a block cut from a fresh segment keeps a remainder of up to 1 MiB it does not split off:
  Mamba states of 3 MiB per layer measured 1 MiB more each), ``memory_reserved`` (its segments) and
  ``mem_get_info`` (the driver's free memory, so what the rest of the GPU loses). The last three are
  reported, never compared."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from kvplan.probe.allocate import Allocator, CacheShape, Tensors, allocate_group


@dataclass(frozen=True, slots=True)
class Reading:
    requested_bytes: int
    allocated_bytes: int
    reserved_bytes: int
    free_bytes: int


@dataclass(frozen=True, slots=True)
class Measured:
    measured_bytes: int
    reserved_bytes: int | None
    driver_bytes: int | None
    allocated_bytes: int | None = None


def read(device: torch.device) -> Reading | None:
    """The allocator's and the driver's view of one CUDA device; None on CPU."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    free_bytes, _ = torch.cuda.mem_get_info(device)
    allocated = torch.cuda.memory_allocated(device)  # older torch keeps no requested_bytes: the blocks then
    requested = torch.cuda.memory_stats(device).get("requested_bytes.all.current", allocated)
    return Reading(requested, allocated, torch.cuda.memory_reserved(device), free_bytes)


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
    return layers, Measured(after.requested_bytes - before.requested_bytes,
                            after.reserved_bytes - before.reserved_bytes, before.free_bytes - after.free_bytes,
                            after.allocated_bytes - before.allocated_bytes)


def release(device: torch.device) -> None:
    """Give cached blocks back to the driver so the next model's driver view starts clean."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
