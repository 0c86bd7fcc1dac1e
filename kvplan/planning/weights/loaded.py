"""Weights as an engine loads them: what the load allocates beyond the checkpoint's tensors.

vLLM measures the weights as the torch allocation growth across ``load_model``, so this counts:
- the rotary cos/sin cache: ``positions × rotary_dim × bytes`` (one per RoPE configuration, cached by
  ``get_rope``); positions = ``max_position_embeddings``, or ``original_max_position_embeddings ×
  factor`` for YaRN; the model dtype, fp32 for gpt-oss (``models/gpt_oss.py``);
- MXFP4 experts as the MoE backend the release picks for the GPU keeps them (``mxfp4_layouts``: Marlin's
  padding, triton_kernels' swizzled scales, FlashInfer's and DeepGEMM's layouts);
- vLLM 0.7's V0 MLA: the absorbed ``W_Q·W_UK`` and ``W_UV·W_O`` per layer, ``2·h·(heads/tp)·kv_lora_rank``.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.engines.base import BudgetRules, BudgetTerm
from kvplan.planning.profile_run import dims
from kvplan.planning.quant_checks import moe_refined_scale_bytes
from kvplan.planning.weights.mxfp4_layouts import EXACT_LAYOUTS, LAYOUTS, layout_bytes
from kvplan.units import cdiv

ROTARY_FP32 = frozenset({"gpt_oss", "deepseek_v4"})  # model files that build their rotary cache in fp32
# DeepSeek-V4: rope over the last qk_rope_head_dim dims (rope_parameters["rope_dim"]), an fp32 cache
# (DeepseekV4ScalingRotaryEmbedding), one cache per rope_theta: compress_rope_theta for the compressed layers
# (vLLM 0.25 models/deepseek_v4/common/rope.py:9-37, model_executor/layers/rotary_embedding/__init__.py:66,
# deepseek_scaling_rope.py:233-248)
ROPE_DIM_TYPES = frozenset({"deepseek_v4"})
YARN_TYPES = ("yarn", "deepseek_yarn")


def rotary_bytes(model: ModelConfig) -> int:
    """positions × rotary_dim × bytes of the cos/sin cache (0 without max_position_embeddings)."""
    scaling = model.field("rope_scaling") or {}
    kind = scaling.get("rope_type") or scaling.get("type") if isinstance(scaling, dict) else None
    positions = int(model.field("max_position_embeddings") or 0)
    if kind in YARN_TYPES and scaling.get("original_max_position_embeddings") and scaling.get("factor"):
        positions = int(scaling["original_max_position_embeddings"] * scaling["factor"])
    if model.is_mla or model.model_type in ROPE_DIM_TYPES:
        rotary_dim = model.qk_rope_head_dim or int(model.raw.get("qk_rope_head_dim") or 0)
    else:
        rotary_dim = int(model.head_dim * float(model.field("partial_rotary_factor") or 1.0))
    width = 4 if model.model_type in ROTARY_FP32 else element_bits(model.dtype) // 8
    return positions * rotary_dim * width * _rope_thetas(model)


def _rope_thetas(model: ModelConfig) -> int:
    """Rotary caches get_rope builds: one, two for a DeepSeek-V4 with compressed layers on their own theta."""
    if model.model_type not in ROPE_DIM_TYPES:
        return 1
    ratios = model.raw.get("compress_ratios") or ()
    compressed = any(isinstance(r, int) and r > 1 for r in ratios)
    other = model.raw.get("compress_rope_theta") not in (None, model.raw.get("rope_theta"))
    return 2 if compressed and other else 1


def mla_absorbed_bytes(model: ModelConfig, tp: int, layers: int) -> int:
    heads = cdiv(model.num_attention_heads, tp)
    return 2 * model.hidden_size * heads * (model.kv_lora_rank or 0) * layers * dims(model).act_bytes


def loaded_extras(model: ModelConfig, rules: BudgetRules, tp: int, layers: int) -> Iterator[BudgetTerm]:
    """The terms a load adds on one GPU holding `layers` decoder layers."""
    rotary = rotary_bytes(model)
    if rotary:
        yield BudgetTerm(name="rotary cos/sin cache", bytes=rotary, exact=True, kind="weights_extra",
                         source="positions × rotary_dim × dtype bytes (rotary_embedding get_rope cache)")
    if rules.mxfp4_backend in LAYOUTS:
        yield mxfp4_term(model, rules, tp, layers)
    refined, extra = moe_refined_scale_bytes(model, tp) if rules.fp8_moe_refine else (0, 0)
    if extra:
        yield BudgetTerm(name=f"FP8 MoE scales refined to {refined}x{refined}", bytes=extra, exact=True,
                         kind="weights_extra", source="the experts' fp32 block scales on vLLM's refined grid "
                         "(0.29 fused_moe/oracle/fp8.py:272-302, quantization/fp8.py:566-586) over the checkpoint's")
    if rules.mla_absorbed and model.is_mla:
        yield BudgetTerm(name="MLA absorbed matrices", bytes=mla_absorbed_bytes(model, tp, layers), exact=False,
                         kind="weights_extra", source="vLLM 0.7 V0 MLA: W_Q·W_UK and W_UV·W_O per layer")


def mxfp4_term(model: ModelConfig, rules: BudgetRules, tp: int, layers: int) -> BudgetTerm:
    """The MXFP4 experts' layout on the release's backend for this GPU (``mxfp4_layouts``); an estimate where the
    backend is assumed or its layout rests on a kernel library's code."""
    backend = rules.mxfp4_backend or ""
    size = layout_bytes(model, backend, tp, layers, keeps_scales=rules.mxfp4_keeps_scales)
    why = rules.mxfp4_assumed or ("" if backend in EXACT_LAYOUTS else f"the {backend} layout's scale packing is "
                                  "its kernel library's (not read)")
    kept = ", original scales kept" if backend == "triton" and rules.mxfp4_keeps_scales else ""
    return BudgetTerm(name=f"MXFP4 {backend} layout", bytes=size, exact=not why, kind="weights_extra",
                      source=f"{backend} layout of the MXFP4 experts{kept} (kvplan.planning.weights.mxfp4_layouts; "
                             f"backend: {rules.mxfp4_source or 'the release default'})" + (f"; estimate: {why}"
                                                                                            if why else ""))
