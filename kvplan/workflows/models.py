"""Layouts for the workflows: build_layout of a model or a name, for a CacheRequest or its fields."""

from __future__ import annotations

from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.formulas.layout import Layout, build_layout
from kvplan.formulas.request import CacheRequest, cache_request


def layout_of(model: ModelConfig | str, request: CacheRequest | None = None, **fields: Any) -> Layout:
    """build_layout of `request`, or of a CacheRequest with these fields (tp=, kv_dtype=, block_size=, ...)."""
    return build_layout(as_model(model), cache_request(request, **fields))
