"""Reading model configs: resolution (path, bundled id, HF cache, hub) and normalization.

The only package that reads files. A name is resolved and its file read on every call; a small
file's parse is cached on its bytes (``hf.load_file``), so sweeps and comparisons that name a model
many times parse it once, and an edited file is never served stale.
"""

from __future__ import annotations

from kvplan.config.hf import load_file, normalize, with_dtype
from kvplan.config.model import ModelConfig
from kvplan.config.resolve import bundled_index, resolve

__all__ = ["ModelConfig", "as_model", "bundled_index", "load_file", "load_model", "normalize", "resolve", "with_dtype"]


def load_model(name: str, revision: str | None = None) -> ModelConfig:
    """A model id, alias or path -> its normalized ModelConfig. An `org/name` id found neither bundled nor
    in the HF cache has its config.json fetched from the hub (unless HF_HUB_OFFLINE); `revision` pins a
    hub revision. Never weights, never code: the config is read as JSON."""
    path, model_id = resolve(name, revision)
    return load_file(path, model_id=model_id)


def as_model(model: ModelConfig | str) -> ModelConfig:
    """Library entry points take a ModelConfig or anything load_model accepts."""
    return load_model(model) if isinstance(model, str) else model
