"""vLLM's start-up check on a planned pool: one max_model_len request must fit each worker's KV memory, and
the longest length that would, as each release counts a request (``VllmRelease.start_check``). The wording of
the refusal: ``refusals.py``; the blocks themselves: ``planner.py``."""

from __future__ import annotations

from types import ModuleType

from kvplan.engines.base import Refusal, Request
from kvplan.engines.vllm.groups import NO_SPEC, Group, SpecReserve, Specs, blocks_needed, group_width
from kvplan.engines.vllm.paging import Paging
from kvplan.engines.vllm.row import StartCheck, VllmRelease
from kvplan.records import Record


class Blocks(Record):
    """The paged KV cache of one plan: its groups, their blocks and what one request reserves."""

    groups: tuple[Group, ...]
    block_bytes: tuple[int, ...]  # one block id on a worker of each stage
    need: tuple[int, ...]  # blocks one max-length request reserves per group
    num_blocks: int
    in_flight: int
    stages: tuple[range, ...]  # the layers of each worker's stage (the last holds any draft layers)
    reserve: SpecReserve = NO_SPEC
    check: StartCheck = "groups"  # what the start-up check counts for one request (VllmRelease.start_check)
    packed: bool = False  # block-outermost packed groups (DeepSeek-V4)
    uniform: bool = False  # one group whose layers differ in pages (UniformTypeKVCacheSpecs)
    per_request: int = 0  # blocks a max-length request counts in the concurrency (0: Σ need; DeepSeek-V4 by release)


def group_need(group: Group, specs: Specs, max_model_len: int, flight_dcp: tuple[int, int], uniform: bool,
                reserve: SpecReserve) -> int:
    """A group's blocks per request; a uniform-type group needs the most any member needs
    (UniformTypeKVCacheSpecs.max_memory_usage_bytes, vllm/v1/kv_cache_interface.py:1326-1331)."""
    members = [s for i in group.layers if (s := specs[i]) is not None] if uniform else [group.spec]
    return max(blocks_needed(s, max_model_len, *flight_dcp, reserve) for s in members)


def request_bytes(req: Request, specs: Specs, stage: range, length: int, paged: Blocks) -> int:
    """Bytes the start-up check counts for one request of `length` tokens on the layers of `stage`, as the release
    does (``VllmRelease.start_check``): each module's own blocks × its page ("layers", up to 0.13), or the padded
    group layout, group width × page × the blocks of the first group ("model_first_group", "first_group",
    0.14-0.18) or of every group ("groups", 0.19 on: 0.29.0 v1/core/kv_cache_utils.py:2041-2070). One group whose
    layers differ in pages counts each layer's own (0.19.0 :1344-1353), which the padded figure equals; packed
    groups: one block id per block a group needs (vllm/v1/core/kv_cache_planning.py:1253-1285)."""
    flight = (paged.in_flight, req.dcp)
    if paged.packed:
        need = sum(group_need(g, specs, length, flight, True, paged.reserve) for g in paged.groups)
        return need * paged.block_bytes[paged.stages.index(stage)]
    if paged.check == "layers" or paged.uniform:
        return sum(blocks_needed(v, length, *flight, paged.reserve) * v.page_bytes
                   for i, v in enumerate(specs) if v is not None and i in stage)
    counted = paged.groups if paged.check == "groups" else paged.groups[:1]
    need = sum(blocks_needed(g.spec, length, *flight, paged.reserve) for g in counted)
    return group_width(paged.groups, stage) * paged.groups[0].spec.page_bytes * need


def longest_fitting(req: Request, specs: Specs, stage: range, available: int, paged: Blocks) -> int:
    """The largest length whose reservation fits (vLLM binary-searches the same)."""
    lo, hi = 0, req.max_model_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if request_bytes(req, specs, stage, mid, paged) <= available else (lo, mid - 1)
    return lo


def _wording() -> ModuleType:
    """vLLM's refusal messages (refusals.py), imported on a refusal only: most plans fit."""
    from kvplan.engines.vllm import refusals

    return refusals


def refusal(req: Request, rel: VllmRelease, pages: Paging, paged: Blocks, budgets: tuple[int, ...]) -> Refusal | None:
    """vLLM's start-up check on each worker: one max_model_len request must fit (V1: in the available memory,
    0.33 after the null block; V0: in num_blocks // pp blocks)."""
    if rel.generation == "V0":
        longest = pages.block_size * (paged.num_blocks // req.pp)
        if paged.num_blocks <= 0:
            return Refusal(message=_wording().no_memory(rel.refusal))
        if req.max_model_len <= longest:
            return None
        return Refusal(message=_wording().v0_too_long(req.max_model_len, longest), estimated_max_model_len=longest)
    for k, stage, budget in checked(paged, budgets):
        available = budget - (paged.block_bytes[k] if rel.refusal_null_block else 0)
        if available <= 0:
            return Refusal(message=_wording().no_memory(rel.refusal), stage=k)
        need = request_bytes(req, pages.specs, stage, req.max_model_len, paged)
        if need > available:
            longest = longest_fitting(req, pages.specs, stage, available, paged)
            return Refusal(message=_wording().too_long(rel.refusal, req.max_model_len, need, available, longest),
                           estimated_max_model_len=longest, stage=k)
    return None


def checked(paged: Blocks, budgets: tuple[int, ...]) -> list[tuple[int, range, int]]:
    """(stage, the layers counted, its memory) of each start-up check: one per worker, or one over the whole
    model's groups against the smallest budget (0.14-0.16: 0.14.0 v1/core/kv_cache_utils.py:1514-1523)."""
    if paged.check == "model_first_group" and not paged.packed:
        k = budgets.index(min(budgets))
        return [(k, range(paged.stages[0].start, paged.stages[-1].stop), budgets[k])]
    return [(k, stage, budgets[k]) for k, stage in enumerate(paged.stages)]


def check_bytes(req: Request, specs: Specs, paged: Blocks) -> int | None:
    """What the check counts on the most loaded worker's own groups, where that is not the reserve (None)."""
    counted = max(request_bytes(req, specs, r, req.max_model_len, paged) for r in paged.stages)
    return None if counted == sum(paged.need) * max(paged.block_bytes) else counted
