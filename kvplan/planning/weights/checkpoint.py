"""Parts from a checkpoint's own safetensors headers (filled in below)."""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.planning.weights.part import ModelParts


def checkpoint_parts(model: ModelConfig) -> ModelParts | None:
    return None
