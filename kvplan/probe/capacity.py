"""`kvplan probe --capacity`: allocate blocks until the driver refuses, then ask kvplan capacity.

Blocks are allocated in chunks (every paged layer's tensor for `chunk` blocks), halving the chunk
on each refusal down to one block, with plain ``torch.empty`` device allocations (never managed
memory). Everything is freed before returning. The prediction is ``kvplan.planning.capacity.capacity``
(engine vllm) with ``--kv-budget`` = the memory that was free before the first chunk; the plain
``free // block_bytes`` division is reported next to it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from kvplan.probe.allocate import Allocator, CacheShape, Tensors, allocate_group
from kvplan.probe.measure import release

OOM_ERRORS: tuple[type[BaseException], ...] = (torch.OutOfMemoryError,)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityCheck:
    model: str
    free_bytes: int
    block_bytes: int  # one block of every paged layer on this GPU, from kvplan.formulas
    allocated_blocks: int
    formula_blocks: int  # free_bytes // block_bytes
    capacity_blocks: int | None  # kvplan.planning.capacity (vLLM profile) for the same budget
    capacity_page_bytes: int | None
    note: str

    @property
    def error(self) -> float:
        predicted = self.capacity_blocks if self.capacity_blocks is not None else self.formula_blocks
        return (self.allocated_blocks - predicted) / predicted if predicted else 0.0


def fill_blocks(shapes: list[CacheShape], device: torch.device, chunk_blocks: int,
                alloc: Allocator | None = None) -> int:
    """Blocks of every paged group allocated until the allocator refuses even one; all freed again."""
    held: list[list[list[Tensors]]] = []
    total, chunk = 0, chunk_blocks
    try:
        while chunk >= 1:
            try:
                held.append([allocate_group(replace(s, num_blocks=chunk), device, alloc) for s in shapes])
                total += chunk
            except OOM_ERRORS:
                chunk //= 2
    finally:
        held.clear()
        release(device)
    return total


def kvplan_capacity_blocks(model: str, tp: int, kv_dtype: str, block_size: int,
                           free_bytes: int) -> tuple[int | None, int | None, str]:
    """(num_blocks, page_bytes, note) from the vLLM profile; Nones when it is unavailable."""
    try:
        from kvplan.planning.capacity import capacity
    except ImportError:
        return None, None, "kvplan.planning.capacity is not available: compared with free // block_bytes only"
    result = capacity(model, engine="vllm", tp=tp, kv_dtype=kv_dtype, kv_budget_bytes=(free_bytes,),
                      block_size=block_size)
    plan = result.plan
    return plan.num_blocks, plan.page_bytes, f"kvplan capacity, {plan.version} profile"


def capacity_check(model: str, shapes: list[CacheShape], block_bytes: int, tp: int, kv_dtype: str,
                   device: torch.device, chunk_blocks: int = 1024) -> CapacityCheck:
    """Measure the free memory, fill it with blocks, and compare with kvplan's answer for that budget."""
    release(device)
    free_bytes = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else 0
    paged = [s for s in shapes if s.spec.kind not in ("linear", "none")]
    allocated = fill_blocks(paged, device, chunk_blocks)
    blocks, page, note = kvplan_capacity_blocks(model, tp, kv_dtype, shapes[0].block_size, free_bytes)
    if page is not None and page != block_bytes:
        note += f"; its page ({page:,} B) is not the probe's per-layer block ({block_bytes:,} B): hybrid grouping"
    return CapacityCheck(model=model, free_bytes=free_bytes, block_bytes=block_bytes, allocated_blocks=allocated,
                         formula_blocks=free_bytes // block_bytes if block_bytes else 0, capacity_blocks=blocks,
                         capacity_page_bytes=page, note=note)
