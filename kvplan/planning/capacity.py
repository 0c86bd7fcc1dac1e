"""Capacity planning: GPU memory -> KV budget per GPU -> an engine's blocks, tokens and concurrency.

``capacity()`` is the library entry point. It builds the per-GPU layout once, through the same
``build_layout`` that ``kvplan size`` uses, with the engine's ``LayoutPolicy``; takes the budget
(``budget.kv_budget``: given, or estimated the engine's way); and hands both to the engine's
``plan``. ``capacity_all`` asks every engine (or those named) and reports a refusal instead of failing
them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.dtypes import DEFAULT_QUANT_GROUP
from kvplan.engines import ENGINE_NAMES, Engine, EnginePlan, Request, Settings, get_engine
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.layers import Overrides
from kvplan.formulas.layout import Layout, build_layout
from kvplan.formulas.sizing import FALLBACK_MAX_MODEL_LEN
from kvplan.planning.budget import Budget, Memory, Overhead, kv_budget, no_budget_warning


@dataclass(frozen=True, kw_only=True)
class CapacityResult:
    engine: str
    model: ModelConfig
    gpu: str | None
    gpu_memory_bytes: int | None
    tp: int
    pp: int
    dcp: int
    max_model_len: int
    weights_bytes_per_gpu: int | None
    overhead: Overhead | None
    kv_budget_bytes_per_gpu: tuple[int, ...]  # one per PP stage
    plan: EnginePlan
    layout: Layout | None = None  # the engine's per-GPU layout (None: the engine refused the request)
    budget_lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None


def engine_layout(profile: Engine, request: Request) -> Layout:
    """The one layout an engine plans on: build_layout with the engine's policy."""
    if request.dcp > 1 and not profile.supports_dcp:
        raise InputError(f"dcp is a vLLM option; {profile.version} has no decode context parallel here", arg="dcp")
    return build_layout(request.model, tp=request.tp, pp=request.pp, dcp=request.dcp, kv_dtype=request.kv_dtype,
                        block_size=request.settings.block_size or 0, quant_group=request.quant_group,
                        overrides=request.overrides, state_dtype=request.state_dtype, policy=profile.policy(request))


def plan_request(request: Request, budgets_per_stage: tuple[int, ...], engine: str = "vllm") -> EnginePlan:
    """An engine's plan for a request and a given budget (one value, or one per PP stage)."""
    profile = get_engine(engine)
    budgets = budgets_per_stage if len(budgets_per_stage) == request.pp else budgets_per_stage * request.pp
    return profile.plan(request, engine_layout(profile, request), budgets)


def empty_plan(engine: str, version: str, settings: Settings) -> EnginePlan:
    """The plan of an engine that got no memory (or refused): zeros, as the engine would log."""
    return EnginePlan(engine=engine, version=version, kv_dtype="-", block_size=settings.block_size or 0,
                      page_bytes=0, num_blocks=0, kv_tokens=0, max_concurrency=0.0 if engine == "vllm" else None,
                      requests_at_max_len=0.0, reserve_bytes_per_request=0, steady_bytes_per_request=0, groups=())


def capacity(model: ModelConfig | str, *, engine: str = "vllm", gpu: str | None = None,
             gpu_memory_bytes: int | None = None, tp: int = 1, pp: int = 1, dcp: int = 1, kv_dtype: str = "auto",
             max_model_len: int | None = None, kv_budget_bytes: tuple[int, ...] | None = None,
             overhead_bytes: int | None = None, weights_dtype: str | None = None, settings: Settings | None = None,
             overrides: Overrides | None = None, quant_group: int = DEFAULT_QUANT_GROUP,
             state_dtype: str = "auto") -> CapacityResult:
    """KV capacity of `model` under `engine` on one GPU type (per GPU; PP stages take the min)."""
    model, settings, profile = as_model(model), settings or Settings(), get_engine(engine)
    request = Request(model=model, tp=tp, pp=pp, dcp=dcp, kv_dtype=kv_dtype, settings=settings, overrides=overrides,
                      max_model_len=max_model_len or model.max_model_len or FALLBACK_MAX_MODEL_LEN,
                      quant_group=quant_group, state_dtype=state_dtype)
    layout = engine_layout(profile, request)
    budget = kv_budget(profile, model, tp, pp, settings, Memory(
        gpu=gpu, gpu_memory_bytes=gpu_memory_bytes, kv_budget_bytes=kv_budget_bytes, overhead_bytes=overhead_bytes,
        weights_dtype=weights_dtype))
    return _result(profile, replace(request, gpu_name=budget.gpu), layout, budget)


def _result(profile: Engine, request: Request, layout: Layout, budget: Budget) -> CapacityResult:
    base = CapacityResult(
        engine=profile.name, model=request.model, gpu=budget.gpu, gpu_memory_bytes=budget.gpu_memory_bytes,
        tp=request.tp, pp=request.pp, dcp=request.dcp, max_model_len=request.max_model_len,
        weights_bytes_per_gpu=budget.weights_bytes_per_gpu, overhead=budget.overhead,
        kv_budget_bytes_per_gpu=budget.per_stage, plan=empty_plan(profile.name, profile.version, request.settings),
        layout=layout, budget_lines=budget.lines, notes=budget.notes)
    if min(budget.per_stage) <= 0:
        warning = no_budget_warning(profile, request.model, budget, request.tp, request.pp, request.settings)
        return replace(base, notes=(*budget.notes, warning))
    plan = profile.plan(request, layout, budget.per_stage)
    notes = list(budget.notes)
    if plan.requests_at_max_len < 1:
        notes.append(f"warning: one {request.max_model_len:,}-token request does not fit under {profile.name}; "
                     f"the cache holds {plan.kv_tokens:,} tokens")
    return replace(base, plan=plan, notes=(*notes, *request.model.notes))


def capacity_all(model: ModelConfig | str, *, tp: int = 1, pp: int = 1, dcp: int = 1,
                 max_model_len: int | None = None, settings: Settings | None = None,
                 engines: Sequence[str] = ENGINE_NAMES, **kwargs: object) -> list[CapacityResult]:
    """Every engine (of `engines`) side by side; one that refuses reports its error instead of failing all."""
    model, settings = as_model(model), settings or Settings()
    out = []
    for name in engines:
        try:
            out.append(capacity(model, engine=name, tp=tp, pp=pp, dcp=dcp, max_model_len=max_model_len,
                                settings=settings, **kwargs))  # type: ignore[arg-type]
        except KvplanError as exc:
            out.append(CapacityResult(
                engine=name, model=model, gpu=None, gpu_memory_bytes=None, tp=tp, pp=pp, dcp=dcp,
                max_model_len=max_model_len or model.max_model_len or FALLBACK_MAX_MODEL_LEN,
                weights_bytes_per_gpu=None, overhead=None, kv_budget_bytes_per_gpu=(0,),
                plan=empty_plan(name, get_engine(name).version, settings), notes=(f"error: {exc}",), error=str(exc)))
    return out
