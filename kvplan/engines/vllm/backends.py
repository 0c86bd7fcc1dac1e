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


def diff_kv_backend(capability: tuple[int, int] | None) -> str:
    """K and V of different widths (MiMo-V2; vllm/model_executor/models/mimo_v2.py:320-344): FLASH_ATTN_DIFFKV where
    FlashAttention 3 (sm90) or 4 (sm10x) runs, else TRITON_ATTN_DIFFKV (flash_attn_diffkv.py:43-64); both take
    blocks of a multiple of 16."""
    major = (capability or (9, 0))[0]
    return "FLASH_ATTN_DIFFKV" if major in (9, 10) else "TRITON_ATTN_DIFFKV"


MINIMAX_M3_BLOCK = 128  # MiniMax-M3's sparse attention and indexer backends: [128] (models/minimax_m3/common/
# sparse_attention.py:165-167, common/indexer.py:94-95)


def index_key_backend(block_size: int | None) -> tuple[str, int, int]:
    """MiniMax-M3: blocks of 128 (a manager block that 128 divides is split into kernel blocks of 128; any other is
    refused by the worker, vllm/v1/worker/utils.py:515-558)."""
    block = block_size or MINIMAX_M3_BLOCK
    if block % MINIMAX_M3_BLOCK:
        raise InputError(f"No common block size for {block} (MINIMAX_M3_SPARSE: [{MINIMAX_M3_BLOCK}]; "
                         f"MINIMAX_M3_INDEXER: [{MINIMAX_M3_BLOCK}]). (vLLM 0.33's worker, vllm/v1/worker/utils.py:551-558)",
                         arg="block_size")
    return "MINIMAX_M3_SPARSE", block, MINIMAX_M3_BLOCK


def attention_backend(has_mla: bool, dtype: KvDtype, block_size: int | None, gpu_name: str | None,
                      sparse: bool = False, head_size: int = 0, diff_kv: bool = False,
                      capability: tuple[int, int] | None = None, index_key: bool = False) -> tuple[str, int, int]:
    """(backend, block size, kernel block multiple) for the model's attention layers; `head_size`
    is the model's (the widest layer's, as vLLM's ModelArchitectureConfig takes the max)."""
    if has_mla:
        return mla_backend(dtype, block_size, gpu_name, sparse)
    if index_key:
        return index_key_backend(block_size)
    if diff_kv:
        return diff_kv_backend(capability), block_size or DEFAULT_BLOCK_SIZE, FLASH_ATTN_KERNEL_BLOCK
    if is_hopper(gpu_name) and dtype.name in ("fp8", "fp8_e4m3") and head_size == FA4_FP8_HEAD_SIZE:
        if block_size is not None and block_size % FA4_FP8_BLOCK:
            return "TRITON_ATTN", block_size, FLASH_ATTN_KERNEL_BLOCK
        return "FLASH_ATTN", block_size or FA4_FP8_BLOCK, FA4_FP8_BLOCK
    return "FLASH_ATTN", block_size or DEFAULT_BLOCK_SIZE, FLASH_ATTN_KERNEL_BLOCK


# Streaming multiprocessors per catalog GPU (vendor data sheets: H100 SXM5 132, H100 PCIe 114, H100 NVL 132, H200 132,
# GH200 132, A100 108, L40S 142, L4 58, A10G 80, A10 72, RTX 4090 128, RTX 3090 82, RTX 5090 170, B200 148, T4 40,
# V100 80; AMD compute units: MI300X / MI325X 304). vLLM's Triton top-k/top-p kernel keeps one vocab-wide fp32 row
# per program, min(SMs, rows) programs (0.17 v1/sample/ops/topk_topp_triton.py:990-1003).
SM_COUNTS = {"H100-SXM": 132, "H100-PCIe": 114, "H100-NVL": 132, "H200": 132, "GH200": 132, "GH200-144G": 132,
             "A100-40G": 108, "A100-80G": 108, "L40S": 142, "L4": 58, "A10G": 80, "A10": 72, "RTX-4090": 128,
             "RTX-3090": 82, "RTX-5090": 170, "B200": 148, "T4": 40, "V100-16G": 80, "V100-32G": 80, "MI300X": 304,
             "MI325X": 304}
DEFAULT_SMS = 132  # an H100's, kvplan's default GPU
# GPUs in NVSwitch systems with NVLink SHARP (NVLS): the NCCL communicator vLLM 0.11-0.25 creates in the profile
# run takes ~2.1 GiB there (0.19 logs, kvplan.planning.budget); elsewhere (PCIe, NVLink bridges) a plain one.
NVLS_GPUS = frozenset({"H100-SXM", "H200", "B200"})


def sm_count(gpu_name: str | None) -> int:
    return SM_COUNTS.get(gpu_name or "", DEFAULT_SMS)
