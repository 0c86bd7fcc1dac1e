"""`kvplan models`: one row per bundled model (`--json` keys are a contract), drawn from its size payload."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.formulas.sizing import KvCacheResult
from kvplan.render.size import or_dash, size_payload
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult


@dataclass(frozen=True, kw_only=True)
class ModelRow:
    """`kvplan models --json`: one object per model, from a size result."""

    id: str
    attention: str
    num_layers: int
    num_kv_heads: int
    head_dim: int
    bytes_per_token: int
    kv_dtype: str
    max_model_len: int | None
    layer_kinds: dict[str, int]  # layer kind -> layers: the kinds a model has (an open set)
    state_bytes_per_sequence: int  # a Mamba/linear state per sequence, whatever its length (0: none)


def model_row(result: KvCacheResult) -> ModelRow:
    payload = size_payload(result)
    groups = payload.layer_groups
    first = next((g for g in groups if g.kind not in ("linear", "none")), None)
    return ModelRow(id=payload.model, attention=payload.attention, num_layers=sum(g.num_layers for g in groups),
                    num_kv_heads=first.heads.num_kv_heads if first else 0, head_dim=first.heads.head_dim if first else 0,
                    bytes_per_token=payload.bytes_per_token, kv_dtype=payload.kv_dtype,
                    max_model_len=payload.max_model_len, layer_kinds={g.kind: g.num_layers for g in groups},
                    state_bytes_per_sequence=payload.state_bytes_per_sequence)


def models_tables(rows: Sequence[ModelRow]) -> list[RenderableType]:
    """`kvplan models`: one row per bundled model, every column where the terminal has room for them (113
    columns); narrower, the compact listing (a row of it fits 80 columns)."""
    return [ModelsListing(rows)]


def full_table(rows: Sequence[ModelRow]) -> Table:
    table = Table(title="bundled models (KV dtype auto)", title_justify="left")
    for name in ("id", "attention", "layers", "kv heads", "head dim", "bytes/token", "state bytes/seq", "max len"):
        table.add_column(name, justify="left" if name in ("id", "attention") else "right")
    for r in rows:
        heads = ("-", "-") if r.num_kv_heads == r.head_dim == 0 else (str(r.num_kv_heads), str(r.head_dim))
        table.add_row(r.id, r.attention, str(r.num_layers), *heads, f"{r.bytes_per_token:,}",
                      or_dash(r.state_bytes_per_sequence),
                      f"{r.max_model_len:,}" if r.max_model_len else "-")
    return table


def compact_table(rows: Sequence[ModelRow]) -> Table:
    """Narrow terminals: the models under their organization's line, with the attention kind, bytes per token
    and longest context; the other columns (layers, KV heads, head dim, state bytes) are in --json."""
    table = Table(title="bundled models (KV dtype auto; layers, KV heads, head dim, state: --json)",
                  title_justify="left")
    for name in ("model", "attn", "bytes/token", "max len"):
        table.add_column(name, justify="left" if name in ("model", "attn") else "right")
    org = None
    for r in rows:
        owner, _, name = r.id.rpartition("/")
        if owner and owner != org:
            table.add_row(f"{owner}/", "", "", "")
        org = owner
        table.add_row(name, r.attention, f"{r.bytes_per_token:,}", f"{r.max_model_len:,}" if r.max_model_len else "-")
    return table


class ModelsListing:
    """The full table where it fits the console's width, else the compact one (which stacks where even it
    does not)."""

    def __init__(self, rows: Sequence[ModelRow]) -> None:
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        full = full_table(self.rows)
        yield full if full.fits(options.max_width) else compact_table(self.rows)
