"""vLLM 0.33's block-outermost packing of KV-cache groups (DeepSeek-V4), as arithmetic on paged specs.

When a backend of the model declares only block-outermost layouts (DeepSeek-V4's indexer:
``v1/attention/backends/mla/indexer.py:334-357``), vLLM does not unify page sizes: it packs modules of
unequal pages side by side in one block (``_get_packed_kv_cache_groups``,
``v1/core/kv_cache_planning.py:914-1041``):

1. bucket the modules greedily, in order: a module joins the first bucket whose members share its block
   size and type (full attention and MLA latents; sliding windows of one width) (``is_uniform_type``);
2. a bucket is *balanced* when each of its page sizes has as many modules; the largest balanced bucket
   with several page sizes sets the least number of pattern repeats per group, and the repeats are the
   divisor in [that, largest count] that pads the balanced buckets least (ties: the larger;
   ``_approximate_gcd``, :870-911);
3. a balanced bucket splits into cdiv(its most modules of one page, repeats) groups, the pattern's repeats
   dealt out in turn; an unbalanced bucket stays whole. (Mamba and ring buffers would be capped at the
   states one block holds; no model kvplan packs has them.)

One block id costs the widest group's page sum, rounded up to the least common multiple of the members'
block-stride alignments (``_get_kv_cache_bytes_per_block``, :574-606); a request needs, per group, the most
blocks any member needs (``UniformTypeKVCacheSpecs.max_memory_usage_pages``).
"""

from __future__ import annotations

import math

from kvplan.engines.vllm.groups import Group, PagedSpec, Specs
from kvplan.units import cdiv


def _uniform(a: PagedSpec, b: PagedSpec) -> bool:
    return a.block_size == b.block_size and a.family == b.family


def _buckets(specs: Specs) -> list[list[int]]:
    buckets: list[list[int]] = []
    for i, s in enumerate(specs):
        if s is None:
            continue
        home = next((b for b in buckets if _uniform(specs[b[0]], s)), None)  # type: ignore[arg-type]
        if home is None:
            buckets.append([i])
        else:
            home.append(i)
    return buckets


def _by_page(bucket: list[int], specs: Specs) -> dict[int, list[int]]:
    """Module indices of a bucket by page size, in order of first appearance."""
    out: dict[int, list[int]] = {}
    for i in bucket:
        spec = specs[i]
        assert spec is not None
        out.setdefault(spec.page_bytes, []).append(i)
    return out


def least_padding_divisor(values: list[int], lower: int) -> int:
    """The d in [lower, max(values)] with the least Σ (d − x mod d) mod d; ties go to the larger d."""
    low, high = max(1, lower), max(values)
    if low > high:
        return low
    pads = {d: sum((d - x % d) % d for x in values) for d in range(low, high + 1)}
    return min(pads, key=lambda d: (pads[d], -d))


def packed_groups(specs: Specs) -> tuple[Group, ...]:
    """The groups vLLM packs these modules into (step 1-3 of the module docstring)."""
    pages = [_by_page(b, specs) for b in _buckets(specs)]
    balanced = [len({len(v) for v in p.values()}) == 1 for p in pages]
    most = [max(len(v) for v in p.values()) for p in pages]
    floor = max((m for p, m, b in zip(pages, most, balanced, strict=True) if b and len(p) > 1), default=0)
    repeats = least_padding_divisor([m for m, b in zip(most, balanced, strict=True) if b], floor) if floor else None
    groups: list[Group] = []
    for p, m, b in zip(pages, most, balanced, strict=True):
        n = cdiv(m, repeats) if b and repeats else 1
        pattern = list(zip(*p.values(), strict=True)) if b else [tuple(i for v in p.values() for i in v)]
        for k in range(n):
            members = tuple(i for repeat in pattern[k::n] for i in repeat)
            first = specs[members[0]]
            assert first is not None
            groups.append(Group(spec=first, layers=members))
    return tuple(groups)


def block_bytes(groups: tuple[Group, ...], specs: Specs, stage: range, alignments: dict[int, int]) -> int:
    """Bytes one block id takes on a worker of this stage: the widest group's pages, aligned."""
    widest = max(sum(s.page_bytes for i in g.layers if i in stage and (s := specs[i]) is not None) for g in groups)
    align = math.lcm(*(alignments.get(i, 1) for g in groups for i in g.layers if i in stage))
    return cdiv(widest, align) * align


def waste_note(groups: tuple[Group, ...], specs: Specs, stage_block_bytes: tuple[int, ...]) -> str:
    """What packing leaves unused: a block id is the widest group's size whichever group holds it."""
    widest = max(stage_block_bytes)
    sums = [sum(s.page_bytes for i in g.layers if (s := specs[i]) is not None) for g in groups]
    unused = sum(widest - min(x, widest) for x in sums) / (len(groups) * widest)
    return (f"{len(groups)} KV cache groups packed block-outermost: one block id is {widest:,} B (the widest group's "
            f"pages); narrower groups leave up to {100 * unused:.2f}% of the KV memory unused")
