"""Weights as an engine loads them: what the load allocates beyond the checkpoint's tensors.

vLLM measures the weights as the torch allocation growth across ``load_model``, so this counts:
- the rotary cos/sin cache: ``positions × rotary_dim × bytes`` (one per RoPE configuration, cached by
  ``get_rope``); positions = ``max_position_embeddings``, or ``original_max_position_embeddings ×
  factor`` for YaRN; the model dtype, fp32 for gpt-oss (``models/gpt_oss.py``);
- MXFP4 experts re-laid for the Marlin kernel: ``I/tp`` rounded up to 128 and ``h`` to 256
  (``quantization/mxfp4.py`` in 0.10/0.11), at 4 bits plus one E8M0 scale per 32;
- MXFP4 experts for triton_kernels (vLLM's Hopper default from 0.14 to 0.33): ``I/tp`` rounded up to 64
  (0.14 ``quantization/mxfp4.py:316-318``; 0.33 ``fused_moe/oracle/mxfp4.py:915``), the block scales
  swizzled by HopperMXScaleLayout into rows padded to 2·num_warps·2·8 = 256 and columns to 2
  (``third_party/triton_kernels/tensor_details/layout_details/hopper_scale.py:22-28``), the expert biases
  cast to fp32 (0.14 ``mxfp4.py:749-750``); releases up to 0.24 keep the original scales beside the
  swizzled ones (0.14 ``mxfp4.py:782-786`` deletes only the weights), 0.25 on delete them
  (0.25 ``fused_moe/oracle/mxfp4.py:1153-1156``);
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
EXPERT_BIASES = frozenset({"gpt_oss"})  # MXFP4 MoE with expert biases (w13_bias, w2_bias)
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


def _scales(experts: int, inter: int, hidden: int) -> int:
    """E8M0 block scales of one layer's experts: gate_up (2I rows × h/32), down (h rows × I/32)."""
    return experts * (2 * inter * cdiv(hidden, 32) + hidden * cdiv(inter, 32))


def _swizzled_scales(experts: int, inter: int, hidden: int) -> int:
    return experts * (_round_up(2 * inter, 256) * _round_up(cdiv(hidden, 32), 2)
                      + _round_up(hidden, 256) * _round_up(cdiv(inter, 32), 2))


def triton_layout_bytes(model: ModelConfig, tp: int, layers: int, *, keeps_scales: bool = False) -> int:
    """Bytes the triton_kernels MXFP4 layout adds per GPU over `layers` MoE layers, over the checkpoint's."""
    d = dims(model)
    inter = cdiv(d.moe_intermediate, tp)
    padded, e, h = _round_up(inter, 64), d.num_experts, d.hidden
    values = e * 3 * (padded - inter) * h // 2
    scales = _swizzled_scales(e, padded, h) + (_scales(e, padded, h) if keeps_scales else 0) - _scales(e, inter, h)
    biases = e * ((2 * padded + h) * 4 - (2 * inter + h) * 2) if model.model_type in EXPERT_BIASES else 0
    return (values + scales + biases) * layers


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
    mxfp4 = isinstance(quant, dict) and quant.get("quant_method") == "mxfp4"
    if rules.mxfp4_backend == "marlin" and mxfp4:
        yield BudgetTerm(name="MXFP4 Marlin padding", bytes=marlin_padding_bytes(model, tp, layers), exact=True,
                         kind="weights_extra", source="experts padded to I/tp → ×128, h → ×256 (quantization/mxfp4.py)")
    if rules.mxfp4_backend == "triton" and mxfp4:
        keeps = bool(getattr(rules, "mxfp4_triton_keeps_scales", False))  # a release row's flag (vLLM 0.14-0.24)
        yield BudgetTerm(name="MXFP4 triton_kernels layout", bytes=triton_layout_bytes(model, tp, layers,
                         keeps_scales=keeps), exact=True, kind="weights_extra",
                         source="I/tp → ×64, block scales swizzled to 256-row tiles, expert biases fp32"
                                + (", original scales kept (vLLM ≤ 0.24)" if keeps else "")
                                + " (vLLM fused_moe/oracle/mxfp4.py, triton_kernels hopper_scale.py)")
    if rules.mla_absorbed and model.is_mla:
        yield BudgetTerm(name="MLA absorbed matrices", bytes=mla_absorbed_bytes(model, tp, layers), exact=False,
                         kind="weights_extra", source="vLLM 0.7 V0 MLA: W_Q·W_UK and W_UV·W_O per layer")
