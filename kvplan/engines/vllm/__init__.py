"""vLLM profile: vLLM 0.33 (V1 engine) on an NVIDIA H100 unless told otherwise.

Budget: ``ceil(total × gpu_memory_utilization) − weights − overhead`` ("Available KV cache memory",
``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory``). Layout: KV heads floor-split
with replication, the MLA latent, windows kept (all tokens with the hybrid KV cache manager
disabled: ``unify_hybrid_kv_cache_specs``). Blocks and logs: ``planner.py``.
"""

from __future__ import annotations

import math

from kvplan.engines.base import BudgetSteps, EnginePlan, Request, Settings
from kvplan.engines.vllm.planner import VERSION, plan
from kvplan.formulas.layout import Layout, LayoutPolicy

GPU_MEMORY_UTILIZATION = 0.92  # vllm/config/cache.py (0.9 before)


class VllmEngine:
    name = "vllm"
    version = VERSION
    supports_dcp = True

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(windows="window" if request.settings.hybrid_kv_cache_manager else "full")

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        util = settings.gpu_memory_utilization or GPU_MEMORY_UTILIZATION
        requested = math.ceil(gpu_memory_bytes * util)
        budget = requested - weights_bytes - overhead_bytes
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"requested = ceil({gpu_memory_bytes:,} × gpu_memory_utilization {util}) = {requested:,} B",
            f"available KV = requested − weights {weights_bytes:,} − overhead {overhead_bytes:,} = {budget:,} B"))

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        return plan(request, layout, budgets_per_stage)
