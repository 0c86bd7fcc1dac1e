"""Weights as an engine loads them: what the load allocates beyond the checkpoint's tensors.

vLLM measures the weights as the torch allocation growth across ``load_model``, so this counts:
- the rotary cos/sin caches: ``positions × rotary_dim × bytes`` each, one per RoPE configuration the layers use
  (``rotary``: positions by scaling type, Gemma-3's two caches, M-RoPE's × 4);
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
from kvplan.engines.base import BudgetRules, BudgetTerm, LoadRule
from kvplan.planning.profile_run import dims
from kvplan.planning.weights.formats import weight_format
from kvplan.planning.weights.rotary import rope_caches
from kvplan.planning.weights.wna16 import is_awq_with_zeros, machete_zero_point_bytes
from kvplan.units import cdiv

EXPERT_BIASES = frozenset({"gpt_oss"})  # MXFP4 MoE with expert biases (w13_bias, w2_bias)


def _round_up(value: int, multiple: int) -> int:
    return cdiv(value, multiple) * multiple


def rotary_bytes(model: ModelConfig, *, mrope_per_model: bool = False) -> int:
    """Bytes of every cos/sin cache the load builds (0 without max_position_embeddings)."""
    return sum(c.bytes for c in rope_caches(model, mrope_per_model=mrope_per_model))


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


def awq_terms(model: ModelConfig, load: LoadRule | None, tp: int, first: int, layers: int) -> Iterator[BudgetTerm]:
    """AWQ zero points as the release's linear kernel keeps them on this GPU (``wna16``)."""
    if load is None or not is_awq_with_zeros(weight_format(model)):
        return
    if load.awq_kernel is None:
        yield BudgetTerm(name="AWQ zero points (kernel unknown)", bytes=0, exact=False, kind="weights_extra",
                         source="the GPU's compute capability is unknown: Marlin assumed (4-bit zeros as stored); "
                                "Machete on sm90 would keep one activation-dtype zero per group")
    elif load.awq_kernel == "machete":
        yield BudgetTerm(name="AWQ zero points, Machete", bytes=machete_zero_point_bytes(model, tp, first, layers),
                         exact=False, kind="weights_extra",
                         source="sm90: zero points kept as -scale × zero in the activation dtype, one per group and "
                                "output, instead of 4 bits (vLLM 0.19 kernels/linear/mixed_precision/machete.py:110-118); "
                                "an estimate: a vLLM 0.31 H200 log of Qwen2.5-7B-AWQ loaded 0.11 GiB more than counted "
                                "(not found in the load path; the same checkpoint on Marlin matches)")


def mla_absorbed_bytes(model: ModelConfig, tp: int, layers: int) -> int:
    heads = cdiv(model.num_attention_heads, tp)
    return 2 * model.hidden_size * heads * (model.kv_lora_rank or 0) * layers * dims(model).act_bytes


def loaded_extras(model: ModelConfig, rules: BudgetRules, tp: int, layers: int, *,
                  first: int = 0) -> Iterator[BudgetTerm]:
    """The terms a load adds on one GPU holding decoder layers first..first+layers-1."""
    rotary = rotary_bytes(model, mrope_per_model=rules.load is not None and rules.load.mrope_per_model)
    if rotary:
        yield BudgetTerm(name="rotary cos/sin cache", bytes=rotary, exact=True, kind="weights_extra",
                         source="positions × rotary_dim × dtype bytes, one cache per RoPE configuration "
                                "(rotary_embedding get_rope; positions by scaling type)")
    yield from awq_terms(model, rules.load, tp, first, layers)
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
