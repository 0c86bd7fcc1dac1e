"""Where the installed vLLM release keeps what the oracle calls, and which engine-core steps it runs.

The oracle drives each vLLM release with that release's own functions. Between releases the
functions move (``entrypoints/openai/cli_args.py`` -> ``entrypoints/common/cli_args.py``), appear
(``register_all_kvcache_specs`` in 0.23, ``get_global_kv_cache_groups`` in 0.33) or are replaced
(``get_kv_cache_config`` per worker, 0.8.5-0.10, by ``get_kv_cache_configs``). This module is data:

- ``SYMBOLS``: each name the oracle uses -> the modules that have held it, newest first
  (``module:attr`` where the release names it differently). A name no
  module of the installed release has resolves to ``None`` and the step that needs it is skipped,
  as the release itself has no such step.
- ``CORE_STEPS``: the steps of ``EngineCore._initialize_kv_caches`` (``v1/engine/core.py``) that are
  inline code, not a function one can call, with the first release that runs each.

Nothing here computes a planning number.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from typing import Any

SYMBOLS: dict[str, tuple[str, ...]] = {
    # `vllm serve` parsing and the engine config
    "make_arg_parser": ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
                        "vllm.entrypoints.openai.cli_args"),
    "FlexibleArgumentParser": ("vllm.utils.argparse_utils", "vllm.utils"),
    "AsyncEngineArgs": ("vllm.engine.arg_utils",),
    "UsageContext": ("vllm.usage.usage_lib",),
    "VllmConfig": ("vllm.config",),
    "set_current_vllm_config": ("vllm.config",),
    "get_layers_from_vllm_config": ("vllm.config",),
    # the worker: model build, block size, specs, backends
    "initialize_model": ("vllm.model_executor.model_loader.utils",
                         "vllm.model_executor.model_loader.loader:_initialize_model"),  # 0.8
    "set_default_torch_dtype": ("vllm.utils.torch_utils", "vllm.model_executor.model_loader.utils"),
    "init_workspace_manager": ("vllm.v1.worker.workspace",),  # 0.13 on
    "get_kv_cache_spec": ("vllm.v1.worker.gpu.attn_utils",),  # model runner V2 (0.12 on)
    "GPUModelRunner": ("vllm.v1.worker.gpu_model_runner",),
    "get_current_attn_backends": ("vllm.distributed.kv_transfer.kv_connector.utils",),  # 0.18 on
    "get_supported_kv_cache_layouts": ("vllm.v1.attention.backends.utils",),  # 0.29 on
    "AttentionLayerBase": ("vllm.model_executor.layers.attention_layer_base",
                           "vllm.attention.layer:Attention"),  # before 0.11: the Attention layer
    "STR_DTYPE_TO_TORCH_DTYPE": ("vllm.utils.torch_utils", "vllm.utils"),
    "cdiv": ("vllm.utils.math_utils", "vllm.utils"),
    # the engine core's planning
    "register_all_kvcache_specs": ("vllm.v1.core.single_type_kv_cache_manager",),  # 0.23 on
    "resolve_kv_cache_layout": ("vllm.v1.attention.backends.utils",),  # 0.29 on
    "get_global_kv_cache_groups": ("vllm.v1.core.kv_cache_planning",),  # 0.33
    "get_kv_cache_configs": ("vllm.v1.core.kv_cache_planning", "vllm.v1.core.kv_cache_utils"),
    "get_kv_cache_config": ("vllm.v1.core.kv_cache_utils",),  # one worker (0.8.5-0.10)
    "unify_kv_cache_configs": ("vllm.v1.core.kv_cache_utils",),
    "generate_scheduler_kv_cache_config": ("vllm.v1.core.kv_cache_utils",),  # 0.11 on
    "get_kv_cache_capacity": ("vllm.v1.core.kv_cache_utils",),  # 0.24 on
    "update_kv_cache_capacity": ("vllm.v1.core.kv_cache_utils",),  # 0.28 on (logs the line)
    "get_max_concurrency_for_kv_cache_config": ("vllm.v1.core.kv_cache_utils",),  # 0.10 on
    "_max_memory_usage_bytes_from_groups": ("vllm.v1.core.kv_cache_planning", "vllm.v1.core.kv_cache_utils"),
    "_project_kv_cache_groups_to_worker": ("vllm.v1.core.kv_cache_planning", "vllm.v1.core.kv_cache_utils"),
    "_pool_bytes_per_block_from_builder": ("vllm.v1.core.kv_cache_planning",),  # 0.33
    "_pool_bytes_per_block": ("vllm.v1.core.kv_cache_utils",),  # 0.21-0.32
    "get_kv_cache_config_builder": ("vllm.v1.core.kv_cache_config_builder",),  # 0.33
}

# Inline steps of EngineCore._initialize_kv_caches, by the first release that has each
# (v1/engine/core.py of that release).
CORE_STEPS: dict[str, tuple[int, ...]] = {
    # one budget per worker (0.8.5 v1/engine/core.py:120-161); 0.8.0 plans every worker with the
    # smallest budget, one int (v1/executor/abstract.py:65-70)
    "budget_per_worker": (0, 8, 5),
    # core.py sets cache_config.block_size = min(group block sizes) and calls validate_block_size
    # (0.18.0 core.py:271-277)
    "block_size_from_groups": (0, 18),
    # the non-causal policy: no chunked prefill / prefix caching for non-causal layers (0.24.0)
    "non_causal_policy": (0, 24),
    # the block-size minimum is over prefix-cacheable groups only (0.30.0)
    "block_size_from_cacheable_groups": (0, 30),
}


def version_tuple(text: str) -> tuple[int, ...]:
    """'0.19.0' -> (0, 19, 0); '0.10.1.1' -> (0, 10, 1, 1); suffixes (rc, dev, +cu) ignored."""
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0].split("rc")[0].split(".dev")[0]))


@cache
def installed() -> str:
    import vllm

    return str(vllm.__version__)


def release_minor() -> str:
    """'0.19.0' -> '0.19' (kvplan's row key)."""
    return ".".join(str(p) for p in version_tuple(installed())[:2])


def has_step(name: str) -> bool:
    return version_tuple(installed()) >= CORE_STEPS[name]


@cache
def symbol(name: str) -> Any:
    """The installed release's object for `name`, or None where the release has none. An entry
    "module:attr" names an object the release calls differently."""
    for entry in SYMBOLS[name]:
        module_name, _, attr = entry.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # only a module the release lacks; a missing package is an error
            if exc.name is None or not (module_name == exc.name or module_name.startswith(exc.name + ".")):
                raise
            continue
        found = getattr(module, attr or name, None)
        if found is not None:
            return found
    return None


def require(name: str) -> Any:
    found = symbol(name)
    if found is None:
        raise RuntimeError(f"vLLM {installed()} has no {name} in {', '.join(SYMBOLS[name])}")
    return found
