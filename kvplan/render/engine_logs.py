"""From one `kvplan capacity --json` object: the start-up lines the engine will print with these
numbers, and the terms its KV budget subtracts from the GPU's memory.

The engine profile's own ``log_lines`` are taken as they are (vLLM's V1 releases after the
"Available KV cache memory" line the worker prints first); for engines whose profile lists none the
lines are built from the payload's numbers and notes. The budget terms are the payload's. The line shapes
are those ``kvplan.reconcile.formats`` parses: vLLM 0.33's "Available KV cache memory" and "GPU KV
cache size ... Maximum concurrency" lines, SGLang's "KV Cache is allocated", TensorRT-LLM 1.x's
"Max KV cache blocks per sequence" and "[MemUsageChange] Allocated". transformers prints none.
"""

from __future__ import annotations

from typing import Any

from kvplan.units import GIB


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
    if p.get("log_lines"):  # the engine profile's own lines (vLLM's releases print theirs) ...
        lines = list(p["log_lines"])
        if p["engine"] == "vllm" and lines[0].startswith("GPU KV cache size"):  # ... after V1's budget line
            lines.insert(0, _vllm(p)[0])
        return lines
    if p["error"] or not p["kv_tokens"]:
        return []
    shapes = {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}
    return shapes[p["engine"]](p) if p["engine"] in shapes else []


def budget_terms(p: dict[str, Any]) -> list[dict[str, Any]]:
    """What the engine subtracts before the KV cache: the payload's [{name, bytes, exact, source, kind}]
    (none when the KV budget was given)."""
    return [dict(t) for t in p["budget_terms"]]
