"""Capacity planning: GPU memory -> KV budget per GPU -> an engine's blocks, tokens and concurrency.

``capacity()`` is the library entry point. It fills in the engine release's defaults for the GPU
(``Engine.resolve``), builds the per-GPU layout once, through the same ``build_layout`` that ``kvplan
size`` uses, with the engine's ``LayoutPolicy``; takes the budget (``budget.kv_budget``: given, or
built term by term the release's way); and hands both to the engine's ``plan``. An engine that would
refuse to start still answers: the plan carries its numbers and the ``Refusal``. ``capacity_all``
asks the newest release of every engine (or those named) and reports an error instead of failing
them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.dtypes import DEFAULT_QUANT_GROUP
from kvplan.engines import ENGINE_NAMES, BudgetTerm, Engine, EnginePlan, Refusal, Request, Settings, get_engine
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.layers import Overrides
from kvplan.formulas.layout import Layout, build_layout
from kvplan.formulas.sizing import FALLBACK_MAX_MODEL_LEN
from kvplan.planning import extras
from kvplan.planning.budget import Budget, Memory, Overhead, device, kv_budget, no_budget_warning
from kvplan.planning.extras import NO_EXTRAS, Extras
from kvplan.planning.roofline import DecodeFloor, decode_floor


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
    budget_terms: tuple[BudgetTerm, ...] = ()  # what was subtracted, of the stage with the smallest budget
    budget_rule: tuple[str, ...] = ()  # the engine's arithmetic on those terms
    notes: tuple[str, ...] = ()
    error: str | None = None
    settings: Settings | None = None  # the engine's knobs with the release's defaults filled in
    decode_floor: DecodeFloor | None = None  # memory-bound lower bound on a decode step of the admitted batch
    extras: Extras = NO_EXTRAS  # speculative decoding, LoRA, encoder cache, host tier

    @property
    def refusal(self) -> Refusal | None:
        """The engine's "no" (it would not start with this memory); the numbers are still the answer."""
        return self.plan.refusal


def engine_layout(profile: Engine, request: Request) -> Layout:
    """The one layout an engine plans on: build_layout with the engine's policy."""
    if request.dcp > 1 and not profile.supports_dcp:
        raise InputError(f"dcp is a vLLM option (0.11 on); {profile.version} has no decode context parallel", arg="dcp")
    return build_layout(request.model, tp=request.tp, pp=request.pp, dcp=request.dcp, kv_dtype=request.kv_dtype,
                        block_size=request.settings.block_size or 0, quant_group=request.quant_group,
                        overrides=request.overrides, state_dtype=request.state_dtype,
                        ssm_state_dtype=request.ssm_state_dtype, policy=profile.policy(request))


def plan_request(request: Request, budgets_per_stage: tuple[int, ...], engine: str = "vllm") -> EnginePlan:
    """An engine's plan for a request and a given budget (one value, or one per PP stage)."""
    profile = get_engine(engine)
    request = profile.resolve(request)
    budgets = budgets_per_stage if len(budgets_per_stage) == request.pp else budgets_per_stage * request.pp
    return profile.plan(request, engine_layout(profile, request), budgets)


def empty_plan(engine: str, version: str, settings: Settings) -> EnginePlan:
    """The plan of an engine that got no memory (or failed): zeros, as the engine would log."""
    return EnginePlan(engine=engine, version=version, kv_dtype="-", block_size=settings.block_size or 0,
                      page_bytes=0, num_blocks=0, kv_tokens=0, max_concurrency=0.0 if engine == "vllm" else None,
                      requests_at_max_len=0.0, reserve_bytes_per_request=0, steady_bytes_per_request=0, groups=())


def capacity(model: ModelConfig | str, *, engine: str = "vllm", gpu: str | None = None,
             gpu_memory_bytes: int | None = None, tp: int = 1, pp: int = 1, dcp: int = 1, kv_dtype: str = "auto",
             max_model_len: int | None = None, kv_budget_bytes: tuple[int, ...] | None = None,
             overhead_bytes: int | None = None, non_torch_bytes: int | None = None, weights_dtype: str | None = None,
             settings: Settings | None = None, overrides: Overrides | None = None,
             quant_group: int = DEFAULT_QUANT_GROUP, state_dtype: str = "auto",
             ssm_state_dtype: str = "auto") -> CapacityResult:
    """KV capacity of `model` under `engine` (`vllm`, `vllm@0.11`, ...) on one GPU type (per GPU; PP stages
    take the min). A refusal is part of the answer (``CapacityResult.refusal``), not an exception."""
    model, settings, profile = as_model(model), settings or Settings(), get_engine(engine)
    memory = Memory(gpu=gpu, gpu_memory_bytes=gpu_memory_bytes, kv_budget_bytes=kv_budget_bytes,
                    overhead_bytes=overhead_bytes, non_torch_bytes=non_torch_bytes, weights_dtype=weights_dtype)
    gpu_device, _ = device(memory, needed=kv_budget_bytes is None)
    asked = Request(model=model, tp=tp, pp=pp, dcp=dcp, kv_dtype=kv_dtype, settings=settings, overrides=overrides,
                    max_model_len=max_model_len or model.max_model_len or FALLBACK_MAX_MODEL_LEN,
                    quant_group=quant_group, state_dtype=state_dtype, ssm_state_dtype=ssm_state_dtype,
                    device=gpu_device,
                    gpu_name=gpu_device.name if gpu_device else None)
    request = profile.resolve(asked)
    layout = engine_layout(profile, request)
    drafter = extras.draft(request, layout, profile.policy(request))
    if drafter is not None:
        asked = replace(asked, draft=drafter)
        request = profile.resolve(asked)
    budget = kv_budget(profile, request, memory)
    result = _result(profile, (asked, request), layout, budget, memory)
    return replace(result, extras=extras.summarize(profile, request, result.plan, layout, result.budget_terms))


def _result(profile: Engine, requests: tuple[Request, Request], layout: Layout, budget: Budget,
            memory: Memory) -> CapacityResult:
    asked, request = requests
    base = CapacityResult(
        engine=profile.name, model=request.model, gpu=budget.gpu, gpu_memory_bytes=budget.gpu_memory_bytes,
        tp=request.tp, pp=request.pp, dcp=request.dcp, max_model_len=request.max_model_len,
        weights_bytes_per_gpu=budget.weights_bytes_per_gpu, overhead=budget.overhead,
        kv_budget_bytes_per_gpu=budget.per_stage, layout=layout, budget_lines=budget.lines,
        budget_terms=budget.terms, budget_rule=budget.rule, notes=budget.notes, settings=request.settings,
        plan=empty_plan(profile.name, profile.version, request.settings))
    if min(budget.per_stage) <= 0:  # the engine finds no memory for a single block
        return replace(base, plan=replace(base.plan, refusal=profile.no_memory(request)),
                       notes=(*budget.notes, no_budget_warning(profile, asked, budget, memory)))
    plan = profile.plan(request, layout, budget.per_stage)
    notes = list(budget.notes)
    if plan.requests_at_max_len < 1 and plan.refusal is None:
        notes.append(f"warning: one {request.max_model_len:,}-token request does not fit under {profile.name}; "
                     f"the cache holds {plan.kv_tokens:,} tokens")
    return replace(base, plan=plan, notes=(*notes, *request.model.notes),
                   decode_floor=decode_floor(plan, budget.gpu, budget.weights_bytes_per_gpu))


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
