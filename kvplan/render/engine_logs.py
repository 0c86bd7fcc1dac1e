"""From one `kvplan capacity` payload: the start-up lines the engine will print with these numbers (the
terms its KV budget subtracts from the GPU's memory are the payload's ``budget_terms``).

The engine profile's own ``log_lines`` are taken as they are (vLLM's V1 releases after the
"Available KV cache memory" line the worker prints first). The line shapes
are those ``kvplan.reconcile.formats`` parses: vLLM 0.33's "Available KV cache memory" and "GPU KV
cache size ... Maximum concurrency" lines, SGLang's "KV Cache is allocated", TensorRT-LLM 1.x's
"Max KV cache blocks per sequence" and "[MemUsageChange] Allocated". transformers prints none.
"""

from __future__ import annotations

from kvplan.engines import get_engine
from kvplan.render.capacity import CapacityPayload


def engine_log_lines(p: CapacityPayload) -> list[str]:
    """The KV lines the engine prints at start-up for this answer, from its profile ([] when it prints none): its
    budget line first where it prints one (vLLM V1's)."""
    budget = get_engine(p.engine).budget_log_line(p.kv_budget_bytes_per_gpu, tuple(p.log_lines))
    return [*((budget,) if budget else ()), *p.log_lines]

