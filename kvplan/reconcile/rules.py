"""What differs between engine releases when their logs are recomputed, and how close is a match.

Data, with the source each row follows. kvplan's engine profiles plan blocks the way their
release does (vLLM 0.33, SGLang 0.4-0.5, TensorRT-LLM 1.x); the rows here say how older vLLM
releases turned those blocks into the numbers they print, and which release a log comes from
when it prints no version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from kvplan.reconcile.parse import StartupLog


@dataclass(frozen=True, slots=True)
class VllmRules:
    releases: str
    tokens: str  # "blocks": num_blocks × block; "groups": num_blocks // groups × block; "concurrency": int(c × len)
    concurrency: str  # "tokens": tokens / max_model_len; "blocks": num_blocks / blocks one request reserves
    source: str


V0_RULES = VllmRules("V0 engine, 0.8", "blocks", "tokens",
                     "vllm/executor/executor_base.py:112-118 (V0); vllm/v1/core/kv_cache_utils.py:633-637 (0.8.5)")
# (first release, rules), oldest first.
VLLM_RULES: tuple[tuple[tuple[int, int], VllmRules], ...] = (
    ((0, 0), V0_RULES),
    ((0, 9), VllmRules("0.9-0.25", "groups", "blocks",
                       "vllm/v1/core/kv_cache_utils.py:626-641, 871-877 (0.9.2), 780-795, 1083-1091 (0.11.0)")),
    ((0, 26), VllmRules("0.26+", "concurrency", "blocks",
                        "vllm/v1/core/kv_cache_utils.py:1120-1149 (0.33.0); the 0.26.0 log prints 2,324,244 tokens, "
                        "not a multiple of its 16-token blocks")),
)
# Where releases print "GPU KV cache size" / "Maximum concurrency": the release of a log that
# names none. From the wheels (0.8.5, 0.9.2, 0.11.0) and from logs that state their version.
VLLM_PRINT_SITES: dict[str, tuple[int, int]] = {
    "kv_cache_utils.py:634": (0, 8), "kv_cache_utils.py:637": (0, 8),
    "kv_cache_utils.py:716": (0, 9), "kv_cache_utils.py:720": (0, 9),
    "kv_cache_utils.py:873": (0, 9), "kv_cache_utils.py:877": (0, 9),
    "kv_cache_utils.py:864": (0, 10), "kv_cache_utils.py:868": (0, 10),
    "kv_cache_utils.py:1087": (0, 11), "kv_cache_utils.py:1091": (0, 11),
    "kv_cache_utils.py:2177": (0, 26), "kv_cache_utils.py:2178": (0, 26),
}
VLLM_SWAP_SPACE_GIB = 4  # V0 CacheConfig.swap_space default: CPU blocks = swap // block bytes

# A loaded model's measured memory holds buffers kvplan does not count as weights (vLLM: the
# rotary cos/sin cache, ~0.03 GiB for Llama-3.1; allocator rounding): within 1% is a match.
WEIGHTS_TOLERANCE = Fraction(1, 100)


def release(version: str | None) -> tuple[int, int] | None:
    """'0.6.4.dev26+g92d86da2' -> (0, 6)."""
    found = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def print_site_release(log: StartupLog) -> tuple[int, int] | None:
    """The release whose print site ("[kv_cache_utils.py:637]") a log line shows, if known."""
    return next((VLLM_PRINT_SITES[r.source] for r in log.records if r.source in VLLM_PRINT_SITES), None)


def vllm_rules(log: StartupLog) -> tuple[VllmRules, str]:
    """The rules a vLLM log's numbers follow, and why they were chosen."""
    if log.of_kind("gpu_blocks_v0"):
        return V0_RULES, "the V0 engine's '# GPU blocks' line"
    stated = release(log.version)
    site = print_site_release(log)
    combined = any(r.get("max_concurrency") for r in log.of_kind("kv_size"))
    found = stated or site or ((0, 26) if combined else None)
    if found is None:
        return VLLM_RULES[1][1], "no version printed: assumed 0.9-0.25 (separate KV size and concurrency lines)"
    rules = [r for start, r in VLLM_RULES if start <= found][-1]
    why = (f"version {log.version}" if stated else f"print site of {found[0]}.{found[1]}" if site
           else "one line for KV size and concurrency (0.26+)")
    return rules, why
