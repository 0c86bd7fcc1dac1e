"""The public functions' keywords: the CLI's option names, their other spellings, and how each value is read.

A public function declares every keyword it takes, typed, with the CLI's default (``kvplan.api.planning``,
``kvplan.api.workflows``; ``tests/api/test_keywords.py`` checks them against the commands' options, which are
defined once, in ``kvplan.cli.options`` and ``kvplan.cli.engine_options``). ``@public`` wraps it:

- a keyword the CLI spells otherwise is taken under that spelling too: the long flag without its dashes
  (``tensor_parallel_size``, ``kv_cache_dtype``, ``gpu_mem``), and the other engines' (``tp_size``,
  ``context_length``); ``ALIASES`` maps each to the keyword;
- an unknown keyword is an ``InputError`` naming the closest one;
- each value is read by its keyword's reader (``kvplan.api.values``): Python values, or the CLI's text
  (``"32k"``, ``"20GiB"``, ``"vllm,sglang"``), and a wrong type is an ``InputError`` naming the keyword.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kvplan.api import values as v
from kvplan.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

_INT, _TOKENS = v.optional(v.integer), v.optional(v.tokens)
_TEXT, _FRACTION, _SIZE = v.optional(v.text), v.optional(v.fraction), v.optional(v.size)
READERS: dict[str, v.Reader] = {
    # model
    "revision": _TEXT, "dtype": v.text,
    # parallelism and cache
    "tp": v.integer, "pp": v.integer, "dcp": v.integer, "dp": v.integer, "ep": v.integer,
    "max_model_len": _TOKENS, "batch": v.count, "kv_dtype": v.text, "block_size": _INT, "quant_group": v.integer,
    "state_dtype": v.text, "ssm_state_dtype": v.text, "attention": _TEXT, "kv_heads": _INT, "layer_types": _TEXT,
    "window": _TOKENS,
    # engine
    "engine": v.text, "max_num_batched_tokens": _TOKENS, "max_num_seqs": _INT, "enforce_eager": v.flag,
    "gpu_memory_utilization": _FRACTION, "entry_point": v.text, "sampler": _TEXT, "moe_backend": _TEXT,
    "disable_hybrid_kv_cache_manager": v.flag, "no_async_scheduling": v.flag, "mem_fraction_static": _FRACTION,
    "free_gpu_memory_fraction": _FRACTION,
    # beside the cache
    "speculative_model": _TEXT, "speculative_method": _TEXT, "num_speculative_tokens": _INT,
    "max_lora_rank": _INT, "max_loras": _INT, "lora_target_modules": v.optional(v.names), "max_cpu_loras": _INT,
    "limit_mm_per_prompt": _INT, "cpu_offload_bytes": v.optional(v.host_size),
    "kv_offloading_bytes": v.optional(v.host_size), "hicache_ratio": _FRACTION,
    "lmcache_cpu_bytes": v.optional(v.host_size), "mooncake_segment_bytes": v.optional(v.host_size), "role": _TEXT,
    "host_memory_bytes": _SIZE,
    # GPU memory
    "gpu": _TEXT, "gpu_memory_bytes": _SIZE, "kv_budget_bytes": v.optional(v.budget), "overhead_bytes": _SIZE,
    "non_torch_bytes": _SIZE, "weights_dtype": _TEXT, "quantization": _TEXT, "gpus_per_node": _INT,
    # fit
    "max_replicas": _INT, "max_gpus": _INT, "nodes": _INT,
}

# Another spelling -> the keyword: the CLI's long flags without dashes where the keyword is shorter, and the
# spellings kvplan.cli.options.FLAG_ALIASES rewrites (tests/api/test_keywords.py holds the two together).
ALIASES = {
    "tensor_parallel_size": "tp", "tp_size": "tp", "pipeline_parallel_size": "pp", "pp_size": "pp",
    "decode_context_parallel_size": "dcp", "data_parallel_size": "dp", "dp_size": "dp", "ep_size": "ep",
    "expert_parallel_size": "ep", "kv_cache_dtype": "kv_dtype", "seq_len": "max_model_len",
    "context": "max_model_len", "max_seq_len": "max_model_len", "context_length": "max_model_len",
    "concurrency": "batch", "page_size": "block_size", "mamba_cache_dtype": "state_dtype",
    "mamba_ssm_cache_dtype": "ssm_state_dtype", "mamba_ssm_dtype": "ssm_state_dtype", "q": "quantization",
    "gpu_mem": "gpu_memory_bytes", "kv_budget": "kv_budget_bytes", "overhead": "overhead_bytes",
    "non_torch": "non_torch_bytes", "cpu_offload_gb": "cpu_offload_bytes", "kv_offloading_size": "kv_offloading_bytes",
    "lmcache_cpu_size": "lmcache_cpu_bytes", "mooncake_segment_size": "mooncake_segment_bytes",
    "host_mem": "host_memory_bytes", "kv_cache_free_gpu_memory_fraction": "free_gpu_memory_fraction",
    "max_num_tokens": "max_num_batched_tokens", "price": "prices",
    # the plural names kvplan.workflows takes (a sweep's axes, compare's lists)
    "max_model_lens": "max_model_len", "batches": "batch", "tps": "tp", "pps": "pp", "kv_dtypes": "kv_dtype",
    "engines": "engine",
}
# An alias whose number has another unit than the keyword's (the engines' --cpu-offload-gb 10 is 10 GiB).
ALIAS_READERS: dict[str, v.Reader] = {"cpu_offload_gb": v.optional(v.gib)}


def keyword_of(name: str, accepted: Mapping[str, Any]) -> str | None:
    """The keyword `name` stands for among `accepted` (itself, or the one it is another spelling of)."""
    own = name if name in accepted else ALIASES.get(name)
    return own if own is not None and own in accepted else None


def _rename(where: str, accepted: Mapping[str, inspect.Parameter], given: dict[str, Any],
            readers: Mapping[str, v.Reader]) -> dict[str, Any]:
    """The keywords under their own names, read; an unknown one is refused with the closest name."""
    out: dict[str, Any] = {}
    for name, value in given.items():
        own = keyword_of(name, accepted)
        if own is None:
            known = sorted({*accepted, *(a for a, k in ALIASES.items() if k in accepted)})
            near = difflib.get_close_matches(name, known, n=1)
            raise InputError(f"{where}() takes no keyword {name!r}" + (f"; did you mean {near[0]!r}?" if near else
                                                                        f"; it takes: {', '.join(known)}"), arg=name)
        if own in out:
            raise InputError(f"{where}(): {own} given twice (as {own} and as {name}): give it once", arg=own)
        reader = readers.get(own) or (ALIAS_READERS.get(name) if own != name else None) or READERS.get(own)
        out[own] = value if reader is None else reader(own, value)
    return out


def public(readers: Mapping[str, v.Reader] | None = None,
           fast: Callable[..., Any] | None = None) -> Callable[[F], F]:
    """Take the CLI's spellings and value forms for `func`'s keywords (`readers`: this function's own readers,
    a sweep's axes); refuse an unknown keyword with the closest name. The signature shown is `func`'s. `fast`
    answers first where it can, given the call's arguments and keywords as they came (None: it cannot), a call
    with nothing to read (a script's loop)."""
    own_readers = dict(readers or {})

    def decorate(func: F) -> F:
        accepted = {name: p for name, p in inspect.signature(func).parameters.items()
                    if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
        where = func.__name__

        @functools.wraps(func)
        def wrapper(*args: Any, **given: Any) -> Any:
            if fast is not None:
                answer = fast(args, given)
                if answer is not None:
                    return answer
            return func(*args, **_rename(where, accepted, given, own_readers))

        wrapper.keywords = tuple(accepted)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
