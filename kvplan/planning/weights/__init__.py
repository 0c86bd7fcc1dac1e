"""Model weights: the tensors of a checkpoint, bytes by weight format, and the share of one GPU.

``counts`` holds the public functions (see its docstring for where the tensors come from), ``tensors`` the
TP/PP/EP arithmetic, ``tables`` the tensor tables recorded from transformers' meta-device builds, ``roles``
what a tensor is from its name, ``checkpoint`` the safetensors headers of a checkpoint, ``parts`` kvplan's
formula for a config with neither, ``formats`` a config's storage format (``storage`` the format type and a
tensor's bytes in it, ``per_module`` the formats that differ by module), ``vision`` the vision towers that
formula knows, ``loaded`` and ``mxfp4_layouts`` what an engine's load adds.
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
    weight_parts,
    weights_source,
)
from kvplan.planning.weights.formats import WEIGHT_DTYPE_NAMES, WeightFormat, weight_format, weights_for_quantization

__all__ = ["WEIGHT_DTYPE_NAMES", "LayerParams", "ParamCount", "WeightFormat", "mtp_bytes_per_gpu", "param_count",
           "weight_bytes", "weight_bytes_by_kind", "weight_bytes_per_gpu", "weight_bytes_per_stage", "weight_format",
           "weight_parts", "weights_for_quantization", "weights_source"]
