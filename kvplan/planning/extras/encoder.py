"""The multimodal encoder of vLLM's start-up profile run, for models with a vision tower.

vLLM V1 encodes a batch of dummy items of the modality with the most tokens per item before the
language model's dummy forward, and keeps their outputs in the encoder cache until the profile ends, so
both the tower's forward and the cached outputs are part of the peak the KV budget is cut from:
- the dummy item, its patches and tokens, and one tower layer's peak per patch: ``kvplan.planning.extras.towers``
  (Qwen2/2.5/3-VL and Qwen3.5/3.6 at the processor's max_pixels, Gemma-3's SigLIP, LLaVA's CLIP);
- encoder budget = ``max(max_num_batched_tokens, tokens per item)`` (``compute_mm_encoder_budget``:
  ``encoder_cache_size`` and ``max_num_encoder_input_tokens`` both default to max_num_batched_tokens,
  ``config/scheduler.py:307``; ``v1/core/encoder_cache_manager.py:372-380`` in 0.33);
- items: 0.9 ``min(cdiv(budget, t), max_num_seqs × limit)``; 0.10 on ``max(1, min(budget // t, max_num_seqs ×
  max(1, min(limit, max_model_len // t))))`` (``get_max_items``; limit 999 per prompt by default);
- the tower runs over every item's patches at once (0.23 ``v1/worker/gpu_model_runner.py:6195-6225``
  ``embed_multimodal(**batched_dummy_mm_inputs)``; 0.33 ``v1/worker/gpu/mm/encoder_runner.py:111-148``); its peak,
  less what the cache holds later anyway, enters the activation term (``kvplan.planning.profile_run``);
- cache bytes: items × rows × the cached row width (the text hidden; Qwen3-VL's DeepStack levels widen it) × the
  model dtype, rows = t, except 0.11, which expands every output to the whole budget's rows before caching it
  (``gpu_model_runner.py:3374-3384``).
``--limit-mm-per-prompt 0`` for every modality, or ``--language-model-only`` (0.17), profiles no encoder.
The tower's weights are part of the checkpoint's (``kvplan.planning.weights.vision``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.engines.base import BudgetRules, BudgetTerm, EncoderRule, Request
from kvplan.planning.extras import has_tower
from kvplan.records import Record
from kvplan.units import cdiv, format_gib

if TYPE_CHECKING:
    from kvplan.planning.extras.towers import Tower


class EncoderSummary(Record):
    """The encoder cache of the profile run on the first PP stage (JSON ``encoder_cache``)."""

    modality: str
    tokens_per_item: int
    budget_tokens: int  # the encoder cache's size in tokens (what vLLM logs as its budget)
    items_profiled: int
    rows_per_item: int  # rows each cached output holds (tokens per item, or the budget in 0.11)
    bytes_per_gpu: int
    tower: str  # the vision_config's model_type
    patches_per_item: int = 0  # patches the tower runs per item
    forward_peak_bytes_per_gpu: int = 0  # the tower's forward over every dummy item at once (an estimate)
    assumed: str = ""  # a processor default the config does not state
    row_width: int = 0  # elements of one cached row (the text hidden; × (1 + DeepStack levels) for Qwen3-VL)


def _tower(model: ModelConfig) -> Tower | None:
    if not isinstance(model.raw.get("vision_config"), dict):  # towers.tower's own first test, without its import
        return None
    from kvplan.planning.extras.towers import tower

    return tower(model)


def tokens_per_image(model: ModelConfig) -> int | None:
    """Placeholder tokens one image takes in the prompt (None: not a vision tower kvplan models)."""
    found = _tower(model)
    return found.tokens_per_item if found else None


def items(rule: EncoderRule, per_item: int, budget: int, max_model_len: int) -> int:
    """Dummy items the profile run encodes at once."""
    if rule.items_rule == "cdiv":
        return min(cdiv(budget, per_item), rule.max_num_seqs * rule.limit_per_prompt)
    per_prompt = max(1, min(rule.limit_per_prompt, max_model_len // per_item))
    return max(1, min(budget // per_item, rule.max_num_seqs * per_prompt))


def summary(model: ModelConfig, rule: EncoderRule, max_model_len: int, tp: int = 1) -> EncoderSummary | None:
    found = _tower(model)
    if found is None:
        return None
    from kvplan.planning.extras.towers import forward_peak

    s = element_bits(model.dtype) // 8
    budget = max(rule.budget_tokens, found.tokens_per_item)
    n = items(rule, found.tokens_per_item, budget, max_model_len)
    rows = budget if rule.padded_to_budget else found.tokens_per_item
    return EncoderSummary(modality="image", tokens_per_item=found.tokens_per_item, budget_tokens=budget,
                          items_profiled=n, rows_per_item=rows, bytes_per_gpu=n * rows * found.output_width * s,
                          tower=found.kind, patches_per_item=found.patches_per_item,
                          forward_peak_bytes_per_gpu=forward_peak(found, n, tp, s), assumed=found.assumed,
                          row_width=found.output_width)


def _why(found: EncoderSummary, model: ModelConfig) -> str:
    return (f"{found.items_profiled} images × {found.rows_per_item:,} rows × width {found.row_width:,} × "
            f"{element_bits(model.dtype) // 8} B (budget {found.budget_tokens:,} tokens, {found.tokens_per_item:,} per "
            f"image)" + (f"; assumed {found.assumed}" if found.assumed else ""))


def encoder_term(model: ModelConfig, rule: EncoderRule, max_model_len: int) -> BudgetTerm | None:
    found = summary(model, rule, max_model_len)
    if found is None:
        return None
    return BudgetTerm(name="encoder cache (profile run)", bytes=found.bytes_per_gpu, exact=not found.assumed,
                      kind="encoder_cache", source=f"{rule.source}: {_why(found, model)}")


def encoder_phase(model: ModelConfig, rule: EncoderRule, max_model_len: int, tp: int) -> tuple[int, str] | None:
    """(the tower's forward peak beyond the cache the later phases hold, how it was sized) on the first stage."""
    found = summary(model, rule, max_model_len, tp)
    if found is None:
        return None
    detail = (f"encoder forward over {found.items_profiled} × {found.patches_per_item:,} patches ({found.tower}) "
              f"{format_gib(found.forward_peak_bytes_per_gpu)} GiB")
    return found.forward_peak_bytes_per_gpu - found.bytes_per_gpu, detail


def unmodelled_tower_note(request: Request, rules: BudgetRules) -> str | None:
    """A model whose profile run encodes dummy items of a tower kvplan does not size: said, not guessed."""
    if rules.encoder is None or not has_tower(request.model) or _tower(request.model) is not None:
        return None
    from kvplan.planning.weights.vision import vision_config

    vision, audio = vision_config(request.model), request.model.raw.get("audio_config")
    if vision is None and not isinstance(audio, dict):
        return None
    name = (vision[0] or "vision") if vision else str(audio.get("model_type") or "audio") if isinstance(audio, dict) \
        else "audio"
    return (f"warning: the profile run encodes dummy items with the {name} tower; kvplan does not model its dummy "
            "item, forward peak or encoder cache, so the KV budget may be too large")
