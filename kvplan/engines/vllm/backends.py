"""Which attention backend vLLM 0.33 picks on a GPU, and the block size it ends with.

MLA backends in vLLM 0.33's priority on Hopper (``vllm/platforms/cuda.py``, the backends'
``get_supported_kernel_block_sizes``): FLASH_ATTN_MLA has no fp8 cache; FLASHMLA kernels take
blocks of 64 (forced when no block size is given); TRITON_MLA takes anything. The sparse MLA
backend of DeepSeek-V3.2 (``fp8_ds_mla``) takes blocks of exactly 64. Other attention uses
FLASH_ATTN with the default block of 16.
"""

from __future__ import annotations

from kvplan.dtypes import KvDtype
from kvplan.errors import InputError

DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
HOPPER = ("H100", "H200", "H800", "H20", "GH200")

# (name, KV dtypes it takes (None: any), block multiple, block size when none is given)
MLA_BACKENDS_SM90 = (("FLASH_ATTN_MLA", ("bf16", "fp16"), 16, DEFAULT_BLOCK_SIZE),
                     ("FLASHMLA", ("bf16", "fp16", "fp8", "fp8_e4m3"), 64, 64),
                     ("TRITON_MLA", None, 1, DEFAULT_BLOCK_SIZE))
MLA_BACKENDS_OTHER = (("TRITON_MLA", None, 1, DEFAULT_BLOCK_SIZE),)


def is_hopper(gpu_name: str | None) -> bool:
    """The backend table is Hopper's when no GPU is named (kvplan's default GPU is an H100)."""
    return gpu_name is None or any(h in gpu_name.upper() for h in HOPPER)


def mla_backend(dtype: KvDtype, block_size: int | None, gpu_name: str | None) -> tuple[str, int]:
    """The MLA backend vLLM picks and the block size it ends with."""
    if dtype.scale == "ds_mla":
        return "FLASHMLA_SPARSE", 64
    for name, dtypes, multiple, forced in MLA_BACKENDS_SM90 if is_hopper(gpu_name) else MLA_BACKENDS_OTHER:
        if dtypes is not None and dtype.name not in dtypes:
            continue
        if block_size is None:
            return name, forced
        if block_size % multiple == 0:
            return name, block_size
    raise InputError(f"no vLLM MLA backend takes KV dtype {dtype.name} with block size {block_size}",
                     arg=("kv_dtype", "block_size"))


def attention_backend(has_mla: bool, dtype: KvDtype, block_size: int | None, gpu_name: str | None) -> tuple[str, int]:
    """(backend, block size) for the model's attention layers."""
    if has_mla:
        return mla_backend(dtype, block_size, gpu_name)
    return "FLASH_ATTN", block_size or DEFAULT_BLOCK_SIZE
