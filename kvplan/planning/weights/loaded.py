"""Weights as an engine loads them: what the load allocates beyond the checkpoint's tensors.

vLLM measures the weights as the torch allocation growth across ``load_model``, so this counts:
- the rotary cos/sin cache: ``positions × rotary_dim × bytes`` (one per RoPE configuration, cached by
  ``get_rope``); positions = ``max_position_embeddings``, or ``original_max_position_embeddings ×
  factor`` for YaRN; the model dtype, fp32 for gpt-oss (``models/gpt_oss.py``);
- MXFP4 experts re-laid for the Marlin kernel: ``I/tp`` rounded up to 128 and ``h`` to 256
  (``quantization/mxfp4.py`` in 0.10/0.11), at 4 bits plus one E8M0 scale per 32;
- vLLM 0.7's V0 MLA: the absorbed ``W_Q·W_UK`` and ``W_UV·W_O`` per layer, ``2·h·(heads/tp)·kv_lora_rank``.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.engines.base import BudgetRules, BudgetTerm
from kvplan.planning.profile_run import dims
from kvplan.units import cdiv

ROTARY_FP32 = frozenset({"gpt_oss"})  # model files that build their rotary cache in fp32
YARN_TYPES = ("yarn", "deepseek_yarn")


def _round_up(value: int, multiple: int) -> int:
    return cdiv(value, multiple) * multiple


def rotary_bytes(model: ModelConfig) -> int:
    """positions × rotary_dim × bytes of the cos/sin cache (0 without max_position_embeddings)."""
    scaling = model.field("rope_scaling") or {}
    kind = scaling.get("rope_type") or scaling.get("type") if isinstance(scaling, dict) else None
    positions = int(model.field("max_position_embeddings") or 0)
    if kind in YARN_TYPES and scaling.get("original_max_position_embeddings") and scaling.get("factor"):
        positions = int(scaling["original_max_position_embeddings"] * scaling["factor"])
    if model.is_mla:
        rotary_dim = model.qk_rope_head_dim or 0
    else:
        rotary_dim = int(model.head_dim * float(model.field("partial_rotary_factor") or 1.0))
    width = 4 if model.model_type in ROTARY_FP32 else element_bits(model.dtype) // 8
    return positions * rotary_dim * width


def _mxfp4_expert_bytes(inter: int, hidden: int) -> int:
    """One expert's gate_up (2I × h) and down (h × I) at 4 bits + one byte per 32 values."""
    values = 3 * inter * hidden
    return values // 2 + values // 32


def marlin_padding_bytes(model: ModelConfig, tp: int, layers: int) -> int:
    """Bytes Marlin's padded expert layout adds per GPU over `layers` MoE layers."""
    d = dims(model)
    inter = cdiv(d.moe_intermediate, tp)
    padded = _mxfp4_expert_bytes(_round_up(inter, 128), _round_up(d.hidden, 256))
    return (padded - _mxfp4_expert_bytes(inter, d.hidden)) * d.num_experts * layers


def mla_absorbed_bytes(model: ModelConfig, tp: int, layers: int) -> int:
    heads = cdiv(model.num_attention_heads, tp)
    return 2 * model.hidden_size * heads * (model.kv_lora_rank or 0) * layers * dims(model).act_bytes


def loaded_extras(model: ModelConfig, rules: BudgetRules, tp: int, layers: int) -> Iterator[BudgetTerm]:
    """The terms a load adds on one GPU holding `layers` decoder layers."""
    rotary = rotary_bytes(model)
    if rotary:
        yield BudgetTerm(name="rotary cos/sin cache", bytes=rotary, exact=True, kind="weights_extra",
                         source="positions × rotary_dim × dtype bytes (rotary_embedding get_rope cache)")
    quant = model.raw.get("quantization_config")
    if rules.mxfp4_backend == "marlin" and isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        yield BudgetTerm(name="MXFP4 Marlin padding", bytes=marlin_padding_bytes(model, tp, layers), exact=True,
                         kind="weights_extra", source="experts padded to I/tp → ×128, h → ×256 (quantization/mxfp4.py)")
    if rules.mla_absorbed and model.is_mla:
        yield BudgetTerm(name="MLA absorbed matrices", bytes=mla_absorbed_bytes(model, tp, layers), exact=False,
                         kind="weights_extra", source="vLLM 0.7 V0 MLA: W_Q·W_UK and W_UV·W_O per layer")
