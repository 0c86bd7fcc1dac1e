"""What a log states about its run, in kvplan's names: parallel sizes, the KV dtype and length, the engine knobs
(and those its warnings imply), the GPU. Each is None (or absent) where the log does not print it, so that a flag
can fill it in (``given.py``).
"""

from __future__ import annotations

from typing import Any

from kvplan.dtypes import canonical_dtype
from kvplan.engines import get_engine
from kvplan.engines.settings import MOE_BACKENDS
from kvplan.errors import InputError
from kvplan.planning.gpus import lookup_gpu
from kvplan.reconcile.formats import FORMATS
from kvplan.reconcile.parse import StartupLog
from kvplan.reconcile.rules import vllm_rules

SPEC_DRAFTING = ("draft_model", "eagle", "eagle3")  # methods whose speculative model is a checkpoint of its own


def int_of(log: StartupLog, name: str) -> int | None:
    value = log.setting(name)
    return int(value) if value is not None else None


def _float(log: StartupLog, name: str) -> float | None:
    value = log.setting(name)
    return float(value) if value is not None else None


def _bool(log: StartupLog, name: str) -> bool | None:
    value = log.setting(name)
    return value == "True" if value is not None else None


def attention_dp(log: StartupLog) -> int | None:
    """SGLang's dp_size splits attention only with enable_dp_attention=True; without it the DP ranks are whole
    engines side by side, each planned as this log's (0.4-0.5 server_args: dp attention is the switch). A log
    that does not print the switch keeps dp_size."""
    dp = int_of(log, "dp")
    attention = spelling.data_parallel == "attention" if (spelling := get_engine(log.engine).spelling) else False
    return 1 if dp is not None and attention and log.setting("dp_attention") == "False" else dp


def kv_dtype_of(log: StartupLog) -> str | None:
    """The log's KV dtype ("auto" is the model dtype the log states), None where it states neither."""
    kv, model = log.setting("kv_dtype"), log.setting("dtype")
    if kv is None or kv == "auto":
        kv = model
    return (canonical_dtype(kv) or "auto") if kv else None


def _speculative(log: StartupLog) -> dict[str, Any]:
    """The speculative decoding the log's engine config names (vLLM's speculative_config); an MTP or n-gram config
    names the target's own path as its model, which is not a draft of its own."""
    method = log.setting("speculative_method")
    if method is None:
        return {}
    model = log.setting("speculative_model") if method in SPEC_DRAFTING else None
    return {"speculative_method": method, "num_speculative_tokens": int_of(log, "num_speculative_tokens"),
            "speculative_model": model}


def _token_log(log: StartupLog) -> dict[str, Any]:
    """vLLM 0.20.1 and 0.20.2 print 0.21's "GPU KV cache size", int(concurrency × max_model_len) (0.20.1
    v1/core/kv_cache_utils.py:1694-1712), where 0.20.0 printed num_blocks // groups × block (kvplan's 0.20 row)."""
    patch = FORMATS[log.engine].dated_by_sites and vllm_rules(log)[0].patch_tokens
    return {"legacy_token_log": False} if patch else {}


def stated_settings(log: StartupLog) -> dict[str, Any]:
    """The engine knobs the log states, and those its warnings imply: "Hybrid KV cache manager is disabled"
    (every layer counted as full), the Marlin FP4 MoE path (padded MXFP4 experts), prefix caching (which decides
    how a hybrid's Mamba states are paged), speculative decoding, LoRA (enable_lora alone: vLLM's one slot).
    Knobs the log does not print are absent."""
    backend = (log.setting("moe_backend") or "").lower() or None
    lora = log.setting("enable_lora") == "True"
    rank, slots = (int_of(log, "max_lora_rank"), int_of(log, "max_loras")) if lora else (None, None)
    values = {"max_lora_rank": rank, "max_loras": 1 if lora and rank is None and slots is None else slots,
              "gpu_memory_utilization": _float(log, "gpu_memory_utilization"),
              "mem_fraction_static": _float(log, "mem_fraction_static"),
              "free_gpu_memory_fraction": _float(log, "free_gpu_memory_fraction"),
              "max_num_batched_tokens": int_of(log, "max_num_batched_tokens"),
              "max_num_seqs": int_of(log, "max_num_seqs"), "chunked_prefill_size": int_of(log, "chunked_prefill_size"),
              "enforce_eager": _bool(log, "enforce_eager"), "prefix_caching": _bool(log, "prefix_caching"),
              "hybrid_kv_cache_manager": False if log.setting("hybrid_kv_cache_manager") == "off" else None,
              "moe_backend": backend if backend in MOE_BACKENDS else None, **_speculative(log), **_token_log(log)}
    return {k: v for k, v in values.items() if v is not None}


def logged_max_model_len(log: StartupLog) -> int | None:
    """max_model_len from the settings, else from a line that prints it (concurrency, refusal)."""
    stated = int_of(log, "max_model_len")
    if stated is not None:
        return stated
    printed = log.numbers("max_model_len")
    return int(printed[0][1].value) if printed else None


def logged_gpu(log: StartupLog) -> str | None:
    """The GPU the log names (a MoE kernel's config lookup, a collect-env line), when the catalog knows it by
    that name alone: it picks the attention backends (FlashMLA's 64-token blocks are Hopper's)."""
    name = log.setting("gpu_name")
    if name is None:
        return None
    try:
        return lookup_gpu(name.replace("_", " ")).name
    except InputError:  # not in the catalog, or in several memory sizes (A100): the memory is not guessed
        return None
