"""The engine side: `vllm serve` argument parsing, the engine config, and the
engine core's KV cache planning, in vLLM 0.33.0's own code.

Planning mirrors EngineCore._initialize_kv_caches (v1/engine/core.py:251-349)
with the profiled memory replaced by the `available_bytes` input.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from vllm.config import VllmConfig
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.entrypoints.common.cli_args import make_arg_parser
from vllm.usage.usage_lib import UsageContext
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.v1.attention.backends.utils import resolve_kv_cache_layout
from vllm.v1.core import kv_cache_planning as planning
from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder
from vllm.v1.core.kv_cache_utils import (
    generate_scheduler_kv_cache_config,
    get_kv_cache_capacity,
    update_kv_cache_capacity,
)
from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
from vllm.v1.kv_cache_interface import KVCacheConfig, KVCacheGroupSpec

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


def create_engine_config(argv: list[str]) -> VllmConfig:
    """As entrypoints/cli/serve.py:307-313 does for `vllm serve ARGV`."""
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv)
    if args.model_tag is not None:  # serve.py:56-57
        args.model = args.model_tag
    engine_args = AsyncEngineArgs.from_cli_args(args)
    return engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)


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
    configs: list[KVCacheConfig]
    scheduler: KVCacheConfig
    num_blocks: int
    kv_tokens: int
    max_concurrency: float
    final_block_size: int


def prepare_groups(config: VllmConfig, stages: list[StageResult]) -> list[KVCacheGroupSpec]:
    """core.py:255-292: spec registry, non-causal policy, layout, global groups."""
    register_all_kvcache_specs(config)
    specs = [stage.specs for stage in stages]
    if any(getattr(s, "non_causal", False) for d in specs for s in d.values()):
        config.scheduler_config.enable_chunked_prefill = False  # core.py:266-277
        config.cache_config.enable_prefix_caching = False
    resolve_kv_cache_layout(
        config, [stage.layouts for stage in stages],
        [spec for d in specs for spec in d.values()],
    )
    groups = planning.get_global_kv_cache_groups(config, specs)
    config.adjust_dcp_kv_cache_interleave_size(groups)
    return groups


def stage_budget(config: VllmConfig, groups: list[KVCacheGroupSpec],
                 stage: StageResult, available: int) -> dict[str, Any]:
    """One worker's pool bytes per block and one max-length request's bytes,
    by the functions get_kv_cache_configs uses (kv_cache_planning.py:1461)."""
    builder = get_kv_cache_config_builder(config)
    projected = planning._project_kv_cache_groups_to_worker(groups, stage.specs)
    per_block = planning._pool_bytes_per_block_from_builder(builder, config, projected)
    needed = planning._max_memory_usage_bytes_from_groups(builder, config, projected)
    return {
        "pp_rank": stage.pp_rank,
        "page_size_bytes_total_per_block": per_block,
        "max_memory_usage_bytes_per_request": needed,
        "check_available_bytes": available - per_block,  # minus the null block
        "num_blocks": available // per_block if per_block else None,
    }


def plan(config: VllmConfig, groups: list[KVCacheGroupSpec],
         stages: list[StageResult], available: int) -> Plan:
    """core.py:321-349 for one worker per PP stage, each with `available` bytes."""
    specs = [stage.specs for stage in stages]
    configs = planning.get_kv_cache_configs(config, specs, [available] * len(specs), groups)
    scheduler = generate_scheduler_kv_cache_config(configs)
    config.cache_config.num_gpu_blocks = scheduler.num_blocks
    block_sizes = [g.kv_cache_spec.block_size for g in scheduler.kv_cache_groups]
    cacheable = [g.kv_cache_spec.block_size for g in scheduler.kv_cache_groups
                 if g.kv_cache_spec.prefix_cacheable]
    if block_sizes:  # core.py:337-347
        config.cache_config.block_size = min(cacheable or block_sizes)
        update_kv_cache_capacity(config, scheduler)
    config.validate_block_size()
    kv_tokens, concurrency = get_kv_cache_capacity(config, scheduler)
    return Plan(configs, scheduler, scheduler.num_blocks, kv_tokens, concurrency,
                config.cache_config.block_size)
