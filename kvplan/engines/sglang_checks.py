"""The checks SGLang makes on the settings before it plans (0.5.23), as data.

``--kv-cache-dtype`` is an argparse choice (``srt/arg_groups/fields/model.py:197-221``, applied by
``arg_groups/arg_utils.py:401-405``): auto, fp8_e5m2, fp8_e4m3, mxfp8, bf16, bfloat16, nvfp4, fp4_mx_block16. No
int8 / int4 and no float16. kvplan's names are vLLM's: vLLM's fp8 is e4m3, so it is SGLang's fp8_e4m3.
"""

from __future__ import annotations

from kvplan.errors import InputError

KV_DTYPES = ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")
SGLANG_NAMES = {"fp8": "fp8_e4m3", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


def check_kv_dtype(typed: str, label: str) -> None:
    asked = typed.strip().lower()
    name = SGLANG_NAMES.get(asked, asked)
    if name in KV_DTYPES:
        return
    choices = ", ".join(repr(n) for n in KV_DTYPES)
    raise InputError(f"argument --kv-cache-dtype: invalid choice: {name!r} (choose from {choices}) ({label}'s argument "
                     "parser, sglang/srt/arg_groups/fields/model.py:197-221)")
