"""Weight storage formats: bytes of a tensor in bf16/fp16, fp8 (block or per-tensor scales), MXFP4,
int8/int4 (grouped or per-channel scales), GPTQ/AWQ.

A format says how *linear* weights (matrices of the decoder layers, experts included) are stored;
every other tensor (embedding, lm_head, norms, router, biases, conv) stays in the model dtype, as
the quantized checkpoints and engines keep them. Scales are counted exactly, per tensor shard:

- ``block``: one scale per (bo × bi) block, e.g. DeepSeek fp8 ``weight_block_size [128, 128]`` with
  an fp32 ``weight_scale_inv`` per block: ``out×in + ⌈out/128⌉×⌈in/128⌉×4`` bytes.
- ``group``: one scale (and, for GPTQ/AWQ, one zero point) per ``group`` inputs of each output row:
  MXFP4 ``out×in/2 + out×⌈in/32⌉×1`` (E8M0 scale), int4 ``out×in/2 + out×⌈in/128⌉×2`` (fp16).
- ``channel``: one fp16 scale per output row (``--weights-dtype int8``).
- ``tensor``: one fp32 scale per tensor (``--weights-dtype fp8``, vLLM's dynamic fp8).
- ``tensor_bytes``: bytes every quantized tensor carries besides (NVFP4's fp32 global weight scale and input
  scale, ModelOpt FP8's input scale, a packed tensor's int64 weight_shape).

NVFP4 (ModelOpt ``quant_algo: NVFP4``, compressed-tensors ``nvfp4-pack-quantized``): e2m1 values, one e4m3
byte scale per 16 inputs, two fp32 per tensor. bitsandbytes 4-bit: one fp32 absmax per 64 values (one byte
with double quantization), 8-bit: one fp32 scale per output row (LLM.int8 SCB).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.dtypes import canonical_dtype, element_bits
from kvplan.errors import InputError
from kvplan.planning.weights.storage import MXFP4, NVFP4, ScaleScheme, WeightFormat, tensor_bytes

__all__ = ["MXFP4", "NVFP4", "OVERRIDES", "WEIGHT_DTYPE_NAMES", "WeightFormat", "content_key", "tensor_bytes",
           "weight_format", "weights_for_quantization"]
_FLOAT_WEIGHTS = ("bf16", "fp16", "fp32")  # stored whole: every tensor in that dtype
# --weights-dtype: name -> (linear bits, scheme, block, scale bits). Linear weights only; the rest
# stays in the model dtype, except bf16/fp16/fp32, which store everything in that dtype.
OVERRIDES: dict[str, tuple[int, ScaleScheme, tuple[int, int], int]] = {
    "fp8": (8, "tensor", (0, 0), 32),  # vLLM --quantization fp8 on a bf16 checkpoint: per-tensor fp32 scale
    "int8": (8, "channel", (1, 0), 16),  # W8A8 per-channel: one fp16 scale per output row
    "int4": (4, "group", (1, 128), 16),  # symmetric int4, one fp16 scale per 128 inputs
}
WEIGHT_DTYPE_NAMES = ("auto", "bf16", "fp16", "fp32", *OVERRIDES, "nvfp4")
_SKIP_KEYS = ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules", "llm_int8_skip_modules")


def content_key(model: ModelConfig) -> str:
    """The config's content (ModelConfig's equality ignores raw), computed once per instance."""
    key = model.__dict__.get("_weights_key")
    if not isinstance(key, str):
        key = json.dumps(model.raw, sort_keys=True, default=str)
        object.__setattr__(model, "_weights_key", key)
    return key


def weight_format(model: ModelConfig, weights_dtype: str | None = None) -> WeightFormat:
    """`weights_dtype` if given, else the config's quantization_config, else the model dtype (read once per
    config content: a MIXED_PRECISION config names hundreds of modules)."""
    return _weight_format(model, content_key(model), weights_dtype)


@lru_cache(maxsize=256)
def _weight_format(model: ModelConfig, _key: str, weights_dtype: str | None) -> WeightFormat:
    base_bits = element_bits(model.dtype) if model.dtype in _FLOAT_WEIGHTS else 16
    key = (weights_dtype or "auto").strip().lower()
    key = canonical_dtype(key) or key
    if key in _FLOAT_WEIGHTS:
        bits = element_bits(key)
        return WeightFormat(name=key, base_bits=bits, linear_bits=bits, source="weights_dtype")
    if key in OVERRIDES:
        bits, scheme, block, scale_bits = OVERRIDES[key]
        group = f" (g{block[1]})" if scheme == "group" else ""
        return WeightFormat(name=key + group, base_bits=base_bits, linear_bits=bits, scheme=scheme, block=block,
                            scale_bits=scale_bits, source="weights_dtype")
    if key == "nvfp4":  # a ModelOpt NVFP4 checkpoint whose quantization config kvplan did not read
        return WeightFormat(name="nvfp4", base_bits=base_bits, source="weights_dtype",
                            **NVFP4)  # type: ignore[arg-type]
    if key != "auto":
        raise InputError(f"unknown weights dtype {weights_dtype!r}; choose one of: {', '.join(WEIGHT_DTYPE_NAMES)}",
                         arg="weights_dtype")
    quant = model.raw.get("quantization_config")
    if isinstance(quant, dict):
        from kvplan.planning.weights.per_module import with_expert_dtype  # a quantized checkpoint's

        return with_expert_dtype(_from_quantization_config(quant, base_bits, model.source), model)
    return WeightFormat(name=model.dtype, base_bits=base_bits, linear_bits=base_bits, source="model dtype")


def fp8_method(model: ModelConfig) -> bool:
    """Quantized by the fp8 method (``quant_method`` "fp8"): the only checkpoints whose weight blocks
    ``quant_checks`` checks and refines (the others need not import it)."""
    quant = model.raw.get("quantization_config")
    return isinstance(quant, dict) and quant.get("quant_method") == "fp8"


ONLINE_QUANTIZATION = {"fp8": "fp8"}  # vLLM/SGLang quantize a bf16/fp16 checkpoint at load: per-tensor fp8 scale


def weights_for_quantization(model: ModelConfig, quantization: str | None) -> str | None:
    """vLLM's --quantization -> the weights_dtype that weight_format reads (None: the checkpoint's own).

    The method the checkpoint was saved with (its quantization_config) is read from the config, so naming it
    changes nothing; `fp8` on an unquantized checkpoint is vLLM's online fp8. Any other method needs a checkpoint
    saved in it: vLLM refuses the mismatch (ModelConfig._verify_quantization), and so does kvplan."""
    if quantization is None or quantization.strip().lower() in ("", "none"):
        return None
    wanted = quantization.strip().lower().replace("-", "_")
    quant = model.raw.get("quantization_config")
    saved = str(quant.get("quant_method", "")).lower().replace("-", "_") if isinstance(quant, dict) else ""
    if saved == wanted:
        return None
    if not saved and wanted in ONLINE_QUANTIZATION:
        return ONLINE_QUANTIZATION[wanted]
    has = f"saved as {saved}" if saved else "not quantized"
    raise InputError(f"quantization {quantization!r}: the checkpoint is {has}, and vLLM loads {wanted} weights only "
                     f"from a checkpoint saved that way{'' if saved else ' (fp8 is the one online method)'}; for a "
                     "what-if give weights_dtype (fp8, int8, int4)", arg="quantization")


def _skip_patterns(quant: dict[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    for key in _SKIP_KEYS:
        value = quant.get(key)
        if isinstance(value, list):
            found += [str(v) for v in value]
    return tuple(found)


def _from_quantization_config(quant: dict[str, Any], base_bits: int, source: str) -> WeightFormat:
    method = str(quant.get("quant_method", "")).lower()
    skip = _skip_patterns(quant)
    where = f"quantization_config ({method})"
    if method == "fp8":
        block = quant.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
            return WeightFormat(name=f"fp8 ({block[0]}x{block[1]} blocks)", base_bits=base_bits, linear_bits=8,
                                scheme="block", block=(block[0], block[1]), scale_bits=32, skip=skip, source=where)
        return WeightFormat(name="fp8", base_bits=base_bits, linear_bits=8, scheme="tensor", scale_bits=32,
                            skip=skip, source=where)
    if method == "mxfp4":  # OCP MX: 4-bit E2M1 values, one E8M0 (1-byte) scale per 32
        return WeightFormat(name="mxfp4", base_bits=base_bits, skip=skip, source=where,
                            **MXFP4)  # type: ignore[arg-type]
    if method == "compressed-tensors":
        return _compressed_tensors(quant, base_bits, skip, where, source)
    if method == "modelopt":
        return _modelopt(quant, base_bits, skip, where, source)
    if method == "bitsandbytes":
        return _bitsandbytes(quant, base_bits, skip, where)
    if method in ("gptq", "awq"):
        bits = quant.get("bits", quant.get("w_bit"))
        group = quant.get("group_size", quant.get("q_group_size"))
        if not isinstance(bits, int) or not isinstance(group, int) or bits <= 0:
            raise InputError(f"{source}: {where} lacks bits/group_size; pass weights_dtype",
                             arg="weights_dtype")
        scheme: ScaleScheme = "group" if group > 0 else "channel"
        return WeightFormat(name=f"{method} int{bits} (g{group})", base_bits=base_bits, linear_bits=bits,
                            scheme=scheme, block=(1, max(group, 0)), scale_bits=16, zero_bits=bits, skip=skip,
                            source=where)
    raise InputError(f"{source}: quantization_config quant_method {method or '?'!r} is not supported; "
                     f"pass weights_dtype ({', '.join(WEIGHT_DTYPE_NAMES)})", arg="weights_dtype")


# compressed-tensors weight strategies -> (scheme, scale bits): fp32 scales per tensor, output channel or block
# (vLLM's CompressedTensorsW8A8Fp8 weight_scale), a 16-bit scale per group (W4A16 pack-quantized) unless the
# scheme names its scale dtype (MXFP4: uint8), an fp8 scale per group + an fp32 global scale (NVFP4).
_CT_STRATEGIES: dict[str, tuple[ScaleScheme, int]] = {"tensor": ("tensor", 32), "channel": ("channel", 32),
                                                      "block": ("block", 32), "group": ("group", 16),
                                                      "tensor_group": ("group", 8)}
_SCALE_DTYPE_BITS = {"torch.uint8": 8, "torch.float8_e4m3fn": 8, "torch.float8_e8m0fnu": 8, "torch.float16": 16,
                     "torch.bfloat16": 16, "torch.float32": 32}


def _modelopt(quant: dict[str, Any], base_bits: int, skip: tuple[str, ...], where: str,
              source: str) -> WeightFormat:
    """NVIDIA ModelOpt checkpoints: NVFP4 (e2m1 + an e4m3 scale per 16 + fp32 weight_scale_2 and input_scale),
    FP8 (per-tensor e4m3 + fp32 weight_scale and input_scale)."""
    nested = quant.get("quantization")  # ModelOpt's own form (hf_quant_config.json's), inside quantization_config
    if isinstance(nested, dict):
        quant = {**quant, **nested}
        skip = (*skip, *_skip_patterns(nested))
    algo = str(quant.get("quant_algo", "")).upper()
    if algo == "MIXED_PRECISION":
        from kvplan.planning.weights.per_module import modelopt_mixed

        return modelopt_mixed(quant, base_bits, skip, where, source)
    if algo == "NVFP4":
        return WeightFormat(name="nvfp4 (modelopt)", base_bits=base_bits, skip=skip, source=where,
                            **NVFP4)  # type: ignore[arg-type]
    if algo == "FP8":
        return WeightFormat(name="fp8 (modelopt)", base_bits=base_bits, linear_bits=8, scheme="tensor", scale_bits=32,
                            tensor_bytes=4, skip=skip, source=where)
    raise InputError(f"{source}: {where} quant_algo {algo or '?'!r} is not supported; pass weights_dtype",
                     arg="weights_dtype")


# What kvplan does not count of a format as the engine keeps it: its weights term is an estimate (said in a note).
FORMAT_ESTIMATES = {
    "gptq": "GPTQ counted as stored less g_idx (one int32 per input of each matrix): vLLM's Marlin drops g_idx "
            "(no act-order) and the symmetric zero points, keeps g_idx and its sort indices with act-order; Machete "
            "keeps both (not modelled, within 0.1% of a vLLM 0.6.5 phi-4 GPTQ log)",
    "bitsandbytes": "bitsandbytes counted as one fp32 absmax per 64 values (one byte with double quantization, its "
                    "second-level scales and the quantization maps not counted)",
}


def format_estimate(fmt: WeightFormat) -> str | None:
    """Why the bytes of a format read from the config are an estimate (None: counted as the engines keep them)."""
    method = fmt.source.removeprefix("quantization_config (").removesuffix(")")
    return FORMAT_ESTIMATES.get(method) if fmt.source.startswith("quantization_config") else None


def _bitsandbytes(quant: dict[str, Any], base_bits: int, skip: tuple[str, ...], where: str) -> WeightFormat:
    if quant.get("load_in_8bit"):
        return WeightFormat(name="int8 (bitsandbytes)", base_bits=base_bits, linear_bits=8, scheme="channel",
                            scale_bits=32, skip=skip, source=where)
    nested = bool(quant.get("bnb_4bit_use_double_quant"))
    kind = str(quant.get("bnb_4bit_quant_type", "fp4"))
    return WeightFormat(name=f"{kind} (bitsandbytes)", base_bits=base_bits, linear_bits=4, scheme="group",
                        block=(1, 64), scale_bits=8 if nested else 32, skip=skip, source=where)


def _compressed_tensors(quant: dict[str, Any], base_bits: int, skip: tuple[str, ...], where: str,
                        source: str) -> WeightFormat:
    """The first config group's weights (llm-compressor checkpoints: FP8-dynamic, W8A8, W4A16); `ignore` stays."""
    groups = quant.get("config_groups")
    first: Any = next(iter(groups.values()), None) if isinstance(groups, dict) else None
    weights = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(weights, dict) or weights.get("strategy") not in _CT_STRATEGIES or \
            not isinstance(weights.get("num_bits"), int):
        raise InputError(f"{source}: {where} has no weights scheme kvplan reads; pass weights_dtype",
                         arg="weights_dtype")
    scheme, scale_bits = _CT_STRATEGIES[weights["strategy"]]
    scale_bits = _SCALE_DTYPE_BITS.get(str(weights.get("scale_dtype")), scale_bits)
    block = weights.get("block_structure") or [0, 0]
    cols = weights.get("group_size") or 0 if scheme == "group" else block[1]
    return WeightFormat(name=f"{weights.get('type', 'int')}{weights['num_bits']} ({weights['strategy']}, "
                        "compressed-tensors)", base_bits=base_bits, linear_bits=weights["num_bits"], scheme=scheme,
                        block=(1 if scheme in ("group", "channel") else block[0], cols), scale_bits=scale_bits,
                        tensor_bytes=8 if weights["strategy"] == "tensor_group" else 0, skip=skip, source=where)
