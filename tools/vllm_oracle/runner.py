"""Run one build point (model, tp, pp, kv dtype, block size, max_model_len):
build once, then plan once per KV budget. Returns the JSON records."""

from __future__ import annotations

import copy
import logging
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from . import compat, engine, records
from .worker import StageResult, build_stage

KV_LOG_PREFIX = "GPU KV cache size:"
KEPT_LOGGERS = ("vllm.v1.core", "vllm.platforms", "vllm.model_executor.models.config",
                "vllm.config")


@dataclass(frozen=True)
class BuildPoint:
    model: str  # "org/name", as in the sample's `model` field
    model_dir: str
    tp: int
    pp: int
    kv_cache_dtype: str
    block_size: int | None
    max_model_len: int | None  # None: not passed, vLLM uses the model's maximum
    budgets: tuple[int, ...] = field(default=())


def start_log_capture(verbose: bool) -> engine.LogCapture:
    capture = engine.LogCapture()
    vllm_logger = logging.getLogger("vllm")
    vllm_logger.setLevel(logging.INFO)
    vllm_logger.propagate = False
    vllm_logger.handlers = [capture]
    if verbose:
        vllm_logger.addHandler(logging.StreamHandler(sys.stderr))
    return capture


def base_record(point: BuildPoint) -> dict[str, Any]:
    return {
        "model": point.model, "tp": point.tp, "pp": point.pp,
        "kv_cache_dtype": point.kv_cache_dtype, "block_size": point.block_size,
        "final_block_size": None, "max_model_len": point.max_model_len,
        "available_bytes": None, "num_blocks": None, "kv_tokens": None,
        "max_concurrency": None, "max_concurrency_log": None, "log_line": None,
        "page_size_bytes_total_per_block": None,
        "max_memory_usage_bytes_per_request": None, "error": None, "specs": [],
        "kv_cache_groups": None, "max_num_batched_tokens": None,
        "attention_backends": [],
        "max_model_len_requested": point.max_model_len, "error_stage": None,
        "error_message": None, "error_where": None, "stages": None,
        "settings": None, "worker_settings": None, "vllm_log": [],
        "vllm_version": compat.installed(),
        "serve_args": engine.serve_argv(point.model_dir, point.tp, point.pp,
                                        point.kv_cache_dtype, point.block_size,
                                        point.max_model_len),
    }


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def error_message(exc: BaseException) -> str:
    """The message alone; for pydantic's wrapper, the validator's own message."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            return " ".join(str(e.get("msg", "")) for e in errors())
        except Exception:
            pass
    return str(exc)


def error_fields(exc: BaseException, stage: str) -> dict[str, Any]:
    return {"error": error_text(exc), "error_stage": stage,
            "error_message": error_message(exc), "error_where": error_where(exc)}


def error_where(exc: BaseException) -> str | None:
    """file:line of the innermost vLLM frame that raised (vllm/...)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/vllm/" in f.filename]
    if not frames:
        return None
    path = frames[-1].filename
    return f"{path[path.rindex('/vllm/') + 1:]}:{frames[-1].lineno}"


def kept_log(capture: engine.LogCapture) -> list[str]:
    lines = [msg for name, msg in capture.lines if name.startswith(KEPT_LOGGERS)]
    return list(dict.fromkeys(lines))


def build_fields(config: Any, stages: list[StageResult]) -> dict[str, Any]:
    """What a successful build contributes to every budget's record."""
    backends = [name for stage in stages for name in stage.backends]
    return {
        "max_model_len": config.model_config.max_model_len,
        "specs": records.count_specs(stages[0].specs),
        "max_num_batched_tokens": config.scheduler_config.max_num_batched_tokens,
        "attention_backends": list(dict.fromkeys(backends)),
        "worker_settings": stages[0].settings,
    }


def copy_for_planning(config: Any) -> Any:
    """The engine core's config, fresh for each budget (planning mutates it);
    the layer objects in the forward context are not needed for planning."""
    compilation = config.compilation_config
    layers = compilation.static_forward_context
    compilation.static_forward_context = {}
    try:
        return copy.deepcopy(config)
    finally:
        compilation.static_forward_context = layers


def plan_fields(config: Any, stages: list[StageResult], available: int,
                capture: engine.LogCapture) -> dict[str, Any]:
    """Plan with `available` bytes per worker; vLLM's numbers, or its refusal."""
    config = copy_for_planning(config)
    out: dict[str, Any] = {"available_bytes": available}
    try:
        groups = engine.prepare_groups(config, stages)
        budgets = [engine.stage_budget(config, groups, s, available) for s in stages]
        out["stages"] = budgets if all(b is not None for b in budgets) else None
        plan = engine.plan(config, groups, stages, available, capture)
    except Exception as exc:  # vLLM's refusal, recorded verbatim
        if out.get("stages"):
            _add_stage_specs(out["stages"], stages)
        return {**out, **error_fields(exc, "planning"),
                "settings": records.settings_dict(config)}
    if out["stages"] is None:
        out["stages"] = [engine.stage_from_config(config, s, c, available)
                         for s, c in zip(stages, plan.configs, strict=True)]
    _add_stage_specs(out["stages"], stages)
    return {**out, **plan_result_fields(config, plan, out["stages"], capture)}


def _add_stage_specs(infos: list[dict[str, Any]], stages: list[StageResult]) -> None:
    for stage, info in zip(stages, infos, strict=True):
        info["specs"] = records.count_specs(stage.specs)


def _max_of(stages: list[dict[str, Any]], key: str) -> int | None:
    values = [s[key] for s in stages if s[key] is not None]
    return max(values) if values else None


def plan_result_fields(config: Any, plan: engine.Plan,
                       stages: list[dict[str, Any]],
                       capture: engine.LogCapture) -> dict[str, Any]:
    worker_groups = plan.configs[0].kv_cache_groups
    return {
        "final_block_size": plan.final_block_size,
        "num_blocks": plan.num_blocks, "kv_tokens": plan.kv_tokens,
        "max_concurrency": plan.max_concurrency,
        "max_concurrency_log": plan.max_concurrency_log,
        "log_line": capture.find(KV_LOG_PREFIX),
        "page_size_bytes_total_per_block": _max_of(stages, "page_size_bytes_total_per_block"),
        "max_memory_usage_bytes_per_request": _max_of(stages, "max_memory_usage_bytes_per_request"),
        "kv_cache_groups": [
            records.group_dict(config, worker, scheduler)
            for worker, scheduler in zip(worker_groups, plan.scheduler.kv_cache_groups, strict=False)
        ],
        "settings": records.settings_dict(config),
    }


def run_point(point: BuildPoint, verbose: bool = False) -> list[dict[str, Any]]:
    """All records of one build point (one per budget, or one build error)."""
    capture = start_log_capture(verbose)
    base = base_record(point)
    try:
        stage = "engine_config"
        config = engine.create_engine_config(base["serve_args"])
        stage = "model_build"
        stages = [build_stage(config, rank) for rank in range(point.pp)]
    except Exception as exc:
        return [{**base, **error_fields(exc, stage), "vllm_log": kept_log(capture)}]
    built = {**base, **build_fields(config, stages)}
    build_log = list(capture.lines)
    out = []
    for available in point.budgets:
        capture.lines = list(build_log)
        fields = plan_fields(config, stages, available, capture)
        out.append({**built, **fields, "vllm_log": kept_log(capture)})
    return out
