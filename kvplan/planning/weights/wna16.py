"""AWQ and GPTQ weights as vLLM's mixed-precision linear kernels keep them, beside the checkpoint's packing.

An AWQ checkpoint stores, per linear layer, ``qweight`` (eight 4-bit values per int32), ``scales`` (one fp16 per
group of ``group_size`` inputs and output) and ``qzeros`` (eight 4-bit zero points per int32, one per group and
output). What the kernel keeps after ``process_weights_after_loading``:

- Marlin (every GPU before vLLM 0.19, and any GPU but sm90 after): the same bytes, re-laid (``gptq_marlin_repack``,
  ``marlin_permute_scales``, ``awq_to_marlin_zero_points``); tile padding only where a shard is misaligned.
- Machete (sm90, where the release picks the kernel with ``choose_mp_linear_kernel``: AWQ from 0.19,
  0.19 ``model_executor/layers/quantization/awq_marlin.py:392-405``): ``qweight`` prepacked at the same size,
  ``scales`` as they are, and the zero points unpacked and pre-multiplied by the scales, ``-scale × zero`` in the
  activation dtype (0.19 ``model_executor/kernels/linear/mixed_precision/machete.py:110-118``; 0.31 ``:80-88``):
  16 bits per group and output instead of 4.

Only the dense linear layers take these kernels; MoE experts go through the fused-MoE path (Marlin MoE keeps the
4-bit zeros). GPTQ on either kernel is counted as its checkpoint stores it (not modelled: Marlin drops the
symmetric zeros and, without act-order, g_idx; Machete keeps act-order permutations).
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.planning.weights.counts import shard_shape, weight_parts
from kvplan.planning.weights.formats import weight_format
from kvplan.planning.weights.storage import is_awq_with_zeros
from kvplan.units import cdiv

ACT_DTYPES = ("bf16", "fp16")  # Machete's activation (and pre-scaled zero-point) dtypes


def machete_zero_point_bytes(model: ModelConfig, tp: int, first: int, layers: int) -> int:
    """Bytes Machete's zero points add on one TP rank over decoder layers first..first+layers-1 of an AWQ
    checkpoint: per group and output, the activation dtype's bits less the checkpoint's packed zero bits."""
    fmt = weight_format(model)
    if not is_awq_with_zeros(fmt):
        return 0
    act_bits = element_bits(model.dtype) if model.dtype in ACT_DTYPES else 16
    groups = 0
    for layer in weight_parts(model).layers[first:first + layers]:
        for part in layer:
            if part.is_linear and part.bits is None and not part.tp.startswith("expert-") \
                    and fmt.is_quantized(part.name):
                rows, cols = shard_shape(part, tp, model.num_kv_heads, heads=model.num_attention_heads)
                groups += part.count * rows * cdiv(cols, fmt.block[1] or cols)
    return cdiv(groups * (act_bits - fmt.zero_bits), 8)
