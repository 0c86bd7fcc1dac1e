"""From one `kvplan capacity` payload: the start-up lines the engine will print with these numbers (the
terms its KV budget subtracts from the GPU's memory are the payload's ``budget_terms``).

The engine profile's own ``log_lines`` are taken as they are (vLLM's V1 releases after the
"Available KV cache memory" line the worker prints first). The line shapes
are those ``kvplan.reconcile.formats`` parses: vLLM 0.33's "Available KV cache memory" and "GPU KV
cache size ... Maximum concurrency" lines, SGLang's "KV Cache is allocated", TensorRT-LLM 1.x's
"Max KV cache blocks per sequence" and "[MemUsageChange] Allocated". transformers prints none.
"""

from __future__ import annotations

from kvplan.render.capacity import CapacityPayload
from kvplan.units import GIB


def engine_log_lines(p: CapacityPayload) -> list[str]:
    """The KV lines the engine prints at start-up for this answer, from its profile ([] when it prints none)."""
    lines = list(p.log_lines)
    if p.engine == "vllm" and lines and lines[0].startswith("GPU KV cache size"):  # after V1's budget line
        lines.insert(0, f"Available KV cache memory: {round(p.kv_budget_bytes_per_gpu / GIB, 2)} GiB")
    return lines

