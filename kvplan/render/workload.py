"""`kvplan size`'s workload section (prefix sharing, beam search, the allocators) and the allocator rows
`kvplan waste` shares: payloads and tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.render import gib_number as _gib
from kvplan.render.tables import Table
from kvplan.workflows.allocators import AllocatorMemory, WorkloadMemory

if TYPE_CHECKING:
    from rich.console import RenderableType


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocatorPayload:
    allocator: str
    kv_tokens: int
    kv_bytes: int
    kv_bytes_per_gpu: int
    table_bytes_per_gpu: int
    total_bytes_per_gpu: int


def allocator_payload(m: AllocatorMemory) -> AllocatorPayload:
    return AllocatorPayload(allocator=m.allocator, kv_tokens=m.kv_tokens, kv_bytes=m.kv_bytes,
                            kv_bytes_per_gpu=m.kv_bytes_per_gpu, table_bytes_per_gpu=m.table_bytes_per_gpu,
                            total_bytes_per_gpu=m.total_bytes_per_gpu)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadPayload:
    """`kvplan size --json`'s "workload" key: prefix sharing, beam search and the chosen allocator."""

    batch: int
    prompt_tokens: int
    output_tokens: int
    beam_width: int
    shared_prefix_tokens: int
    block_size: int
    allocator: str
    kv_tokens: int
    bytes: int
    bytes_per_gpu: int
    unshared_kv_tokens: int
    unshared_bytes_per_gpu: int
    prefix_saving_bytes_per_gpu: int
    prefix_saving_pct: float
    allocators: tuple[AllocatorPayload, ...]
    allocators_unshared: tuple[AllocatorPayload, ...]


def workload_payload(result: WorkloadMemory, allocator: str) -> WorkloadPayload:
    w, chosen = result.workload, result.by_name(allocator)
    unshared = result.by_name(allocator, shared=False)
    saving = unshared.total_bytes_per_gpu - chosen.total_bytes_per_gpu
    return WorkloadPayload(
        batch=w.batch, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens, beam_width=w.beam_width,
        shared_prefix_tokens=w.shared_prefix_tokens, block_size=result.layout.block_size, allocator=allocator,
        kv_tokens=chosen.kv_tokens, bytes=chosen.kv_bytes, bytes_per_gpu=chosen.total_bytes_per_gpu,
        unshared_kv_tokens=unshared.kv_tokens, unshared_bytes_per_gpu=unshared.total_bytes_per_gpu,
        prefix_saving_bytes_per_gpu=saving,
        prefix_saving_pct=100.0 * saving / unshared.total_bytes_per_gpu if unshared.total_bytes_per_gpu else 0.0,
        allocators=tuple(allocator_payload(m) for m in result.allocators),
        allocators_unshared=tuple(allocator_payload(m) for m in result.unshared))


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def allocator_table(title: str, columns: tuple[str, ...], left: int = 1) -> Table:
    table = Table(title=title, title_justify="left")
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i < left else "right")
    return table


def workload_tables(w: WorkloadPayload) -> list[RenderableType]:
    from rich.text import Text

    title = (f"workload: {plural(w.batch, 'request')} × {plural(w.beam_width, 'beam')}, prompt "
             f"{w.prompt_tokens:,} + output {w.output_tokens:,} tokens, shared prefix "
             f"{w.shared_prefix_tokens:,}, block {w.block_size}")
    shared = w.shared_prefix_tokens > 0
    table = allocator_table(title, ("allocator", "KV tokens", "bytes / GPU", "GiB / GPU",
                                    *(("no prefix sharing", "GiB / GPU") if shared else ())))
    unshared = {m.allocator: m for m in w.allocators_unshared}
    for m in w.allocators:
        u = unshared[m.allocator]
        extra = (f"{u.total_bytes_per_gpu:,}", _gib(u.total_bytes_per_gpu)) if shared else ()
        table.add_row(m.allocator, f"{m.kv_tokens:,}", f"{m.total_bytes_per_gpu:,}", _gib(m.total_bytes_per_gpu),
                      *extra)
    legend = (f"contiguous: each request × beam preallocates its whole length; paged: whole blocks of "
              f"{w.block_size} tokens, full blocks shared; exact: the tokens held, shared ones counted once")
    return [table, Text(legend), Text(_workload_summary(w))]


def _workload_summary(w: WorkloadPayload) -> str:
    """The reported allocator's number in words, and what the tables above it count."""
    line = (f"reported: {w.allocator} (--allocator; JSON workload.bytes_per_gpu), {_gib(w.bytes_per_gpu)} GiB "
            "per GPU")
    if w.shared_prefix_tokens > 0:
        line += (f"; without sharing the {w.shared_prefix_tokens:,}-token prefix "
                 f"{_gib(w.unshared_bytes_per_gpu)} GiB: prefix sharing saves "
                 f"{_gib(w.prefix_saving_bytes_per_gpu)} GiB ({w.prefix_saving_pct:.1f}%). The size tables "
                 "above count every request's tokens, shared or not")
    return line
