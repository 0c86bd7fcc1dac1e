"""`kvplan waste`: the memory a set of real sequence lengths takes under each allocator.

Every length is one request (no sharing, beam 1). Contiguous preallocates max_model_len tokens per
request; paged rounds each request up to blocks and adds the block-pointer table; exact holds the
tokens and nothing else. Waste = (allocated − exact) / allocated, on the most loaded GPU.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout
from kvplan.formulas.request import CacheRequest, cache_request
from kvplan.workflows.allocators import ALLOCATORS, AllocatorMemory, Workload, allocate
from kvplan.workflows.models import layout_of


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocatorWaste:
    memory: AllocatorMemory  # summed over all requests
    exact_bytes_per_gpu: int

    @property
    def waste_bytes_per_gpu(self) -> int:
        return self.memory.total_bytes_per_gpu - self.exact_bytes_per_gpu

    @property
    def waste_pct(self) -> float:
        allocated = self.memory.total_bytes_per_gpu
        return 100.0 * self.waste_bytes_per_gpu / allocated if allocated else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class WasteResult:
    layout: Layout
    max_model_len: int
    lengths: tuple[int, ...]
    rows: tuple[AllocatorWaste, ...]  # in ALLOCATORS order

    @property
    def num_sequences(self) -> int:
        return len(self.lengths)

    @property
    def mean_tokens(self) -> float:
        return sum(self.lengths) / len(self.lengths)


def _summed(layout: Layout, counts: Counter[int], max_model_len: int, allocator: str) -> AllocatorMemory:
    parts = [allocate(layout, Workload(batch=n, prompt_tokens=length, max_model_len=max_model_len), allocator)
             for length, n in sorted(counts.items())]
    return AllocatorMemory(
        allocator=allocator, kv_tokens=sum(p.kv_tokens for p in parts), kv_bytes=sum(p.kv_bytes for p in parts),
        kv_bytes_per_gpu=sum(p.kv_bytes_per_gpu for p in parts),
        table_bytes_per_gpu=sum(p.table_bytes_per_gpu for p in parts))


def waste(model: ModelConfig | str, request: CacheRequest | None = None, *, lengths: Sequence[int],
          **fields: Any) -> WasteResult:
    """Memory per allocator for requests of the given lengths, each preallocated the request's max_model_len
    (contiguous), and the share of it that is waste."""
    if not lengths:
        raise InputError("no sequence lengths given")
    request = cache_request(request, **fields)
    layout = layout_of(model, request)
    max_model_len = request.length(layout.model)
    longest = max(lengths)
    if longest > max_model_len:
        raise InputError(f"a sequence of {longest:,} tokens exceeds max_model_len {max_model_len:,}",
                         arg="max_model_len")
    counts = Counter(lengths)
    memories = {name: _summed(layout, counts, max_model_len, name) for name in ALLOCATORS}
    exact = memories["exact"].total_bytes_per_gpu
    rows = tuple(AllocatorWaste(memory=memories[name], exact_bytes_per_gpu=exact) for name in ALLOCATORS)
    return WasteResult(layout=layout, max_model_len=max_model_len, lengths=tuple(lengths), rows=rows)
