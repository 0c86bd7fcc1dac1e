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
from dataclasses import replace
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.engines import (
    DEFAULT_ENGINE,
    ENGINE_NAMES,
    BudgetTerm,
    Engine,
    EnginePlan,
    Refusal,
    Request,
    Resolved,
    Settings,
    get_engine,
)
from kvplan.errors import CapacityError, InputError, KvplanError, Refused
from kvplan.formulas.layout import Layout, build_layout
from kvplan.formulas.request import CacheRequest
from kvplan.planning import extras
from kvplan.planning.budget import Budget, Overhead, device, kv_budget, no_budget_warning
from kvplan.planning.extras import NO_EXTRAS, Extras
from kvplan.planning.request import CapacityRequest, Memory, capacity_request
from kvplan.planning.roofline import DecodeFloor, decode_floor
from kvplan.planning.verdict import estimate_error_bytes, margin_bytes, uncertain_note, within_estimate
from kvplan.planning.weights.formats import fp8_method
from kvplan.records import Record


class CapacityResult(Record):
    """What `kvplan capacity` answers: the KV budget per GPU and how many tokens and requests it holds."""

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
    cache: CacheRequest | None = None  # the cache asked (max_model_len None: the model's, max_model_len above)
    decode_floor: DecodeFloor | None = None  # memory-bound lower bound on a decode step of the admitted batch
    extras: Extras = NO_EXTRAS  # speculative decoding, LoRA, encoder cache, host tier
    asked: Settings | None = None  # the knobs as asked (None: the release's default), for the launch command
    memory: Memory | None = None  # the memory question as asked (a KV budget given, the quantization)
    verdict_margin_bytes: int | None = None  # how far the budget is from a refusal (kvplan.planning.verdict); < 0:
    # the engine refuses, short by that much; None: no plan
    estimate_error_bytes: int = 0  # the estimated budget terms added up: how far off the budget may be

    @property
    def refusal(self) -> Refusal | None:
        """The engine's "no" (it would not start with this memory); the numbers are still the answer."""
        return self.plan.refusal

    @property
    def verdict(self) -> str:
        """"starts", "refuses" (the engine would not start with this memory) or "error" (no answer)."""
        return "error" if self.error is not None else "refuses" if self.refusal is not None else "starts"

    @property
    def warnings(self) -> tuple[str, ...]:
        """The notes that warn (each without its "warning: " prefix)."""
        return tuple(n.removeprefix("warning: ") for n in self.notes if n.startswith("warning:"))

    def raise_for_refusal(self) -> CapacityResult:
        """This answer, or ``Refused`` (a CapacityError) when the engine would refuse, ``CapacityError`` when
        there is no answer: for a script that wants an exception."""
        if self.error is not None:
            raise CapacityError(f"{self.engine}: {self.error}")
        if self.refusal is not None:
            raise Refused(f"{self.engine} refuses to start: {self.refusal.message}", self)
        return self

    @property
    def within_estimate(self) -> bool:
        """The verdict (starts or refuses) is closer than the estimated terms add up to: they could turn it."""
        return within_estimate(self.verdict_margin_bytes, self.estimate_error_bytes)


def engine_layout(profile: Engine, request: Request) -> Layout:
    """The one layout an engine plans on: build_layout with the engine's policy, unpaged (the engine pages it), once
    the engine has said what it refuses before it (its layout refusals, a release's FP8 block check)."""
    profile.check_layout(request)
    blocks = profile.fp8_blocks(request)
    if blocks is not None and fp8_method(request.model):  # quant_checks imported for those only
        from kvplan.planning.quant_checks import fp8_block_refusal

        refused = fp8_block_refusal(request.model, request.tp, blocks.merged_relaxed, expert_tp=blocks.expert_tp,
                                    moe_refine=blocks.moe_refine)
        if refused:
            raise InputError(f"{refused} ({profile.version}, {blocks.source})")
    return build_layout(request.model, request.cache, profile.policy(request), unpaged=True)


def plan_request(request: Request, budgets_per_stage: tuple[int, ...], engine: str = DEFAULT_ENGINE) -> EnginePlan:
    """An engine's plan for a request and a given budget (one value, or one per PP stage)."""
    profile = get_engine(engine)
    resolved = profile.resolve(request)
    budgets = budgets_per_stage if len(budgets_per_stage) == resolved.pp else budgets_per_stage * resolved.pp
    return profile.plan(resolved, engine_layout(profile, resolved), budgets)


def capacity(model: CapacityRequest | ModelConfig | str, *, engine: str = DEFAULT_ENGINE,
             **options: Any) -> CapacityResult:
    """KV capacity of a model under `engine` (`vllm`, `vllm@0.11`, ...) on one GPU type (per GPU; PP stages
    take the min). The question is a CapacityRequest, or a model and the request's fields as keywords
    (``capacity("Qwen/Qwen3-8B", gpu="H100", tp=2, gpu_memory_utilization=0.9)``). A refusal is part of the
    answer (``CapacityResult.refusal``), not an exception."""
    return plan_capacity(capacity_request(model, **options), get_engine(engine))


def plan_capacity(question: CapacityRequest, profile: Engine, *, hold_budget: bool = True) -> CapacityResult:
    """The engine's answer to one question, resolved once (its drafter asked before, its layers laid out after the
    layout). A given KV budget is held against the GPU (``given_budget``) unless `hold_budget` is False (reconcile:
    a logged budget the engine did hold)."""
    memory = question.memory
    gpu_device, _ = device(memory, needed=memory.kv_budget_bytes is None)
    asked = Request(model=question.model, cache=question.cache, settings=question.settings, device=gpu_device,
                    asked=question.settings,
                    draft=extras.drafted(question.model, question.settings, question.cache.tp))
    request = profile.resolve(asked)
    layout = engine_layout(profile, request)
    request = extras.with_draft_layers(request, layout, profile.policy(request))
    budget = kv_budget(profile, request, memory)
    if memory.kv_budget_bytes is not None and hold_budget:
        from kvplan.planning import given_budget  # a budget given: held against the GPU

        lines, refused, held = given_budget.check(profile, request, memory, budget.per_stage)
        budget = replace(budget, lines=(*budget.lines, *lines), refusal=refused,
                         held=(-held.over_bytes, held.estimated_bytes) if held else None)
    result = _result(profile, (replace(asked, draft=request.draft), request), layout, budget, memory)
    found = extras.summarize(profile, request, result.plan, layout, result.budget_terms,
                             node=(result.gpu, memory.host_memory_bytes))
    return host_refusal(replace(result, extras=found))


def host_refusal(result: CapacityResult) -> CapacityResult:
    """A node that cannot hold what the replica pins in host memory refuses it (where the GPU did not)."""
    host = result.extras.host_memory
    if host is None or host.refusal is None or result.plan.refusal is not None:
        return result
    return replace(result, plan=replace(result.plan, refusal=Refusal(message=host.refusal)))


def _result(profile: Engine, requests: tuple[Request, Resolved], layout: Layout, budget: Budget,
            memory: Memory) -> CapacityResult:
    asked, request = requests
    # the fields every answer shares; each answer is built once with its own (fit builds one per setup it plans)
    common: dict[str, Any] = dict(
        engine=profile.name, model=request.model, gpu=budget.gpu, gpu_memory_bytes=budget.gpu_memory_bytes,
        tp=request.tp, pp=request.pp, dcp=request.dcp, max_model_len=request.max_model_len,
        weights_bytes_per_gpu=budget.weights_bytes_per_gpu, overhead=budget.overhead,
        kv_budget_bytes_per_gpu=budget.per_stage, layout=layout, budget_lines=budget.lines,
        budget_terms=budget.terms, budget_rule=budget.rule, settings=request.settings,
        cache=request.cache, asked=asked.settings, memory=memory)
    if min(budget.per_stage) <= 0:  # the engine finds no memory for a single block
        margin, error = min(budget.per_stage), estimate_error_bytes(budget.terms)
        return CapacityResult(**common, plan=replace(profile.empty_plan(request.cache),
                                                     refusal=profile.no_memory(request)),
                              notes=(*budget.notes, no_budget_warning(profile, asked, budget, memory),
                                     *uncertain_note(margin, error, refused=True)),
                              verdict_margin_bytes=margin, estimate_error_bytes=error)
    plan = profile.plan(request, layout, budget.per_stage)
    after = budget.refusal or (budget.after_kv.refusal if budget.after_kv is not None else None)
    if plan.refusal is None and after is not None:
        plan = replace(plan, refusal=after, log_lines=(*plan.log_lines, after.message))
    notes = list(budget.notes)
    # the binding constraint with its own error: the start on the budget (its estimated terms), or a given budget
    # held against the GPU (what of the resident bytes is estimated)
    bounds = [(margin_bytes(profile.start_check, plan, budget.per_stage, budget.after_kv),
               estimate_error_bytes(budget.terms)),
              *((budget.held,) if budget.held else ())]
    margin, error = min(bounds)
    notes += uncertain_note(margin, error, refused=plan.refusal is not None)
    if plan.requests_at_max_len < 1 and plan.refusal is None:
        notes.append(f"warning: one {request.max_model_len:,}-token request does not fit under {profile.name}; "
                     f"the cache holds {plan.kv_tokens:,} tokens")
    return CapacityResult(**common, plan=plan, notes=(*notes, *request.model.notes),
                          decode_floor=decode_floor(plan, budget.gpu, budget.weights_bytes_per_gpu),
                          verdict_margin_bytes=margin, estimate_error_bytes=error)


def capacity_all(model: CapacityRequest | ModelConfig | str, *, engines: Sequence[str] = ENGINE_NAMES,
                 **options: Any) -> list[CapacityResult]:
    """Every engine (of `engines`) side by side; one that refuses reports its error instead of failing all."""
    question = capacity_request(model, **options)
    out = []
    for name in engines:
        try:
            out.append(plan_capacity(question, get_engine(name)))
        except KvplanError as exc:
            out.append(failed(question, name, exc))
    return out


def failed(question: CapacityRequest, engine: str, exc: KvplanError) -> CapacityResult:
    """An engine's error as an answer (capacity_all, the report)."""
    cache = question.cache
    return CapacityResult(engine=engine, model=question.model, gpu=None, gpu_memory_bytes=None, tp=cache.tp,
                          pp=cache.pp, dcp=cache.dcp, max_model_len=question.max_model_len, weights_bytes_per_gpu=None,
                          overhead=None, kv_budget_bytes_per_gpu=(0,), plan=get_engine(engine).empty_plan(cache),
                          notes=(f"error: {exc}",), error=str(exc), cache=cache)
