"""Weight formats that differ by module: DeepSeek-V4's routed experts in the format ``expert_dtype`` names, and
ModelOpt MIXED_PRECISION checkpoints (an algorithm per module). Both become a ``WeightFormat`` whose ``modules``
name the per-module formats.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.planning.weights.storage import MXFP4, NVFP4, ScaleScheme, WeightFormat

EXPERT_DTYPE_TYPES = ("deepseek_v4",)  # model types whose quantization config reads expert_dtype (default fp4)
EXPERTS = "*.experts"  # a routed-experts module (its stacked weights, or one expert's); not shared_experts


def with_expert_dtype(fmt: WeightFormat, model: ModelConfig) -> WeightFormat:
    """DeepSeek-V4's routed experts in the format `expert_dtype` names (vLLM 0.25
    ``models/deepseek_v4/quant_config.py:58-78, 139-167``: ``fp4``, the default, loads MXFP4 experts, 4-bit E2M1
    with one E8M0 byte per 32, or NVFP4 when ``quantization_config.moe_quant_algo`` is NVFP4; ``fp8`` keeps the
    config's FP8 blocks); the checkpoint stores them that way (DeepSeek-V4-Flash: 148.66 GiB logged)."""
    if model.model_type not in EXPERT_DTYPE_TYPES or not fmt.source.startswith("quantization_config (fp8"):
        return fmt
    dtype = str(model.raw.get("expert_dtype", "fp4")).lower()
    quant = model.raw.get("quantization_config") or {}
    if dtype == "fp8":
        return fmt
    if dtype != "fp4":
        raise InputError(f"{model.source}: expert_dtype {dtype!r} is not one vLLM reads (fp4, fp8)",
                         arg="weights_dtype")
    nvfp4 = str(quant.get("moe_quant_algo", "")).upper() == "NVFP4"
    experts = WeightFormat(name="nvfp4" if nvfp4 else "mxfp4", base_bits=fmt.base_bits, skip=fmt.skip,
                           source=f"expert_dtype fp4{' (moe_quant_algo NVFP4)' if nvfp4 else ''}",
                           **(NVFP4 if nvfp4 else MXFP4))  # type: ignore[arg-type]
    return replace(fmt, name=f"{fmt.name}, {experts.name} experts", modules=((EXPERTS, experts), *fmt.modules))


# ModelOpt per-layer algorithms (vLLM 0.33 quantization/modelopt.py:129-155, 1615-1630): linear bits, scheme,
# scale bits, default group, bytes per tensor besides (fp32 weight_scale_2 / input_scale).
_MODELOPT_ALGOS: dict[str, tuple[int, ScaleScheme, int, int, int]] = {
    "FP8": (8, "tensor", 32, 0, 4), "FP8_PER_CHANNEL_PER_TOKEN": (8, "channel", 32, 0, 0),
    "NVFP4": (4, "group", 8, 16, 8), "W4A16_NVFP4": (4, "group", 8, 16, 4),  # W4A16: no input scale
    "FP8_PB_WO": (8, "block", 32, 128, 0), "FP8_BLOCK_SCALES": (8, "block", 32, 128, 0), "MXFP8": (8, "group", 8, 32, 0)}
_LANGUAGE_MODEL_PREFIXES = ("model.language_model.", "language_model.model.", "model.")


def _modelopt_layer(algo: str, group: int, base_bits: int, skip: tuple[str, ...], where: str,
                    source: str) -> WeightFormat:
    if algo not in _MODELOPT_ALGOS:
        raise InputError(f"{source}: {where} quantized_layers algorithm {algo or '?'!r} is not one kvplan sizes "
                         f"({', '.join(_MODELOPT_ALGOS)}); pass weights_dtype", arg="weights_dtype")
    bits, scheme, scale_bits, default, extra = _MODELOPT_ALGOS[algo]
    block = (group or default, group or default) if scheme == "block" else (1, group or default)
    return WeightFormat(name=f"{algo.lower()} (modelopt)", base_bits=base_bits, linear_bits=bits, scheme=scheme,
                        block=block if scheme != "tensor" else (0, 0), scale_bits=scale_bits, tensor_bytes=extra,
                        skip=skip, source=where)


def _layer_patterns(key: str) -> tuple[str, ...]:
    """A quantized_layers key as the module paths kvplan's tensors may carry: vLLM's language_model prefix aliases
    (modelopt.py _quantized_layer_prefix_candidates), one expert's key as its layer's experts module (its
    prefix lookup for RoutedExperts)."""
    if ".experts." in key:
        key = key[: key.index(".experts.") + len(".experts")]
    prefix = next((p for p in _LANGUAGE_MODEL_PREFIXES if key.startswith(p)), "")
    rest = key[len(prefix):]
    return tuple(dict.fromkeys((key, *(p + rest for p in _LANGUAGE_MODEL_PREFIXES)))) if prefix else (key,)


def modelopt_mixed(quant: dict[str, Any], base_bits: int, skip: tuple[str, ...], where: str,
                    source: str) -> WeightFormat:
    """ModelOpt MIXED_PRECISION: each module its own algorithm (``quantized_layers``, in config.json's
    quantization_config or hf_quant_config.json's ``quantization``); a module it does not list stays in the model
    dtype, as do ``exclude_modules`` (vLLM 0.33 quantization/modelopt.py:1574-1746, 1748-1860)."""
    layers = quant.get("quantized_layers")
    if not isinstance(layers, dict) or not layers:
        raise InputError(f"{source}: {where} MIXED_PRECISION has no quantized_layers; pass weights_dtype",
                         arg="weights_dtype")
    modules: list[tuple[str, WeightFormat]] = []
    for key, info in layers.items():
        info = info if isinstance(info, dict) else {}
        group = info.get("group_size")
        fmt = _modelopt_layer(str(info.get("quant_algo", "")).upper(), group if isinstance(group, int) else 0,
                              base_bits, skip, where, source)
        modules += [(pattern, fmt) for pattern in _layer_patterns(str(key))]
    algos = sorted({fmt.name.removesuffix(" (modelopt)") for _, fmt in modules})
    return WeightFormat(name=f"mixed {'+'.join(algos)} (modelopt)", base_bits=base_bits, linear_bits=base_bits,
                        skip=skip, source=where, modules=tuple(modules))
