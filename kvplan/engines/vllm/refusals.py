"""What vLLM prints when it will not start with the KV memory it found, release by release.

The wording is reproduced with vLLM's own number formatting, so a predicted refusal can be compared
with a logged one character for character (``v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``):
- V0 (0.6-0.8 with VLLM_USE_V1=0): ``worker.py`` ``raise_if_cache_size_invalid``, after the
  "# GPU blocks" and "Maximum concurrency" lines: the longest length is ``block × (num_blocks // pp)``.
- V1 0.8.0 (:451-484): "GB" and no estimate; 0.8.5-0.9.0 (:462-552): GiB, the estimate computed but a stray
  string statement drops it from the message.
- 0.9.2-0.12 (0.9.2 :538-579): the estimate, ``%.2f`` GiB; 0.13 (:688-720): and the docs link.
- 0.14-0.21 (0.14.0 :609-643): GiB as ``round(x, 2)``, the estimate glued to "Try".
- 0.22 on (0.22.0 :691-728; 0.33 ``v1/core/kv_cache_planning.py``): "model's" and the CPU-backend notes; from
  0.29 checked against the memory left after the null block (``VllmRelease.refusal_null_block``).
"""

from __future__ import annotations

from kvplan.engines.vllm.row import RefusalStyle

GIB = 1024**3
_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
_NO_MEMORY = "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
_TRY = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."


def no_memory(style: RefusalStyle) -> str:
    """Available KV memory ≤ 0 (after the null block from 0.29)."""
    if style == "v1-0.22":
        return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine (this flag also controls CPU memory reservation on the CPU backend, "
                f"despite its name). {_DOCS}")
    return f"{_NO_MEMORY} {_DOCS}" if style in ("v1-0.13", "v1-0.14") else _NO_MEMORY


def _gib(value: int) -> str:
    return str(round(value / GIB, 2))  # vLLM's format_gib (0.14 utils/mem_utils.py:21-22)


def too_long(style: RefusalStyle, max_model_len: int, need_bytes: int, available_bytes: int, estimate: int) -> str:
    """One max_model_len request needs more than the available KV memory (V1)."""
    if style in ("v1-0.22", "v1-0.14"):
        return _rounded(style, max_model_len, need_bytes, available_bytes, estimate)
    unit = "GB" if style == "v1-0.8.0" else "GiB"
    head = (f"To serve at least one request with the models's max seq len ({max_model_len}), "
            f"({need_bytes / GIB:.2f} {unit} KV cache is needed, which is larger than the available KV cache memory "
            f"({available_bytes / GIB:.2f} {unit}).")
    if style == "v1-0.8.0":
        return f"{head} {_TRY}"
    if style == "v1-0.8":
        return f"{head}{' Based on the available memory,' if estimate else ''}  {_TRY}"
    hint = f"Based on the available memory, the estimated maximum model length is {estimate}." if estimate else ""
    return f"{head} {hint} {_TRY}" + (f" {_DOCS}" if style == "v1-0.13" else "")


def _rounded(style: RefusalStyle, max_model_len: int, need_bytes: int, available_bytes: int, estimate: int) -> str:
    hint = f"Based on the available memory, the estimated maximum model length is {estimate}. " if estimate else ""
    head = (f"To serve at least one request with the {'model' if style == 'v1-0.22' else 'models'}'s max seq len "
            f"({max_model_len}), ({_gib(need_bytes)} GiB KV cache is needed, which is larger than the available KV "
            f"cache memory ({_gib(available_bytes)} GiB). {hint}")
    if style == "v1-0.22":
        return (f"{head}Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) "
                f"or decreasing `max_model_len` when initializing the engine. {_DOCS}")
    return f"{head}{_TRY} {_DOCS}"


def v0_too_long(max_model_len: int, max_seq_len: int) -> str:
    """V0: the blocks hold fewer tokens than max_model_len."""
    return (f"The model's max seq len ({max_model_len}) is larger than the maximum number of tokens that can be "
            f"stored in KV cache ({max_seq_len}). Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.")
