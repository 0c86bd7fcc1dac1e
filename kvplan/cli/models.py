"""`kvplan models`."""

from __future__ import annotations

from kvplan.cli.common import emit
from kvplan.cli.expand import command
from kvplan.cli.options import Json
from kvplan.config import bundled_index, load_model
from kvplan.errors import KvplanError
from kvplan.formulas import CacheRequest, kv_cache
from kvplan.render.models import ModelRow, model_row, models_tables


def model_rows() -> tuple[list[ModelRow], list[str]]:
    """One row per bundled model, and a warning for each kvplan refuses (also `kvplan mcp`'s models tool)."""
    rows, refused = [], []
    for model_id in bundled_index():
        try:
            rows.append(model_row(kv_cache(load_model(model_id), CacheRequest(max_model_len=1))))
        except KvplanError as exc:  # a config kvplan refuses names the field in one line
            refused.append(f"warning: not sized: {model_id}: {str(exc).rpartition('config.json: ')[2]}")
    return rows, refused


@command
def models(json: Json = False) -> None:
    """The bundled models: attention kind, layers, KV heads, head dim, bytes per token."""
    rows, refused = model_rows()
    emit(rows, json, models_tables, notes=refused)
