"""Which models vLLM builds MTP modules for (``kvplan.config.mtp``): its drafters by the name it matches. Apart from
the modules' arithmetic, so that a model with none (most) never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig

Attention = Literal["full", "sliding", "sliding_latent", "by_index"]
Mlp = Literal["last", "dense", "moe", "own"]
Head = Literal["shared_head", "lm_head"]  # where a module's logits come from
Count = Literal["config", "config_or_1", "one"]  # how many modules: the config's, the config's else 1, or 1
Row = tuple[str, Count, bool, Attention, Mlp, Head, bool]  # Family's fields, in order
DEEPSEEK: Row = ("DeepSeekMTPModel", "config", True, "full", "last", "shared_head", True)
DEEPSEEK_V32: Row = ("DeepseekV32MTPModel", *DEEPSEEK[1:])
QWEN3_5: Row = ("Qwen3_5MTP", "config_or_1", True, "full", "last", "lm_head", True)
QWEN3_5_MOE: Row = ("Qwen3_5MoeMTP", *QWEN3_5[1:])
NEMOTRON_H: Row = ("NemotronHMTPModel", "one", True, "full", "moe", "lm_head", False)
EXAONE4_5: Row = ("Exaone4_5_MTP", "config", True, "by_index", "own", "lm_head", True)
# What vLLM matches (a model_type, or the first architecture), and the drafter it builds.
FAMILIES: dict[str, Row] = {
    "deepseek_v32": DEEPSEEK_V32, "glm_moe_dsa": DEEPSEEK_V32, "deepseek_v3": DEEPSEEK,
    "deepseek_v4": ("DeepSeekV4MTPModel", "config", True, "sliding_latent", "last", "shared_head", False),
    "Glm4MoeForCausalLM": ("Glm4MoeMTPModel", *DEEPSEEK[1:]),
    "qwen3_next": ("Qwen3NextMTP", "config_or_1", False, "full", "last", "lm_head", True),
    "Qwen3_5ForConditionalGeneration": QWEN3_5, "Qwen3_5MoeForConditionalGeneration": QWEN3_5_MOE,
    "qwen3_5": QWEN3_5, "qwen3_5_moe": QWEN3_5_MOE, "qwen3_5_text": QWEN3_5, "qwen3_5_moe_text": QWEN3_5_MOE,
    "MiMoForCausalLM": ("MiMoMTPModel", "config", True, "full", "last", "lm_head", True),
    "MiMoV2FlashForCausalLM": ("MiMoV2MTPModel", "one", True, "sliding", "dense", "lm_head", True),
    "nemotron_h": NEMOTRON_H, "nemotron_h_puzzle": NEMOTRON_H,
    "exaone4_5": EXAONE4_5, "exaone4_5_text": EXAONE4_5,
}


def family_key(model: ModelConfig) -> str | None:
    """The name vLLM matches for the model's MTP drafter (its wrapper's architecture or model_type first), else None."""
    archs = model.raw.get("architectures") or []
    names = [*(a for a in archs if isinstance(a, str)), model.model_type]
    return next((name for name in names if name in FAMILIES), None)

