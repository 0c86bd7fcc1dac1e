"""Planning workflows on top of the core: compare, sweep, prefix sharing, beam search, allocators, waste.

Each is a function returning a frozen result; the CLI renders it (``kvplan.render.workflows``).
The CLI imports this package only inside the commands that use it, so `kvplan size` stays fast.
"""

from __future__ import annotations

from kvplan.workflows.allocators import ALLOCATORS, AllocatorMemory, Workload, WorkloadMemory, allocate, plan_workload
from kvplan.workflows.beam import beam_search
from kvplan.workflows.capacity_curve import CapacityCurve, capacity_curve
from kvplan.workflows.compare import Comparison, compare
from kvplan.workflows.prefix import prefix_sharing, stored_tokens
from kvplan.workflows.sweep import SWEEP_COLUMNS, Sweep, sweep
from kvplan.workflows.waste import WasteResult, waste

__all__ = [
    "ALLOCATORS", "SWEEP_COLUMNS", "AllocatorMemory", "CapacityCurve", "Comparison", "Sweep", "WasteResult",
    "Workload", "WorkloadMemory", "allocate", "beam_search", "capacity_curve", "compare", "plan_workload",
    "prefix_sharing", "stored_tokens", "sweep", "waste",
]
