"""Room for the caches: a probe is refused before it allocates more than the device has free.

Allocating past the memory of a CPU host gets the process killed by the kernel (200,000 blocks of a 70B cache
reached 23.6 GB here before it died) and past a GPU's a torch traceback. The predicted bytes of every group
(``kvplan.probe.compare.predicted_group_bytes``: what the formulas say the tensors take, within a few bytes of
what they take) plus the kernel check's working copies are compared with what the device has free now: the
CUDA driver's free memory, or the host's MemAvailable (Linux; other systems: not checked). The refusal says
how many blocks would fit.
"""

from __future__ import annotations

from pathlib import Path

import torch

from kvplan.probe import ProbeError
from kvplan.units import GIB

HEADROOM = 0.9  # of the free memory: the allocator's rounding, the kernel check's queries and outputs
KERNEL_COPIES = 1  # the kernel check keeps one reference copy of a layer's pages at a time (probe.check)


def free_bytes(device: torch.device) -> int | None:
    """What the device has free now: the CUDA driver's count, or the host's MemAvailable (None: unknown)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_room(needed_bytes: int, largest_layer_bytes: int, num_blocks: int, device: torch.device) -> None:
    """Refuse, before allocating, a cache (and the kernel check's copy of its largest layer) that does not fit."""
    free = free_bytes(device)
    total = needed_bytes + KERNEL_COPIES * largest_layer_bytes
    if free is None or total <= HEADROOM * free:
        return
    per_block = max(-(-total // max(num_blocks, 1)), 1)  # the cache and the kernel copy both grow with blocks
    fits = int(HEADROOM * free) // per_block
    hint = f"try --blocks {fits:,}" if fits > 0 else "even one block does not fit"
    raise ProbeError(f"the cache needs {total / GIB:,.2f} GiB with the kernel check's copy; {device} has "
                     f"{free / GIB:,.2f} GiB free ({HEADROOM:.0%} usable): {hint}")
