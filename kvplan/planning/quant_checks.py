"""vLLM's check that a block-quantized FP8 checkpoint's weight blocks divide at the requested TP, on the weight
inventory (``kvplan.planning.weights.parts``), release by release.

``validate_fp8_block_shape`` (0.33 ``model_executor/layers/quantization/utils/fp8_utils.py:1296-1344``, from
``Fp8LinearMethod.create_weights``) for a checkpoint with ``weight_block_size = [block_n, block_k]``:
- a row-parallel layer (o_proj, down_proj) at tp > 1: its input per rank must be a multiple of block_k;
- a column-parallel layer: its output per rank a multiple of block_n. A merged layer (QKV, gate_up) whose partitions
  do not divide is let through from 0.14 (``linear.py:562-585``, ``allow_fp8_block_shape_mismatch``); before,
  each partition is checked (0.11 ``fp8_utils.py:760-782``);
- MoE experts (``fp8_utils.py:1347-1374``; 0.11 ``quantization/fp8.py:505-515``): the intermediate size per rank a
  multiple of block_n, and at tp > 1 of block_k. Experts are not split under expert parallelism (kvplan's DP).
  From 0.29 a block that does not divide is first refined (``moe_refined_block``): the largest common divisor of
  block_n, block_k, the per-rank intermediate size and the hidden size, when it is at least 32, becomes the scale
  grid (the checkpoint's scales upsampled; 0.29 ``fused_moe/oracle/fp8.py:272-302``, ``quantization/fp8.py:
  500-520, 566-586``; 0.33 ``quantization/fp8.py:480-566``), and only a shape with no refinement is refused.
The first layer that fails refuses the start; kvplan walks the layers in order.
"""

from __future__ import annotations

import math
from functools import lru_cache

from kvplan.config.model import ModelConfig
from kvplan.errors import KvplanError
from kvplan.memo import IdentityCache
from kvplan.planning.weights.formats import content_key, fp8_method
from kvplan.planning.weights.part import Part

MERGED = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "gate_proj", "up_proj", "linear_attn.")


def block_shape(model: ModelConfig) -> tuple[int, int] | None:
    if not fp8_method(model):
        return None
    block = model.raw["quantization_config"].get("weight_block_size")
    if not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
        return None
    return block[0], block[1]


def _merged(part: Part, model: ModelConfig) -> bool:
    return any(part.name.endswith(m) or part.name.startswith(m) for m in MERGED) and not (
        model.is_mla and part.name == "self_attn.q_proj")


MOE_REFINE_MIN = 32  # the finest block vLLM refines FP8 MoE scales to


def refined_block(block: tuple[int, int], inter: int, tp: int, hidden: int) -> int | None:
    """The square block vLLM 0.29+ refines an FP8 MoE's scales to at `inter` columns per rank (None: the
    checkpoint's blocks divide, or no block of at least 32 divides them all)."""
    if inter % block[0] == 0 and (tp == 1 or inter % block[1] == 0):
        return None
    refine = math.gcd(block[0], block[1], inter, hidden)
    return refine if refine >= MOE_REFINE_MIN else None


def _expert_refusal(part: Part, tp: int, block: tuple[int, int], refine: bool) -> str | None:
    inter = (part.shape[0] // 2 if "gate_up" in part.name else part.shape[1]) // tp
    hidden = part.shape[1] if "gate_up" in part.name else part.shape[0]
    if refine and refined_block(block, inter, tp, hidden) is not None:
        return None
    if "gate_up" in part.name and inter % block[0]:
        return f"The output_size of gate's and up's weight = {inter} is not divisible by weight quantization block_n = {block[0]}."
    if "down" in part.name and tp > 1 and inter % block[1]:
        return f"The input_size of down's weight = {inter} is not divisible by weight quantization block_k = {block[1]}."
    return None


def _part_refusal(part: Part, model: ModelConfig, tp: int, block: tuple[int, int], merged_relaxed: bool,
                  refine: bool = False) -> str | None:
    if not part.is_linear or part.tp in ("replicated", "vocab"):
        return None
    if part.category == "moe_experts":
        return _expert_refusal(part, tp, block, refine)
    if part.tp == "row":
        size = part.shape[1] // tp
        bad = tp > 1 and size % block[1]
        return f"Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block[1]}." \
            if bad else None
    merged = _merged(part, model)
    if merged and merged_relaxed:
        return None
    size = part.shape[0] // tp
    if part.tp == "kv":  # K/V rows split by KV heads, replicated once tp passes them
        size = max(1, model.num_kv_heads // tp) * (part.shape[0] // model.num_kv_heads)
    if size % block[0]:
        return f"Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block[0]}."
    return None


def fp8_block_refusal(model: ModelConfig, tp: int, merged_relaxed: bool, expert_tp: int | None = None, *,
                      moe_refine: bool = False) -> str | None:
    """_fp8_block_refusal, once per config content and sizes (fit asks it for every setup)."""
    return _fp8_block_refusal(model, content_key(model), tp, merged_relaxed, expert_tp, moe_refine)


@lru_cache(maxsize=256)
def _fp8_block_refusal(model: ModelConfig, _key: str, tp: int, merged_relaxed: bool, expert_tp: int | None,
                       moe_refine: bool) -> str | None:
    """vLLM's message for the first layer whose FP8 weight blocks do not divide at `tp` (the experts at `expert_tp`:
    vLLM's MoE TP, dp × tp; None: whole experts under expert parallel); None when all do. `moe_refine`: the
    release refines an expert block grid that does not divide (VllmRelease.fp8_moe_refine); `merged_relaxed`: a
    merged layer whose partitions do not divide passes (VllmRelease.fp8_merged_relaxed)."""
    block = block_shape(model)
    if block is None:
        return None
    from kvplan.planning.weights.parts import model_parts  # only for a block-FP8 checkpoint

    try:
        layers = model_parts(model).layers
    except KvplanError:
        return None  # a family whose weights kvplan does not know: nothing to check against
    for layer in _distinct_layers(layers, model.is_mla):
        for part in layer:
            if part.category == "moe_experts" and expert_tp is None:
                continue
            at = expert_tp if part.category == "moe_experts" and expert_tp is not None else tp
            if (message := _part_refusal(part, model, at, block, merged_relaxed, moe_refine)) is not None:
                return message
    return None


def _distinct_layers(layers: tuple[tuple[Part, ...], ...], mla: bool) -> tuple[tuple[Part, ...], ...]:
    """The first layer of each kind, in order: a layer whose parts the check reads alike (all but the layer index of
    their names) as an earlier one's gives the same message, so the first layer refused is among these (DeepSeek-V3:
    2 of 61, read once per model for every TP fit tries)."""
    def facts(layer: tuple[Part, ...]) -> tuple[object, ...]:
        return tuple((p.is_linear, p.tp, p.category, p.shape, any(p.name.endswith(m) or p.name.startswith(m)
                                                                  for m in MERGED), p.name == "self_attn.q_proj",
                      "gate_up" in p.name, "down" in p.name) for p in layer)

    def first_of_each() -> tuple[tuple[Part, ...], ...]:
        seen: dict[tuple[object, ...], tuple[Part, ...]] = {}
        for layer in layers:
            seen.setdefault(facts(layer), layer)
        return tuple(seen.values())
    return _DISTINCT.get(layers, mla, first_of_each)


_DISTINCT: IdentityCache[tuple[tuple[Part, ...], ...]] = IdentityCache(maxsize=64)


def moe_refined_scale_bytes(model: ModelConfig, expert_tp: int) -> tuple[int, int]:
    """_moe_refined_scale_bytes, once per config content and expert TP (asked for every PP stage of every setup)."""
    return _moe_refined_scale_bytes(model, content_key(model), expert_tp)


@lru_cache(maxsize=256)
def _moe_refined_scale_bytes(model: ModelConfig, _key: str, expert_tp: int) -> tuple[int, int]:
    """(refined block, bytes the refined fp32 scale grid adds on one GPU over the checkpoint's) of a block-FP8 MoE
    whose blocks vLLM 0.29+ refines at `expert_tp`; (0, 0) when it does not."""
    block = block_shape(model)
    if block is None:
        return 0, 0
    from kvplan.planning.weights.parts import model_parts  # only for a block-FP8 checkpoint

    try:
        layers = model_parts(model).layers
    except KvplanError:
        return 0, 0
    found, extra = 0, 0
    for part in (p for layer in layers for p in layer if p.category == "moe_experts" and p.is_linear):
        assert block is not None
        gate_up = "gate_up" in part.name
        rows, cols = (part.shape[0] // expert_tp, part.shape[1]) if gate_up else (part.shape[0], part.shape[1] // expert_tp)
        refine = refined_block(block, rows // 2 if gate_up else cols, expert_tp, cols if gate_up else rows)
        if refine:
            found = refine
            coarse = math.ceil(rows / block[0]) * math.ceil(cols / block[1])
            extra += part.count * (rows // refine * (cols // refine) - coarse) * 4
    return found, extra
