"""Weights as an engine loads them: what the load allocates beyond the checkpoint's tensors.

vLLM measures the weights as the torch allocation growth across ``load_model``, so this counts:
- the rotary cos/sin caches: ``positions × rotary_dim × bytes`` each, one per RoPE configuration the layers use
  (``rotary``: positions by scaling type, Gemma-3's two caches, M-RoPE's × 4, DeepSeek-V4's fp32 pair);
- MXFP4 experts as the MoE backend the release picks for the GPU keeps them (``mxfp4_layouts``: Marlin's
  padding, triton_kernels' swizzled scales, FlashInfer's and DeepGEMM's layouts);
- AWQ zero points as the linear kernel keeps them (``wna16``: Machete on sm90 from 0.19);
- vLLM 0.7's V0 MLA: the absorbed ``W_Q·W_UK`` and ``W_UV·W_O`` per layer, ``2·h·(heads/tp)·kv_lora_rank``.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvplan.config.model import ModelConfig
from kvplan.engines.base import BudgetRules, BudgetTerm, LoadRule
from kvplan.memo import IdentityCache
from kvplan.planning.profile_run import dims
from kvplan.planning.weights.formats import fp8_method, weight_format
from kvplan.planning.weights.rotary import rope_caches
from kvplan.planning.weights.storage import is_awq_with_zeros
from kvplan.units import cdiv


def rotary_bytes(model: ModelConfig, *, mrope_per_model: bool = False) -> int:
    """Bytes of every cos/sin cache the load builds (0 without max_position_embeddings); once per model object, as
    every PP stage of every layout (fit) counts them."""
    return _ROTARY.get(model, mrope_per_model,
                       lambda: sum(c.bytes for c in rope_caches(model, mrope_per_model=mrope_per_model)))


_ROTARY: IdentityCache[int] = IdentityCache(maxsize=64)


def awq_terms(model: ModelConfig, load: LoadRule | None, tp: int, first: int, layers: int) -> Iterator[BudgetTerm]:
    """AWQ zero points as the release's linear kernel keeps them on this GPU (``wna16``)."""
    if load is None or not is_awq_with_zeros(weight_format(model)):
        return
    if load.awq_kernel is None:
        yield BudgetTerm(name="AWQ zero points (kernel unknown)", bytes=0, exact=False, kind="weights_extra",
                         source="the GPU's compute capability is unknown: Marlin assumed (4-bit zeros as stored); "
                                "Machete on sm90 would keep one activation-dtype zero per group")
    elif load.awq_kernel == "machete":
        from kvplan.planning.weights.wna16 import machete_zero_point_bytes

        yield BudgetTerm(name="AWQ zero points, Machete", bytes=machete_zero_point_bytes(model, tp, first, layers),
                         exact=False, kind="weights_extra",
                         source="sm90: zero points kept as -scale × zero in the activation dtype, one per group and "
                                "output, instead of 4 bits (vLLM 0.19 kernels/linear/mixed_precision/machete.py:110-118); "
                                "an estimate: a vLLM 0.31 H200 log of Qwen2.5-7B-AWQ loaded 0.11 GiB more than counted "
                                "(not found in the load path; the same checkpoint on Marlin matches)")


def reads_first_layer(model: ModelConfig, rules: BudgetRules) -> bool:
    """Whether loaded_extras reads which layer a stage starts at (AWQ zero points), not only how many it holds."""
    return rules.load is not None and is_awq_with_zeros(weight_format(model))


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
    if rules.mxfp4_backend is not None and (term := mxfp4_term(model, rules, tp, layers)):
        yield term
    refined, extra = _moe_refined_scale_bytes(model, tp) if rules.fp8_moe_refine and fp8_method(model) else (0, 0)
    if extra:
        yield BudgetTerm(name=f"FP8 MoE scales refined to {refined}x{refined}", bytes=extra, exact=True,
                         kind="weights_extra", source="the experts' fp32 block scales on vLLM's refined grid "
                         "(0.29 fused_moe/oracle/fp8.py:272-302, quantization/fp8.py:566-586) over the checkpoint's")
    if rules.mla_absorbed and model.is_mla:
        yield BudgetTerm(name="MLA absorbed matrices", bytes=mla_absorbed_bytes(model, tp, layers), exact=False,
                         kind="weights_extra", source="vLLM 0.7 V0 MLA: W_Q·W_UK and W_UV·W_O per layer")


def _moe_refined_scale_bytes(model: ModelConfig, tp: int) -> tuple[int, int]:
    from kvplan.planning.quant_checks import moe_refined_scale_bytes  # a release that refines FP8 MoE scales

    return moe_refined_scale_bytes(model, tp)


def mxfp4_term(model: ModelConfig, rules: BudgetRules, tp: int, layers: int) -> BudgetTerm | None:
    """The MXFP4 experts' layout on the release's backend for this GPU (``mxfp4_layouts``; None: a backend it has no
    layout for); an estimate where the backend is assumed or its layout rests on a kernel library's code."""
    from kvplan.planning.weights.mxfp4_layouts import EXACT_LAYOUTS, LAYOUTS, layout_bytes  # an MXFP4 backend named

    backend = rules.mxfp4_backend or ""
    if backend not in LAYOUTS:
        return None
    size = layout_bytes(model, backend, tp, layers, keeps_scales=rules.mxfp4_keeps_scales)
    why = rules.mxfp4_assumed or ("" if backend in EXACT_LAYOUTS else f"the {backend} layout's scale packing is "
                                  "its kernel library's (not read)")
    kept = ", original scales kept" if backend == "triton" and rules.mxfp4_keeps_scales else ""
    return BudgetTerm(name=f"MXFP4 {backend} layout", bytes=size, exact=not why, kind="weights_extra",
                      source=f"{backend} layout of the MXFP4 experts{kept} (kvplan.planning.weights.mxfp4_layouts; "
                             f"backend: {rules.mxfp4_source or 'the release default'})" + (f"; estimate: {why}"
                                                                                            if why else ""))
