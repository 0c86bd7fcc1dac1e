"""vLLM 0.33's attention-backend selection, for the one question kvplan asks of it: does any backend take the
block size the user gave? If none does, vLLM refuses to start with its own message.

Candidates by compute capability (``vllm/platforms/cuda.py:84-181``, non-MLA decoder attention): 10.x tries
FLASHINFER first, every other GPU FLASH_ATTN first, then TRITON_ATTN, FLEX_ATTENTION, TURBOQUANT. Each candidate's
``validate_configuration`` (``v1/attention/backend.py:280-370``) collects reasons; a block size must be a multiple
of one of the backend's kernel blocks (``supports_block_size``, ``:122-138``): FLASH_ATTN, TRITON_ATTN and
FLEX_ATTENTION ``MultipleOf(16)``, FLASHINFER ``[16, 32, 64]``, TURBOQUANT ``[16, 32, 64, 128]`` and only its own KV
dtypes (``flash_attn.py:357-367``, ``flashinfer.py:585-604``, ``triton_attn.py:339-340``,
``flex_attention.py:153-154``, ``turboquant_attn.py:133-165``). With none valid: ``ValueError(f"No valid attention
backend found for {device} with {config}. Reasons: {reasons}.")`` (``platforms/cuda.py:471-475``), the config
being ``AttentionSelectorConfig``'s repr (``v1/attention/selector.py``). The reasons kvplan lists are the block
size's and TURBOQUANT's KV dtype; a backend refused for another reason on a real GPU would add its own.
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.engines.base import Request
from kvplan.specs import AttnSpec, SlidingAttn, parts

# name -> (kernel blocks, MultipleOf?), the 0.33 declarations
KERNEL_BLOCKS = {"FLASH_ATTN": ((16,), True), "FLASHINFER": ((16, 32, 64), False), "TRITON_ATTN": ((16,), True),
                 "FLEX_ATTENTION": ((16,), True), "TURBOQUANT": ((16, 32, 64, 128), False)}
PRIORITY = {10: ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")}
DEFAULT_PRIORITY = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")
TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}
SINK_TYPES = ("gpt_oss",)  # attention sinks (gpt_oss.py); MiMo-V2's take DIFFKV backends, not these


def takes_block(backend: str, block: int) -> bool:
    sizes, multiple = KERNEL_BLOCKS[backend]
    return any(block % s == 0 for s in sizes) if multiple else block in sizes


def reasons(backend: str, kv_dtype: str, block: int) -> list[str]:
    out = ["kv_cache_dtype not supported"] if backend == "TURBOQUANT" and not kv_dtype.startswith("turboquant") else []
    return out + ([] if takes_block(backend, block) else ["block_size not supported"])


def selector_config(req: Request, kv_dtype: str, block: int) -> str:
    m: ModelConfig = req.model
    heads = [p for s in m.layer_specs for p in parts(s) if isinstance(p, AttnSpec)]
    fields = {"head_size": max((p.head_dim for p in heads), default=m.head_dim),
              "dtype": TORCH_DTYPES.get(m.dtype, m.dtype), "kv_cache_dtype": kv_dtype, "block_size": block,
              "use_mla": False, "has_sink": m.model_type in SINK_TYPES, "use_sparse": False, "use_mm_prefix": False,
              "use_per_head_quant_scales": False, "attn_type": "AttentionType.DECODER",
              "has_sliding_window": any(isinstance(p, SlidingAttn) for p in heads), "use_non_causal": False,
              "use_batch_invariant": False, "use_kv_connector": False, "use_adaptive_verification": False,
              "use_pcp": False, "use_dcp": req.dcp > 1, "use_rswa": False}
    return f"AttentionSelectorConfig({', '.join(f'{k}={v}' for k, v in fields.items())})"


def block_refusal(req: Request, kv_dtype: str, block: int) -> str | None:
    """vLLM's message when no candidate backend takes `block`; None when one does."""
    major = req.device.compute_capability[0] if req.device and req.device.compute_capability else 9
    order = PRIORITY.get(major, DEFAULT_PRIORITY)
    if any(not reasons(b, kv_dtype, block) for b in order):
        return None
    listed = ", ".join(f"{b}: [{', '.join(reasons(b, kv_dtype, block))}]" for b in order)
    return (f"No valid attention backend found for cuda with {selector_config(req, kv_dtype, block)}. "
            f"Reasons: {{{listed}}}.")
