"""Model weights: parameter counts from the config, bytes by weight format, and the share of one GPU.

``counts`` holds the public functions (see its docstring for the TP/PP rules), ``parts`` the
tensor inventory derived from the config, ``formats`` the bytes of each storage format, ``vision``
the vision towers of multimodal checkpoints.
"""

from __future__ import annotations

from kvplan.planning.weights.counts import (
    LayerParams,
    ParamCount,
    mtp_bytes_per_gpu,
    param_count,
    weight_bytes,
    weight_bytes_by_kind,
    weight_bytes_per_gpu,
    weight_bytes_per_stage,
)
from kvplan.planning.weights.formats import WEIGHT_DTYPE_NAMES, WeightFormat, weight_format, weights_for_quantization

__all__ = ["WEIGHT_DTYPE_NAMES", "LayerParams", "ParamCount", "WeightFormat", "mtp_bytes_per_gpu", "param_count",
           "weight_bytes",
           "weight_bytes_by_kind", "weight_bytes_per_gpu", "weight_bytes_per_stage", "weight_format",
           "weights_for_quantization"]
