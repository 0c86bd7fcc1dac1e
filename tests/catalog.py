"""The bundled catalog as the tests see it: which configs kvplan sizes, and which it refuses by design.

Every bundled config is a real one (configs/SOURCES.md). A few name an architecture kvplan does not
model; kvplan answers those with one line naming the field, never a number (REFUSED). Two leave the
text model's fields to the transformers config class defaults, which kvplan applies once the class
default table (config/defaults.py) supplies them (NEEDS_CLASS_DEFAULTS): with the table they are sized
like every other config; without it they would refuse naming the missing field, and the tests follow
whichever holds.
"""

from __future__ import annotations

from functools import cache

from kvplan.config import bundled_index, load_model
from kvplan.errors import ConfigError

REFUSED: dict[str, str] = {}  # none today: DeepSeek-V4-Flash (compress_ratios) and mllama (cross_attention_layers)
# were refused until kvplan sized them
NEEDS_CLASS_DEFAULTS = {
    "google/gemma-3-4b-it": "num_attention_heads",  # Gemma3TextConfig defaults (8 heads, 4 KV heads, 256)
    "llava-hf/llava-1.5-7b-hf": "num_hidden_layers",  # LlamaConfig defaults (32 layers, 4096, 32 heads)
}


@cache
def sized_ids() -> tuple[str, ...]:
    """Bundled ids kvplan sizes: all but the refused, and the class-default ones only once they load."""
    out = []
    for model_id in bundled_index():
        if model_id in REFUSED:
            continue
        if model_id in NEEDS_CLASS_DEFAULTS:
            try:
                load_model(model_id)
            except ConfigError:
                continue
        out.append(model_id)
    return tuple(out)

# Bundled configs whose weights no transformers class builds on the meta device: kvplan's formula counts them
# (kvplan.planning.weights.parts), so they are checked against hand derivations, not against a meta build.
WEIGHTS_FROM_FORMULA = {
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1": "nemotron-nas (DeciLM) is remote code: block_configs by formula",
}


def weights_ids() -> tuple[str, ...]:
    """Sized bundled ids whose weights transformers builds on the meta device (every one but WEIGHTS_FROM_FORMULA)."""
    return tuple(m for m in sized_ids() if m not in WEIGHTS_FROM_FORMULA)
