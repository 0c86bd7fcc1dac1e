"""What differs between vLLM releases when their logs are recomputed, as rows of data with the source each
follows, and which release a log comes from.

Token and concurrency lines (``VLLM_RULES``) and the KV budget (``BUDGET_RULES``): each row holds from its
first release until the next row (vllm/v1/core/kv_cache_utils.py and v1/worker/gpu_worker.py of the releases
named; the releases read are 0.8.0, 0.8.5, 0.9.0, 0.9.2, 0.10.0, 0.10.1.1, 0.10.2, 0.11.0 and every x.y.0 to
0.33.0 (and 0.20.1, 0.20.2), so "0.9.2" means "after 0.9.0, by 0.9.2"). kvplan's engine profiles plan the blocks; these rows say how a
release turned blocks into the numbers it printed. A log that prints no version is placed by its print sites
(``sites.py``) or, before 0.8 (V0, no bracketed sites), by the wording of its lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from kvplan.reconcile.parse import StartupLog
from kvplan.reconcile.sites import placement

Release = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class VllmRules:
    first: Release
    releases: str
    tokens: Literal["blocks", "groups", "concurrency"]  # num_blocks × block; // groups × block; int(c × len)
    concurrency: Literal["tokens", "blocks"]  # tokens / max_model_len; num_blocks / blocks one request reserves
    workers: Literal["min-max", "own", "min"]  # which budget a token line speaks for (see token_checks)
    source: str
    dcp: bool = False  # the token line is multiplied by the decode-context-parallel size
    patch_tokens: bool = False  # a patch release printing a later minor's token line (its planner row does not)


V0_RULES = VllmRules((0, 0), "V0 engine", "blocks", "tokens", "min",
                     "vllm/executor/executor_base.py:112-118 (V0): # GPU blocks, tokens / max_model_len")
VLLM_RULES: tuple[VllmRules, ...] = (
    VllmRules((0, 8, 0), "0.8.0", "blocks", "tokens", "min-max",
              "vllm/v1/core/kv_cache_utils.py:535-540, 556-588 (0.8.0): min budget // page // most layers"),
    VllmRules((0, 8, 4), "0.8.4-0.9.0", "blocks", "tokens", "own",
              "vllm/v1/engine/core.py:120-161, kv_cache_utils.py:634-637 (0.8.5): each worker logs its own budget "
              "and layers before the minimum (the 0.8.4 log vllm-v084-deepseek-r1 prints a line per worker)"),
    VllmRules((0, 9, 2), "0.9.2-0.10.1", "groups", "blocks", "own",
              "vllm/v1/core/kv_cache_utils.py:626-641, 716-720, 867-873 (0.9.2): hybrid groups, blocks / blocks per "
              "request"),
    VllmRules((0, 10, 2), "0.10.2-0.11", "groups", "blocks", "own",
              "vllm/v1/core/kv_cache_utils.py:855-868 (0.10.2), 1083-1091 (0.11.0): × dcp", dcp=True),
    VllmRules((0, 12, 0), "0.12-0.20.0", "groups", "blocks", "min",
              "vllm/v1/core/kv_cache_utils.py:1254-1296 (0.12.0): one line after the minimum, × pcp × dcp", dcp=True),
    VllmRules((0, 20, 1), "0.20.1-0.20", "concurrency", "blocks", "min",
              "vllm/v1/core/kv_cache_utils.py:1694-1712 (0.20.1, 0.20.2): the patch releases print 0.21's "
              "int(concurrency × max_model_len)", patch_tokens=True),
    VllmRules((0, 21, 0), "0.21+", "concurrency", "blocks", "min",
              "vllm/v1/core/kv_cache_utils.py:1686-1715 (0.21.0), 1861-1875 (0.28.0, one line), 1131-1154 (0.33.0): "
              "int(concurrency × max_model_len)"),
)


@dataclass(frozen=True, slots=True)
class BudgetRule:
    """How a release turns the memory it measured into the KV budget it logs."""

    first: Release
    releases: str
    usable: Literal["floor", "ceil"]  # total × u as a float (int() at the end), or ceil(total × u)
    graphs: Literal["none", "env", "default", "in-activation"]  # the CUDA-graph estimate subtracted: never; with
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1; by default; inside the printed activation
    source: str


BUDGET_RULES: tuple[BudgetRule, ...] = (
    BudgetRule((0, 0), "V0", "floor", "none", "vllm/worker/worker.py:207-210 determine_num_available_blocks (0.6.5-"
               "0.10): total × u − weights − activation peak − non-torch; 0.6.4: − absolute torch peak − non-torch"),
    BudgetRule((0, 9, 2), "0.9.2-0.13", "floor", "none", "vllm/v1/worker/gpu_worker.py:187-236 (0.9.2), utils "
               "memory_profiling: total × u − weights − torch peak increase − non-torch increase"),
    BudgetRule((0, 14, 0), "0.14-0.17", "ceil", "none", "vllm/v1/worker/utils.py:253-272 (0.14.0): ceil(total × u)"),
    BudgetRule((0, 18, 0), "0.18-0.19", "ceil", "env", "vllm/v1/worker/gpu_worker.py:384-402 (0.18.0), envs.py:1654-1656 "
               "(0.19.0): the graph estimate is subtracted only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"),
    BudgetRule((0, 20, 0), "0.20-0.26", "ceil", "default", "vllm/envs.py:1724-1726, v1/worker/gpu_worker.py:405-425 "
               "(0.20.0): the estimate is subtracted by default (not with enforce_eager; Model Runner V2 estimates 0)"),
    BudgetRule((0, 27, 0), "0.27+", "ceil", "in-activation", "vllm/utils/mem_utils.py:314-326, v1/worker/gpu_worker.py:"
               "526-547 (0.27.0): ceil(total × u) − consumed − (transient peak + applied graph estimate)"),
)

VLLM_SWAP_SPACE_GIB = 4  # V0 CacheConfig.swap_space default: CPU blocks = swap // block bytes
# A loaded model's measured memory holds buffers kvplan does not count as weights (vLLM: the
# rotary cos/sin cache, ~0.03 GiB for Llama-3.1; allocator rounding): within 1% is a match.
WEIGHTS_TOLERANCE = Fraction(1, 100)
# V0 wording by release (vllm_lines.V0_MARKERS; no bracketed print sites before 0.8), first match wins
V0_WORDING: tuple[tuple[str, Release], ...] = (("Memory profiling results", (0, 6, 4)), ("# GPU blocks", (0, 6)),
                                                ("# CUDA blocks", (0, 7)), ("Loading model weights took", (0, 7)),
                                                ("# cuda blocks", (0, 8)))


FIRST_READ: Release = (0, 5)  # the oldest release a log is placed at; a development build's 0.1.devN says nothing


def release(version: str | None) -> Release | None:
    """'0.6.4.dev26+g92d86da2' -> (0, 6, 4); a development build's '0.1.dev7548' says nothing -> None."""
    found = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    if not found:
        return None
    out = tuple(int(g) for g in found.groups() if g is not None)
    return out if holds(FIRST_READ, out) else None


def is_v0(log: StartupLog) -> bool:
    return bool(log.markers) or any(log.of_kind(k) for k in ("gpu_blocks_v0", "breakdown_v0", "profile_v064"))


def v0_release(log: StartupLog) -> Release | None:
    """A V0 log's release from the wording of its lines, where no version and no bracketed site is printed."""
    return next((rel for word, rel in V0_WORDING if word in log.markers), None)


def placed(log: StartupLog) -> tuple[Release | None, str]:
    """The release a log comes from and how it is known."""
    stated = release(log.version)
    if stated is not None:
        return stated, f"version {log.version}"
    found = placement(log.sites) if log.sites else None
    if found is not None:
        first, last = found.releases[0], found.releases[-1]
        span = first if first == last else f"{first}-{last}"
        sites = ", ".join(found.evidence[:6]) + (", ..." if len(found.evidence) > 6 else "")
        return release(first), f"no version printed: print site of {span} ({sites})"
    if is_v0(log) and (worded := v0_release(log)) is not None:
        return worded, f"no version printed: V0 wording of vLLM {'.'.join(map(str, worded))}"
    return None, "no version printed and no print site placed"


def holds(first: Release, at: Release) -> bool:
    """A row (or the reading) that starts at `first` holds at `at`: the one comparison of releases here."""
    return first <= at


def row_for(firsts: tuple[Release, ...], at: Release) -> int:
    """The index of the last row whose first release is at or before `at`."""
    return max(i for i, first in enumerate(firsts) if holds(first, at))


def assumed(log: StartupLog) -> tuple[Release, str]:
    """The release whose rules a V1 log is read with: the one it comes from, else 0.28 where it prints one line
    for KV size and concurrency, else 0.12 (separate lines, one after the minimum), said in the reason."""
    at, why = placed(log)
    if at is not None:
        return at, why
    combined = any(r.get("max_concurrency") for r in log.of_kind("kv_size"))
    return ((0, 28, 0) if combined else (0, 12, 0)), (
        f"{why}; assumed {'0.28+ (one line for KV size and concurrency)' if combined else '0.12-0.20'}")


def vllm_rules(log: StartupLog) -> tuple[VllmRules, str]:
    """The rules a vLLM log's numbers follow, and why they were chosen."""
    if is_v0(log):
        return V0_RULES, placed(log)[1]
    at, why = assumed(log)
    return VLLM_RULES[row_for(tuple(r.first for r in VLLM_RULES), at)], why


def budget_rule(log: StartupLog) -> BudgetRule:
    return BUDGET_RULES[0] if is_v0(log) else BUDGET_RULES[row_for(tuple(r.first for r in BUDGET_RULES), assumed(log)[0])]
