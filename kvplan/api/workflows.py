"""The public workflow functions: ``sweep``, ``compare`` and ``reconcile``, each with its command's keywords
(`kvplan sweep`, `compare`, `reconcile`), typed, with the command's defaults, under the CLI's names and in its
value forms (``kvplan.api.keywords``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvplan.api import values as v
from kvplan.api.docs import documented
from kvplan.api.keywords import public
from kvplan.api.planning import Budget, Fraction, Int, Length, Names, OptInt, Size
from kvplan.api.request import fields, load, question
from kvplan.errors import InputError
from kvplan.units import parse_count

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig
    from kvplan.reconcile import Reconciliation, StartupLog
    from kvplan.workflows.compare import Comparison
    from kvplan.workflows.sweep import Sweep

Axis = int | str | Sequence[int]  # 4096, [4096, 32768], "4k..32k" or "1,2,4"


def _text_axis(parse: Callable[[str, str], int]) -> Callable[[str, str], tuple[int, ...]]:
    def read(text: str, name: str) -> tuple[int, ...]:
        from kvplan.workflows.ranges import parse_int_axis

        return parse_int_axis(text, name, parse)

    return read


def _tokens_axis(text: str, name: str) -> tuple[int, ...]:
    from kvplan.workflows.ranges import parse_int_axis

    return parse_int_axis(text, name)


def models_of(models: Any, revision: str | None, dtype: str) -> list[ModelConfig]:
    """One model id or ModelConfig, or a list of them (a str is one model, never its characters)."""
    items = [models] if isinstance(models, str) or not isinstance(models, (list, tuple)) else list(models)
    return [load(m, revision, dtype, request=False) for m in items]


COUNT_AXIS = v.axis(v.count, _text_axis(parse_count))


@documented
@public({"max_model_len": v.axis(v.tokens, _tokens_axis), "batch": COUNT_AXIS, "tp": COUNT_AXIS, "pp": COUNT_AXIS,
         "kv_dtype": v.names, "engine": v.optional(v.names)})
def sweep(models: str | ModelConfig | Sequence[str | ModelConfig], *, max_model_len: Axis, batch: Axis = "1",
          tp: Axis = "1", pp: Axis = "1", kv_dtype: Names = "auto", engine: Names | None = None,
          revision: str | None = None, dtype: str = "auto", block_size: OptInt = None, quant_group: Int = 8,
          state_dtype: str = "auto", ssm_state_dtype: str = "auto", max_num_batched_tokens: Length = None,
          max_num_seqs: OptInt = None, enforce_eager: bool = False, gpu_memory_utilization: Fraction = None,
          entry_point: str = "serve", sampler: str | None = None, moe_backend: str | None = None,
          disable_hybrid_kv_cache_manager: bool = False, no_async_scheduling: bool = False,
          mem_fraction_static: Fraction = None, free_gpu_memory_fraction: Fraction = None,
          speculative_model: str | None = None, speculative_method: str | None = None,
          num_speculative_tokens: OptInt = None, max_lora_rank: OptInt = None, max_loras: OptInt = None,
          lora_target_modules: Names | None = None, max_cpu_loras: OptInt = None, limit_mm_per_prompt: OptInt = None,
          cpu_offload_bytes: Size = None, kv_offloading_bytes: Size = None, hicache_ratio: Fraction = None,
          lmcache_cpu_bytes: Size = None, gpu: str | None = None, gpu_memory_bytes: Size = None,
          kv_budget_bytes: Budget = None, overhead_bytes: Size = None, non_torch_bytes: Size = None,
          weights_dtype: str | None = None, quantization: str | None = None,
          progress: Callable[[int, int], None] | None = None) -> Sweep:
    """KV-cache sizes over models × tp × pp × kv_dtype [× engine] × max_model_len × batch, as `kvplan sweep`
    answers (with `engine`, each engine's capacity columns on `gpu`). An axis is one value, a list, or the CLI's
    text ("1,2,4", "4k..128k")."""
    from kvplan.workflows.sweep import EngineAxis
    from kvplan.workflows.sweep import sweep as run

    values = locals()
    loaded = models_of(models, revision, dtype)
    axes = {"max_model_len": max_model_len, "batch": batch, "tp": tp, "pp": pp}
    axis: dict[str, Any] = {k: COUNT_AXIS(k, x) if isinstance(x, str) else x for k, x in axes.items()}
    asked = question(sweep, loaded[0], {k: x for k, x in values.items() if k not in (*axes, "kv_dtype")})
    engines = EngineAxis(engines=tuple(engine), settings=asked.settings, memory=asked.memory) if engine else None
    return run(loaded, max_model_lens=axis["max_model_len"], batches=axis["batch"], tps=axis["tp"], pps=axis["pp"],
               kv_dtypes=v.names("kv_dtype", kv_dtype), request=asked.cache, engines=engines, progress=progress)


@documented
@public({"kv_dtype": v.optional(v.names), "engine": v.optional(v.names)})
def compare(models: Sequence[str | ModelConfig], *, kv_dtype: Names | None = None, engine: Names | None = None,
            revision: str | None = None, dtype: str = "auto", tp: Int = 1, pp: Int = 1, dcp: Int = 1,
            max_model_len: Length = None, batch: Int = "1", block_size: OptInt = None, quant_group: Int = 8,
            state_dtype: str = "auto", ssm_state_dtype: str = "auto", max_num_batched_tokens: Length = None,
            max_num_seqs: OptInt = None, enforce_eager: bool = False, gpu_memory_utilization: Fraction = None,
            entry_point: str = "serve", sampler: str | None = None, moe_backend: str | None = None,
            disable_hybrid_kv_cache_manager: bool = False, no_async_scheduling: bool = False,
            mem_fraction_static: Fraction = None, free_gpu_memory_fraction: Fraction = None,
            speculative_model: str | None = None, speculative_method: str | None = None,
            num_speculative_tokens: OptInt = None, max_lora_rank: OptInt = None, max_loras: OptInt = None,
            lora_target_modules: Names | None = None, max_cpu_loras: OptInt = None,
            limit_mm_per_prompt: OptInt = None, cpu_offload_bytes: Size = None, kv_offloading_bytes: Size = None,
            hicache_ratio: Fraction = None, lmcache_cpu_bytes: Size = None, gpu: str | None = None,
            gpu_memory_bytes: Size = None, kv_budget_bytes: Budget = None, overhead_bytes: Size = None,
            non_torch_bytes: Size = None, weights_dtype: str | None = None,
            quantization: str | None = None) -> Comparison:
    """Bytes per token, per sequence and per GPU of several models under one layout, as `kvplan compare` answers
    (one row per model and KV dtype; with `engine`, each engine's capacity on `gpu`)."""
    from kvplan.workflows.compare import compare as run

    values = locals()
    loaded = models_of(models, revision, dtype)
    asked = question(compare, loaded[0], {k: x for k, x in values.items() if k not in ("kv_dtype", "engine")})
    return run(loaded, asked.cache, kv_dtypes=kv_dtype, engines=engine or (), settings=asked.settings,
               memory=asked.memory)


def _log(log: Any, engine: str | None) -> StartupLog:
    """A log's text, a path to it, or a parsed StartupLog."""
    from kvplan.reconcile import StartupLog, parse_log

    if isinstance(log, StartupLog):
        return log
    if isinstance(log, Path):
        try:
            log = log.read_bytes()[: 64 * 1024**2].decode("utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read the log {log}: {exc.strerror or exc}", arg="log") from None
    if not isinstance(log, str):
        raise v.wrong("log", log, "the log's text (str), a pathlib.Path to it, or a StartupLog")
    return parse_log(log, engine)


_LOGGED = ("tp", "pp", "dcp", "dp", "ep", "max_model_len", "block_size")  # what a log may state


@documented
@public({**{k: v.optional(v.integer) for k in ("tp", "pp", "dcp", "dp", "ep")}})
def reconcile(log: str | Path | StartupLog, *, model: str | None = None, engine: str | None = None,
              kv_dtype: str | None = None, tp: OptInt = None, pp: OptInt = None, dcp: OptInt = None,
              dp: OptInt = None, ep: OptInt = None, max_model_len: Length = None, block_size: OptInt = None,
              quant_group: Int = 8, state_dtype: str = "auto", ssm_state_dtype: str = "auto",
              attention: str | None = None, kv_heads: OptInt = None, layer_types: str | None = None,
              window: Length = None, max_num_batched_tokens: Length = None, max_num_seqs: OptInt = None,
              enforce_eager: bool = False, gpu_memory_utilization: Fraction = None, entry_point: str = "serve",
              sampler: str | None = None, moe_backend: str | None = None,
              disable_hybrid_kv_cache_manager: bool = False, no_async_scheduling: bool = False,
              mem_fraction_static: Fraction = None, free_gpu_memory_fraction: Fraction = None,
              speculative_model: str | None = None, speculative_method: str | None = None,
              num_speculative_tokens: OptInt = None, max_lora_rank: OptInt = None, max_loras: OptInt = None,
              lora_target_modules: Names | None = None, max_cpu_loras: OptInt = None,
              limit_mm_per_prompt: OptInt = None, cpu_offload_bytes: Size = None, kv_offloading_bytes: Size = None,
              hicache_ratio: Fraction = None, lmcache_cpu_bytes: Size = None, gpu: str | None = None,
              gpu_memory_bytes: Size = None, kv_budget_bytes: Budget = None, weights_dtype: str | None = None,
              quantization: str | None = None) -> Reconciliation:
    """Every KV number an engine's start-up log prints, recomputed, as `kvplan reconcile` checks it (``.ok``). A
    keyword fills in what the log does not say; one that disagrees with the log is refused. The parallel sizes,
    length and block size default to the log's (None)."""
    from kvplan.engines.settings import settings_from
    from kvplan.formulas.request import cache_request
    from kvplan.planning.request import Memory
    from kvplan.reconcile import Options
    from kvplan.reconcile import reconcile as run

    values = locals()
    given = fields({k: x for k, x in values.items() if k in _defaults() and x != _defaults()[k]})
    logged = {k: given.pop(k) for k in _LOGGED if k in given}
    parts = _split(given)
    options = Options(model=model, engine=engine, kv_dtype=kv_dtype, cache=cache_request(None, **parts[0]),
                      settings=settings_from(parts[1]), memory=Memory(**parts[2]), **logged)
    return run(_log(log, engine), options)


def _defaults() -> dict[str, Any]:
    from kvplan.api.request import defaults

    skip = {"log", "model", "engine", "kv_dtype"}
    return {k: x for k, x in defaults(reconcile.__wrapped__).items() if k not in skip}  # type: ignore[attr-defined]


def _split(given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Question fields -> (cache, settings, memory) fields."""
    from kvplan.planning.request import CACHE_NAMES, MEMORY_NAMES

    if "kv_budget_bytes" in given and not isinstance(given["kv_budget_bytes"], tuple):
        given = {**given, "kv_budget_bytes": (given["kv_budget_bytes"],)}
    cache = {k: x for k, x in given.items() if k in CACHE_NAMES}
    memory = {k: x for k, x in given.items() if k in MEMORY_NAMES}
    return cache, {k: x for k, x in given.items() if k not in cache and k not in memory}, memory
