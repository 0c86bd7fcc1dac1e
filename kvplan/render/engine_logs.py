"""From one `kvplan capacity --json` object: the start-up lines the engine will print with these
numbers, and the terms its KV budget subtracts from the GPU's memory.

A payload that carries its own ``log_lines`` or ``budget_terms`` (engine profiles that list them)
is taken as it is; otherwise both are read from the payload's numbers and notes. The line shapes
are those ``kvplan.reconcile.formats`` parses: vLLM 0.33's "Available KV cache memory" and "GPU KV
cache size ... Maximum concurrency" lines, SGLang's "KV Cache is allocated", TensorRT-LLM 1.x's
"Max KV cache blocks per sequence" and "[MemUsageChange] Allocated". transformers prints none.
"""

from __future__ import annotations

from typing import Any

from kvplan.units import GIB

WEIGHTS_SOURCE = "parameter counts from the config × the weight format (kvplan.planning.weights)"
ESTIMATE_SOURCE = "estimate (kvplan.planning.budget)"
OVERHEAD_TERMS = (("non-torch (CUDA context, cuBLAS, NCCL)", "non_torch_bytes"),
                  ("activations (profile run)", "activation_bytes"), ("CUDA graphs", "cuda_graph_bytes"))


def _vllm(p: dict[str, Any]) -> list[str]:
    lines = [f"Available KV cache memory: {round(p['kv_budget_bytes_per_gpu'] / GIB, 2)} GiB"]
    return lines + ([p["log_line"]] if p.get("log_line") else [])


def _sglang(p: dict[str, Any]) -> list[str]:
    pool = next((n.split("): ", 1)[1] for n in p["notes"] if "pad page" in n and "): " in n), None)
    return [f"KV Cache is allocated. #tokens: {p['kv_tokens']}" + (f", {pool}" if pool else "")]


def _trtllm(p: dict[str, Any]) -> list[str]:
    blocks, tpb, length = p["num_blocks"] or 0, p["block_size"], p["max_model_len"]
    per_request = max((g.get("blocks_per_request") or 0 for g in p["layer_groups"]), default=0)
    return [f"Max KV cache blocks per sequence: {per_request} [window size={length}], tokens per block={tpb}, "
            f"primary blocks={blocks}, secondary blocks=0, max sequence length={length}",
            f"[MemUsageChange] Allocated {blocks * p['page_bytes'] / GIB:.2f} GiB for max tokens in paged KV cache "
            f"({blocks * tpb})"]


def engine_log_lines(p: dict[str, Any]) -> list[str]:
    """The KV lines the engine prints at start-up for this answer ([] when it refused or prints none)."""
    if "log_lines" in p:
        return list(p["log_lines"])
    if p["error"] or not p["kv_tokens"]:
        return []
    shapes = {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}
    return shapes[p["engine"]](p) if p["engine"] in shapes else []


def budget_terms(p: dict[str, Any]) -> list[dict[str, Any]]:
    """What the engine subtracts before the KV cache: [{name, bytes, exact, source}] (zeros left out)."""
    if "budget_terms" in p:
        return [dict(t) for t in p["budget_terms"]]
    terms = []
    if p["weights_bytes_per_gpu"]:
        terms.append({"name": "weights", "bytes": p["weights_bytes_per_gpu"], "exact": True,
                      "source": WEIGHTS_SOURCE})
    overhead = p["overhead"]
    if overhead is None:
        return terms
    if overhead["source"] != "estimate":
        return [*terms, {"name": "overhead (given)", "bytes": p["overhead_bytes_per_gpu"], "exact": True,
                         "source": overhead["source"]}]
    return terms + [{"name": name, "bytes": overhead[key], "exact": False, "source": ESTIMATE_SOURCE}
                    for name, key in OVERHEAD_TERMS if overhead[key]]
