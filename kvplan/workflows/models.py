"""Layouts for the workflows: build_layout with the same keywords, on a model or a name."""

from __future__ import annotations

from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.formulas.layout import Layout, build_layout


def layout_of(model: ModelConfig | str, **layout_options: Any) -> Layout:
    """build_layout with the same keywords (tp, pp, dcp, kv_dtype, block_size, quant_group, overrides)."""
    return build_layout(as_model(model), **layout_options)
