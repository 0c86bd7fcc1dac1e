"""What vLLM prints when it will not start with the KV memory it found, release by release.

The wording is reproduced with vLLM's own number formatting, so a predicted refusal can be compared
with a logged one character for character:
- V0 (0.6-0.8 with VLLM_USE_V1=0): ``worker.py`` ``raise_if_cache_size_invalid``, after the
  "# GPU blocks" and "Maximum concurrency" lines: the longest length is ``block × (num_blocks // pp)``.
- V1 0.8: ``v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``; its estimate is computed but a
  stray string statement drops it from the message.
- V1 0.9-0.11: the same check with the estimate (``%.2f`` GiB).
- 0.33: ``v1/core/kv_cache_planning.py`` ``_check_enough_kv_cache_memory``: GiB as ``round(x, 2)``,
  checked against the memory left after the null block.
"""

from __future__ import annotations

from kvplan.engines.vllm.releases import RefusalStyle

GIB = 1024**3
_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


def no_memory(style: RefusalStyle) -> str:
    """Available KV memory ≤ 0 (after the null block in 0.33)."""
    if style == "0.33":
        return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine (this flag also controls CPU memory reservation on the CPU backend, "
                f"despite its name). {_DOCS}")
    return "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."


def too_long(style: RefusalStyle, max_model_len: int, need_bytes: int, available_bytes: int, estimate: int) -> str:
    """One max_model_len request needs more than the available KV memory (V1)."""
    if style == "0.33":
        hint = f"Based on the available memory, the estimated maximum model length is {estimate}. " if estimate else ""
        return (f"To serve at least one request with the model's max seq len ({max_model_len}), "
                f"({round(need_bytes / GIB, 2)} GiB KV cache is needed, which is larger than the available KV cache "
                f"memory ({round(available_bytes / GIB, 2)} GiB). {hint}Try increasing `gpu_memory_utilization` "
                "(which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing "
                f"the engine. {_DOCS}")
    head = (f"To serve at least one request with the models's max seq len ({max_model_len}), "
            f"({need_bytes / GIB:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
            f"({available_bytes / GIB:.2f} GiB).")
    tail = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    if style == "v1-0.8":
        return f"{head}{' Based on the available memory,' if estimate else ''}  {tail}"
    hint = f"Based on the available memory, the estimated maximum model length is {estimate}." if estimate else ""
    return f"{head} {hint} {tail}"


def v0_too_long(max_model_len: int, max_seq_len: int) -> str:
    """V0: the blocks hold fewer tokens than max_model_len."""
    return (f"The model's max seq len ({max_model_len}) is larger than the maximum number of tokens that can be "
            f"stored in KV cache ({max_seq_len}). Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.")
