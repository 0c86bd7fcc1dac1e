"""MXFP4 experts as each vLLM MoE backend keeps them: the bytes a layout adds over the checkpoint's, per GPU.

The checkpoint stores one expert of a layer as gate_up (2I × h) and down (h × I) E2M1 values, half a byte each,
with one E8M0 byte per 32 inputs (gpt-oss adds bf16 biases, 2I + h). I is the expert's width on this GPU
(moe_intermediate / tp, vLLM's fused MoE), h the hidden size. What each backend keeps instead:

- ``marlin``: I rounded up to 128 and h to 256, values and scales at the padded sizes, biases in the model dtype
  (0.10.1.1 ``quantization/mxfp4.py:154-186``; 0.25 ``fused_moe/oracle/mxfp4.py:632-665``, repacked and permuted
  at the same size by ``quantization/utils/marlin_utils_fp4.py`` prepare_moe_mxfp4_layer_for_marlin);
- ``triton`` (triton_kernels, sm90): I rounded up to 64 (0.14 ``quantization/mxfp4.py:316-318``; 0.33
  ``fused_moe/oracle/mxfp4.py:915``), the block scales swizzled by HopperMXScaleLayout into rows padded to
  2·num_warps·2·8 = 256 and columns to 2 (``third_party/triton_kernels/tensor_details/layout_details/
  hopper_scale.py:22-28``), the expert biases cast to fp32 (0.14 ``mxfp4.py:749-750``); 0.10-0.24 keep the
  original scales beside the swizzled ones (0.12 ``mxfp4.py:783-784`` deletes only the weights), 0.25 on free them
  (0.25 ``fused_moe/oracle/mxfp4.py:1150-1156``);
- ``flashinfer_trtllm`` (sm10x): I and h rounded up to 256 (0.25 ``fused_moe/oracle/mxfp4.py:655-657``), weights
  shuffled at the same size, scales interleaved by FlashInfer's nvfp4_block_scale_interleave (rows to 128,
  columns to 4: FlashInfer's layout, not read here), biases fp32 (:739-741): an estimate;
- ``deepgemm`` (DeepSeek-V4 on sm10x/sm12x): I and h rounded up to 128 (:636-639), the scales repacked by
  DeepGEMM's C++ transform_sf_into_required_layout (E8M0 packed four to an int32: taken as the same bytes,
  not read): an estimate.
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.planning.profile_run import dims
from kvplan.units import cdiv

EXPERT_BIASES = frozenset({"gpt_oss"})  # MXFP4 MoE with expert biases (w13_bias, w2_bias)
EXACT_LAYOUTS = ("marlin", "triton")  # read whole from vLLM's Python; the others rest on a kernel library's layout


def round_up(value: int, multiple: int) -> int:
    return cdiv(value, multiple) * multiple


def _values(inter: int, hidden: int) -> int:
    """E2M1 bytes of one expert: gate_up (2I × h) and down (h × I), two values a byte."""
    return 3 * inter * hidden // 2


def _scales(inter: int, hidden: int) -> int:
    """E8M0 block scales of one expert: gate_up (2I rows × h/32), down (h rows × I/32)."""
    return 2 * inter * cdiv(hidden, 32) + hidden * cdiv(inter, 32)


def _biases(model: ModelConfig, inter: int, hidden: int, width: int) -> int:
    return (2 * inter + hidden) * width if model.model_type in EXPERT_BIASES else 0


def _checkpoint(model: ModelConfig, inter: int, hidden: int) -> int:
    return _values(inter, hidden) + _scales(inter, hidden) + _biases(model, inter, hidden, dims(model).act_bytes)


def _marlin(model: ModelConfig, inter: int, hidden: int, _keeps: bool) -> int:
    i, h = round_up(inter, 128), round_up(hidden, 256)
    return _values(i, h) + _scales(i, h) + _biases(model, i, h, dims(model).act_bytes)


def _swizzled_scales(inter: int, hidden: int) -> int:
    return round_up(2 * inter, 256) * round_up(cdiv(hidden, 32), 2) + round_up(hidden, 256) * round_up(cdiv(inter, 32), 2)


def _triton(model: ModelConfig, inter: int, hidden: int, keeps: bool) -> int:
    i = round_up(inter, 64)
    kept = _scales(i, hidden) if keeps else 0
    return _values(i, hidden) + _swizzled_scales(i, hidden) + kept + _biases(model, i, hidden, 4)


def _trtllm(model: ModelConfig, inter: int, hidden: int, _keeps: bool) -> int:
    i, h = round_up(inter, 256), round_up(hidden, 256)
    scales = round_up(2 * i, 128) * round_up(h // 32, 4) + round_up(h, 128) * round_up(i // 32, 4)
    return _values(i, h) + scales + _biases(model, i, h, 4)


def _deepgemm(model: ModelConfig, inter: int, hidden: int, _keeps: bool) -> int:
    i, h = round_up(inter, 128), round_up(hidden, 128)
    return _values(i, h) + _scales(i, h) + _biases(model, i, h, dims(model).act_bytes)


LAYOUTS = {"marlin": _marlin, "triton": _triton, "flashinfer_trtllm": _trtllm, "deepgemm": _deepgemm}


def layout_bytes(model: ModelConfig, backend: str, tp: int, layers: int, *, keeps_scales: bool = False) -> int:
    """Bytes the `backend` layout adds per GPU over `layers` MoE layers, beyond the checkpoint's experts."""
    d = dims(model)
    inter = cdiv(d.moe_intermediate, tp)
    per_expert = LAYOUTS[backend](model, inter, d.hidden, keeps_scales) - _checkpoint(model, inter, d.hidden)
    return per_expert * d.num_experts * layers
