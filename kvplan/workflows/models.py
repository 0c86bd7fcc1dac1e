"""Models and layouts for the workflows: a name is loaded once, a layout built once (both cached)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.formulas.sizing import Layout, build_layout


@lru_cache(maxsize=256)
def _load(name: str) -> ModelConfig:
    from kvplan.config import load_model

    return load_model(name)


def as_model(model: ModelConfig | str) -> ModelConfig:
    """kvplan.config.as_model, with names loaded once per process (a sweep names a model many times)."""
    return _load(model) if isinstance(model, str) else model


def layout_of(model: ModelConfig | str, **layout_options: Any) -> Layout:
    """build_layout with the same keywords (tp, pp, dcp, kv_dtype, block_size, quant_group, overrides)."""
    return build_layout(as_model(model), **layout_options)
