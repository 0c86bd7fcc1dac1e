"""The multimodal encoder cache of vLLM's start-up profile run, for models with a vision tower.

vLLM V1 encodes a batch of dummy items of the modality with the most tokens per item before the
language model's dummy forward, and keeps their outputs in the encoder cache until the profile ends, so
they are part of the peak the KV budget is cut from:
- tokens per image, from the config: Gemma-3 ``mm_tokens_per_image`` (256; pan-and-scan crops off, vLLM's
  default: ``model_executor/models/gemma3_mm.py:197-213``), a CLIP tower (LLaVA) ``(image_size / patch_size)²``
  (576 for llava-1.5 at 336 px, 14 px patches);
- encoder budget = ``max(max_num_batched_tokens, tokens per item)`` (``compute_mm_encoder_budget``:
  ``encoder_cache_size`` and ``max_num_encoder_input_tokens`` both default to max_num_batched_tokens,
  ``config/scheduler.py:307``; ``v1/core/encoder_cache_manager.py:372-380`` in 0.33);
- items: 0.9 ``min(cdiv(budget, t), max_num_seqs × limit)``; 0.10 on ``max(1, min(budget // t, max_num_seqs ×
  max(1, min(limit, max_model_len // t))))`` (``get_max_items``; limit 999 per prompt by default);
- bytes: items × rows × the language model's hidden size × the model dtype, rows = t, except 0.11, which
  expands every output to the whole budget's rows before caching it (``gpu_model_runner.py:3374-3384``).
The tower's weights are part of the checkpoint's (``kvplan.planning.weights.vision``); the tower's own
forward activations during the profile are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.engines.base import BudgetTerm, EncoderRule
from kvplan.planning.weights.vision import vision_config
from kvplan.units import cdiv

GEMMA3_TOKENS_PER_IMAGE = 256  # Gemma3Config.mm_tokens_per_image default (transformers)


@dataclass(frozen=True, kw_only=True)
class EncoderSummary:
    """The encoder cache of the profile run on the first PP stage (JSON ``encoder_cache``)."""

    modality: str
    tokens_per_item: int
    budget_tokens: int  # the encoder cache's size in tokens (what vLLM logs as its budget)
    items_profiled: int
    rows_per_item: int  # rows each cached output holds (tokens per item, or the budget in 0.11)
    bytes_per_gpu: int
    tower: str  # the vision_config's model_type


def tokens_per_image(model: ModelConfig) -> int | None:
    """Placeholder tokens one image takes in the prompt (None: not a vision model kvplan knows). The config
    read here is the text model's with the wrapper's keys beside it, so the tower decides the rule."""
    vision = vision_config(model)
    if vision is None:
        return None
    if model.raw.get("mm_tokens_per_image") or model.model_type in ("gemma3", "gemma3_text"):
        return int(model.raw.get("mm_tokens_per_image") or GEMMA3_TOKENS_PER_IMAGE)
    if vision[0] == "clip_vision_model":  # LLaVA: one token per patch, the CLS token dropped (default strategy)
        size, patch = int(vision[1].get("image_size") or 0), int(vision[1].get("patch_size") or 0)
        return (size // patch) ** 2 if patch else None
    return None


def items(rule: EncoderRule, per_item: int, budget: int, max_model_len: int) -> int:
    """Dummy items the profile run encodes at once."""
    if rule.items_rule == "cdiv":
        return min(cdiv(budget, per_item), rule.max_num_seqs * rule.limit_per_prompt)
    per_prompt = max(1, min(rule.limit_per_prompt, max_model_len // per_item))
    return max(1, min(budget // per_item, rule.max_num_seqs * per_prompt))


def summary(model: ModelConfig, rule: EncoderRule, max_model_len: int) -> EncoderSummary | None:
    per_item = tokens_per_image(model)
    vision = vision_config(model)
    if not per_item or vision is None:
        return None
    budget = max(rule.budget_tokens, per_item)
    n = items(rule, per_item, budget, max_model_len)
    rows = budget if rule.padded_to_budget else per_item
    size = n * rows * model.hidden_size * element_bits(model.dtype) // 8
    return EncoderSummary(modality="image", tokens_per_item=per_item, budget_tokens=budget, items_profiled=n,
                          rows_per_item=rows, bytes_per_gpu=size, tower=vision[0])


def encoder_term(model: ModelConfig, rule: EncoderRule, max_model_len: int) -> BudgetTerm | None:
    found = summary(model, rule, max_model_len)
    if found is None:
        return None
    return BudgetTerm(
        name="encoder cache (profile run)", bytes=found.bytes_per_gpu, exact=True, kind="encoder_cache",
        source=f"{rule.source}: {found.items_profiled} images × {found.rows_per_item:,} rows × hidden "
               f"{model.hidden_size:,} × {element_bits(model.dtype) // 8} B (budget {found.budget_tokens:,} tokens, "
               f"{found.tokens_per_item} per image)")
