"""Which attention backend vLLM 0.33 picks on a GPU, the block size it ends with, and the smallest
kernel block it takes (what a Mamba hybrid's block size is aligned to).

MLA backends in vLLM 0.33's priority on Hopper (``vllm/platforms/cuda.py:139-155``, the backends'
``supported_kv_cache_dtypes`` and ``get_supported_kernel_block_sizes``): FLASH_ATTN_MLA has no fp8
cache and takes multiples of 16; FLASHMLA kernels take blocks of 64 (forced when no block size is
given); TRITON_MLA takes multiples of 16. Sparse MLA (DeepSeek-V3.2, GLM-5: ``index_topk``) is served
only by the sparse backends, all multiples of 64 (64 when none is given): FLASH_ATTN_MLA_SPARSE for
auto/bf16, FLASHMLA_SPARSE for fp8 (stored as fp8_ds_mla) and fp8_ds_mla, FLASHINFER_MLA_SPARSE_SM90
for fp8_e4m3 (``vllm/v1/attention/backends/mla/flashattn_mla_sparse.py:41-51``,
``flashmla_sparse.py:147-165``, ``flashinfer_mla_sparse_sm90.py:146-157``). Other attention uses
FLASH_ATTN with the default block of 16, except on Hopper with an fp8 cache and 512-wide heads
(Gemma-4's global layers): FlashAttention 4's fp8 kernel reads 64-token pages, so the block is 64,
and a block size that is not a multiple of 64 falls to TRITON_ATTN
(``vllm/v1/attention/backends/flash_attn.py:299-380``).
"""

from __future__ import annotations

from kvplan.dtypes import KvDtype
from kvplan.errors import InputError

DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
FLASH_ATTN_KERNEL_BLOCK = 16  # FlashAttentionBackend: MultipleOf(16)
FA4_FP8_HEAD_SIZE, FA4_FP8_BLOCK = 512, 64  # _get_sm90_fa4_fp8_kv_block_size
HOPPER = ("H100", "H200", "H800", "H20", "GH200")  # compute capability 9.0
BLACKWELL = ("B100", "B200", "B300", "GB200", "GB300", "RTX 50", "RTX PRO 6000")  # 10.x / 12.x

# (name, KV dtypes it takes (None: any), kernel block multiple, block size when none is given)
MLA_BACKENDS_SM90 = (("FLASH_ATTN_MLA", ("bf16", "fp16"), 16, DEFAULT_BLOCK_SIZE),
                     ("FLASHMLA", ("bf16", "fp16", "fp8", "fp8_e4m3"), 64, 64),
                     ("TRITON_MLA", None, 16, DEFAULT_BLOCK_SIZE))
MLA_BACKENDS_OTHER = (("TRITON_MLA", None, 16, DEFAULT_BLOCK_SIZE),)
SPARSE_MLA_BACKENDS_SM90 = (("FLASH_ATTN_MLA_SPARSE", ("bf16", "fp16"), 64, 64),
                            ("FLASHMLA_SPARSE", ("bf16", "fp8", "fp8_ds_mla"), 64, 64),
                            ("FLASHINFER_MLA_SPARSE_SM90", ("bf16", "fp8", "fp8_e4m3"), 64, 64))


def is_hopper(gpu_name: str | None) -> bool:
    """The backend table is Hopper's when no GPU is named (kvplan's default GPU is an H100)."""
    return gpu_name is None or any(h in gpu_name.upper() for h in HOPPER)


is_sm90 = is_hopper  # every Hopper part kvplan knows is compute capability 9.0 exactly


def is_blackwell(gpu_name: str | None) -> bool:
    return gpu_name is not None and any(b in gpu_name.upper() for b in BLACKWELL)


def _pick(table: tuple[tuple[str, tuple[str, ...] | None, int, int], ...], dtype: KvDtype,
          block_size: int | None) -> tuple[str, int, int] | None:
    for name, dtypes, multiple, forced in table:
        if dtypes is not None and dtype.name not in dtypes:
            continue
        if block_size is None:
            return name, forced, multiple
        if block_size % multiple == 0:
            return name, block_size, multiple
    return None


def mla_backend(dtype: KvDtype, block_size: int | None, gpu_name: str | None,
                sparse: bool = False) -> tuple[str, int, int]:
    """The MLA backend vLLM picks, the block size it ends with and its kernel block multiple."""
    if sparse:
        picked = _pick(SPARSE_MLA_BACKENDS_SM90, dtype, block_size)
        if picked is None:
            raise InputError(f"vLLM's sparse MLA backends (DeepSeek sparse attention) take KV dtype auto, bf16, "
                             f"fp8, fp8_e4m3 or fp8_ds_mla and blocks of a multiple of 64 tokens; got "
                             f"{dtype.name} with block size {block_size}", arg=("kv_dtype", "block_size"))
        return picked
    if dtype.scale == "ds_mla":
        raise InputError("fp8_ds_mla is the layout of vLLM's sparse MLA backends; this model has no sparse "
                         "attention (index_topk), so no vLLM backend takes it", arg="kv_dtype")
    picked = _pick(MLA_BACKENDS_SM90 if is_hopper(gpu_name) else MLA_BACKENDS_OTHER, dtype, block_size)
    if picked is None:
        raise InputError(f"no vLLM MLA backend takes KV dtype {dtype.name} with block size {block_size}",
                         arg=("kv_dtype", "block_size"))
    return picked


def attention_backend(has_mla: bool, dtype: KvDtype, block_size: int | None, gpu_name: str | None,
                      sparse: bool = False, head_size: int = 0) -> tuple[str, int, int]:
    """(backend, block size, kernel block multiple) for the model's attention layers; `head_size`
    is the model's (the widest layer's, as vLLM's ModelArchitectureConfig takes the max)."""
    if has_mla:
        return mla_backend(dtype, block_size, gpu_name, sparse)
    if is_hopper(gpu_name) and dtype.name in ("fp8", "fp8_e4m3") and head_size == FA4_FP8_HEAD_SIZE:
        if block_size is not None and block_size % FA4_FP8_BLOCK:
            return "TRITON_ATTN", block_size, FLASH_ATTN_KERNEL_BLOCK
        return "FLASH_ATTN", block_size or FA4_FP8_BLOCK, FA4_FP8_BLOCK
    return "FLASH_ATTN", block_size or DEFAULT_BLOCK_SIZE, FLASH_ATTN_KERNEL_BLOCK
