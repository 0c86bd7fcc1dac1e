"""The engine side: `vllm serve` argument parsing, the engine config, and the engine core's KV
cache planning, in the installed vLLM release's own code.

Planning mirrors that release's EngineCore._initialize_kv_caches (v1/engine/core.py; 0.33.0:
lines 251-349) with the profiled memory replaced by the `available_bytes` input. Which functions
exist and which inline steps run is compat.py's data.
"""

from __future__ import annotations

import copy
import inspect
import logging
import re
from dataclasses import dataclass
from typing import Any

from . import compat
from .worker import StageResult


def serve_argv(model_dir: str, tp: int, pp: int, kv_cache_dtype: str,
               block_size: int | None, max_model_len: int | None) -> list[str]:
    """The `vllm serve` command line (without the leading `vllm serve`)."""
    argv = [model_dir, "--tensor-parallel-size", str(tp),
            "--pipeline-parallel-size", str(pp), "--kv-cache-dtype", kv_cache_dtype]
    if block_size is not None:
        argv += ["--block-size", str(block_size)]
    if max_model_len is not None:
        argv += ["--max-model-len", str(max_model_len)]
    return argv


def create_engine_config(argv: list[str]) -> Any:
    """As entrypoints/cli/serve.py does for `vllm serve ARGV` (0.33.0: lines 56-57, 307-313)."""
    parser = compat.require("make_arg_parser")(compat.require("FlexibleArgumentParser")())
    if not any(action.dest == "model_tag" for action in parser._actions):
        # before 0.10 the positional model_tag is the serve subcommand's (entrypoints/cli/serve.py)
        argv = ["--model", *argv]
    args = parser.parse_args(argv)
    if getattr(args, "model_tag", None) is not None:
        args.model = args.model_tag
    engine_args = compat.require("AsyncEngineArgs").from_cli_args(args)
    usage = compat.require("UsageContext").OPENAI_API_SERVER
    return engine_args.create_engine_config(usage_context=usage)


class LogCapture(logging.Handler):
    """Collects the lines vLLM logs (formatted as its `%`-style messages)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.name, record.getMessage()))

    def find(self, prefix: str) -> str | None:
        return next((msg for _, msg in self.lines if msg.startswith(prefix)), None)


@dataclass
class Plan:
    configs: list[Any]  # one KVCacheConfig per worker (PP stage)
    scheduler: Any
    num_blocks: int
    kv_tokens: int | None
    max_concurrency: float | None
    max_concurrency_log: str | None
    final_block_size: int


def prepare_groups(config: Any, stages: list[StageResult]) -> list[Any] | None:
    """The steps of core.py before the budget is planned: the spec registry (0.23 on), the
    non-causal policy (0.24 on), the layout (0.29 on), and the global groups (0.33; before, the
    planning function forms them itself and this returns None)."""
    specs = [stage.specs for stage in stages]
    if (register := compat.symbol("register_all_kvcache_specs")) is not None:
        register(config)
    if compat.has_step("non_causal_policy") and any(
            getattr(s, "non_causal", False) for d in specs for s in d.values()):
        config.scheduler_config.enable_chunked_prefill = False
        config.cache_config.enable_prefix_caching = False
    if (resolve := compat.symbol("resolve_kv_cache_layout")) is not None:
        resolve(config, [stage.layouts for stage in stages],
                [spec for d in specs for spec in d.values()])
    if (global_groups := compat.symbol("get_global_kv_cache_groups")) is None:
        return None
    groups = global_groups(config, specs)
    config.adjust_dcp_kv_cache_interleave_size(groups)
    return groups


def stage_budget(config: Any, groups: list[Any] | None,
                 stage: StageResult, available: int) -> dict[str, Any] | None:
    """0.33: one worker's pool bytes per block and one max-length request's bytes, by the functions
    get_kv_cache_configs uses (kv_cache_planning.py:1461). Other releases: None (see
    stage_from_config)."""
    builder_of = compat.symbol("get_kv_cache_config_builder")
    if groups is None or builder_of is None:
        return None
    builder = builder_of(config)
    projected = compat.require("_project_kv_cache_groups_to_worker")(groups, stage.specs)
    per_block = compat.require("_pool_bytes_per_block_from_builder")(builder, config, projected)
    needed = compat.require("_max_memory_usage_bytes_from_groups")(builder, config, projected)
    return {
        "pp_rank": stage.pp_rank,
        "page_size_bytes_total_per_block": per_block,
        "max_memory_usage_bytes_per_request": needed,
        "check_available_bytes": available - per_block,  # minus the null block
        "num_blocks": available // per_block if per_block else None,
    }


def stage_from_config(config: Any, stage: StageResult, worker_config: Any,
                      available: int) -> dict[str, Any]:
    """Before 0.33: a worker's bytes per block id (the release's `_pool_bytes_per_block` from 0.21,
    else read off the tensors of the KV cache config it planned), and the bytes one max-length
    request reserves by the release's own function where it has one (0.12 on)."""
    num_blocks = worker_config.num_blocks
    pool = compat.symbol("_pool_bytes_per_block")
    if pool is not None and worker_config.kv_cache_groups:  # 0.21-0.32: the release's own divisor
        params = len(inspect.signature(pool).parameters)
        groups = worker_config.kv_cache_groups
        per_block = pool(config, groups) if params == 2 else pool(groups)
    else:
        per_block = _bytes_per_block_of_tensors(worker_config)
    needed = None
    usage = compat.symbol("_max_memory_usage_bytes_from_groups")
    if usage is not None and worker_config.kv_cache_groups:
        needed = usage(config, worker_config.kv_cache_groups)
    return {
        "pp_rank": stage.pp_rank,
        "page_size_bytes_total_per_block": per_block,
        "max_memory_usage_bytes_per_request": needed,
        "check_available_bytes": available,
        "num_blocks": num_blocks,
    }


def _bytes_per_block_of_tensors(worker_config: Any) -> int | None:
    """The tensors' bytes over the blocks they were sized for (before 0.19 a worker's tensors keep
    their own block count after the min over workers)."""
    # (bytes, layers) of each tensor: kv_cache_tensors from 0.9.2, one tensor per layer before
    tensors = [(t.size, list(t.shared_by)) for t in getattr(worker_config, "kv_cache_tensors", None) or []] or \
        [(t.size, [name]) for name, t in (getattr(worker_config, "tensors", None) or {}).items()]
    if not tensors or not worker_config.num_blocks:
        return None
    size, layers = tensors[0]
    allocated = size // _page_of(worker_config, layers[0]) if layers else worker_config.num_blocks
    return sum(size for size, _ in tensors) // allocated


def _page_of(worker_config: Any, layer: str) -> int:
    """Bytes of one block of `layer` in the KV cache config (its group's page; per layer for a
    UniformTypeKVCacheSpecs group)."""
    for group in worker_config.kv_cache_groups:
        if layer in group.layer_names:
            spec = group.kv_cache_spec
            per_layer = getattr(spec, "kv_cache_specs", None)
            return int((per_layer[layer] if per_layer else spec).page_size_bytes)
    raise KeyError(layer)


def _worker_configs(config: Any, specs: list[dict[str, Any]], groups: list[Any] | None,
                    available: int) -> list[Any]:
    """The release's planning function: get_kv_cache_configs (0.8.0, 0.11 on; with the global
    groups in 0.33), or get_kv_cache_config per worker then unify_kv_cache_configs (0.8.5-0.10)."""
    budgets: Any = [available] * len(specs) if compat.has_step("budget_per_worker") else available
    if (plan_all := compat.symbol("get_kv_cache_configs")) is not None:
        if groups is not None:
            return list(plan_all(config, specs, budgets, groups))
        return list(plan_all(config, specs, budgets))
    plan_one = compat.require("get_kv_cache_config")
    configs = [plan_one(config, spec, budget) for spec, budget in zip(specs, budgets, strict=True)]
    compat.require("unify_kv_cache_configs")(configs)
    return configs


def _scheduler_config(configs: list[Any]) -> Any:
    generate = compat.symbol("generate_scheduler_kv_cache_config")
    return generate(configs) if generate is not None else configs[0]


def _update_block_size(config: Any, scheduler: Any) -> None:
    """core.py after planning: the scheduler's block size (0.18 on; prefix-cacheable groups only
    from 0.30), validate_block_size, and the capacity the engine keeps (0.24 on; logged from 0.28)."""
    groups = scheduler.kv_cache_groups
    if compat.has_step("block_size_from_groups") and groups:
        sizes = [g.kv_cache_spec.block_size for g in groups]
        if compat.has_step("block_size_from_cacheable_groups"):
            sizes = [g.kv_cache_spec.block_size for g in groups
                     if g.kv_cache_spec.prefix_cacheable] or sizes
        config.cache_config.block_size = min(sizes)
        if (update := compat.symbol("update_kv_cache_capacity")) is not None:
            update(config, scheduler)
        elif (capacity := compat.symbol("get_kv_cache_capacity")) is not None:
            tokens, concurrency = capacity(config, scheduler)
            config.cache_config.kv_cache_size_tokens = tokens
            config.cache_config.kv_cache_max_concurrency = concurrency
    if compat.has_step("block_size_from_groups"):
        config.validate_block_size()


KV_LINE = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
CONCURRENCY_LINE = re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+x)")


def logged(capture: LogCapture, pattern: re.Pattern[str]) -> str | None:
    for _, msg in capture.lines:
        if (match := pattern.search(msg)) is not None:
            return match.group(1)
    return None


def plan(config: Any, groups: list[Any] | None, stages: list[StageResult], available: int,
         capture: LogCapture) -> Plan:
    """The rest of core.py's KV cache set-up for one worker per PP stage, each with `available`
    bytes. The token count and concurrency are the ones the release logs."""
    specs = [stage.specs for stage in stages]
    configs = _worker_configs(config, specs, groups, available)
    concurrency = None
    per_config = compat.symbol("get_max_concurrency_for_kv_cache_config")
    if compat.symbol("update_kv_cache_capacity") is None and per_config is not None \
            and configs[0].kv_cache_groups:
        # before 0.28 the planning function logs the concurrency of a worker's config, as planned
        concurrency = per_config(config, copy.deepcopy(configs[0]))
    scheduler = _scheduler_config(configs)
    config.cache_config.num_gpu_blocks = scheduler.num_blocks
    _update_block_size(config, scheduler)
    if compat.symbol("update_kv_cache_capacity") is not None and scheduler.kv_cache_groups:
        _, concurrency = compat.require("get_kv_cache_capacity")(config, scheduler)
    tokens = logged(capture, KV_LINE)
    return Plan(configs, scheduler, scheduler.num_blocks,
                int(tokens.replace(",", "")) if tokens is not None else None,
                concurrency, logged(capture, CONCURRENCY_LINE), config.cache_config.block_size)
