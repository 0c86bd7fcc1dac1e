"""`kvplan fit`: the setups whose KV cache serves a load, cheapest first.

A setup is ``replicas`` data-parallel copies of one (tp, pp) layout on one GPU type, with one KV
dtype. One replica serves ``floor(requests)`` requests of ``context`` tokens at once, where
``requests`` is what the engine admits for max_model_len = context (vLLM's logged max concurrency,
SGLang's and TRT-LLM's pools divided by one request, transformers' budget divided by one request's
bytes; an engine that would refuse to start serves nobody). The setup needs ``replicas = ceil(concurrency / floor(requests))`` copies and holds
``replicas × tp × pp`` GPUs (vLLM data parallel: ``replicas × dp × tp × pp``), at most ``max_gpus``; with a
price per GPU-hour it costs ``GPUs × price`` per hour. The layouts tried are kvplan.planning.layouts': every TP in a
node that divides the heads × every PP up to the layers, DCP where the engine offers it, and for a model with experts
EP alone and the engine's DP attention + EP (with PP where the engine takes it), on one node or several. Setups are
planned in the order of a bound and skipped where it shows they cannot be shown (kvplan.planning.search).

Ranking (``RANKING``; ``RANKING_BY_GPUS`` without prices): cost per hour (a GPU type without a
price ranks after every priced one), then GPUs, then fewer PP stages (TP stays inside a node, PP crosses nodes), then the more precise
KV dtype (auto before fp8), then headroom (requests served in all), then smaller TP. ``FitResult.why`` says why the winner beats the best layout of the other
family (DP attention or not) on the same GPUs, with the ratio of the two plans' KV tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.dtypes import KvDtypeName
from kvplan.engines import DEFAULT_ENGINE, Engine, get_engine
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.request import Parallel
from kvplan.planning.capacity import CapacityResult, plan_capacity
from kvplan.planning.layouts import Planned, gpus_allowed, limiting_stage, shape_label, shapes, why
from kvplan.planning.prices import gpu_types, price_notes, price_table
from kvplan.planning.request import CapacityRequest, capacity_request
from kvplan.planning.search import Setup, bounded_setups, walk
from kvplan.records import Record
from kvplan.units import cdiv, format_floor

ANY_KV_DTYPES = ("auto", "fp8")
MAX_SHOWN = 12
RANKING_BY_GPUS = ("GPUs, then fewer PP stages, then the more precise KV dtype, then more requests served, "
                   "then smaller TP")
RANKING = f"cost per hour (GPUs × price; unpriced GPU types last), then {RANKING_BY_GPUS}"


class Candidate(Record):
    gpu: str
    tp: int
    pp: int
    kv_dtype: str
    dp: int = 1  # data parallel as the engine runs it (vLLM DP ranks, SGLang DP attention groups)
    ep: int = 1  # expert-parallel ranks
    dcp: int = 1  # decode context parallel over the TP ranks (vLLM)
    nodes: int = 1  # nodes one replica spans
    replicas: int = 0  # 0: one replica cannot hold one request (or the layout is refused)
    requests_per_replica: float = 0.0  # the engine's figure; a replica serves its floor at once
    kv_budget_bytes_per_gpu: int = 0
    kv_tokens: int = 0  # per replica (every KV pool of it: vLLM's DP ranks, SGLang's DP-attention ranks)
    gpus: int = 0  # GPUs per replica as the engine lays it out (0: tp × pp; vLLM data parallel: dp × tp × pp)
    limiting_stage: int | None = None  # the PP stage whose KV runs out first (None: one stage)
    price_per_gpu_hour: float | None = None
    fits: bool = False
    reason: str = ""
    result: CapacityResult | None = field(default=None, compare=False, repr=False)  # its capacity answer
    launch: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # multi-node flags

    @property
    def shape(self) -> Parallel:
        return Parallel(tp=self.tp, pp=self.pp, dp=self.dp, ep=self.ep, dcp=self.dcp)

    @property
    def label(self) -> str:
        return shape_label(self.shape)

    @property
    def pools(self) -> int:
        return self.result.plan.pools if self.result is not None else 1

    @property
    def gpus_per_replica(self) -> int:
        return self.gpus or self.tp * self.pp

    @property
    def num_gpus(self) -> int:
        return max(self.replicas, 1) * self.gpus_per_replica

    @property
    def requests(self) -> int:
        """Requests of the full context the whole setup serves at once."""
        return self.replicas * int(self.requests_per_replica)

    @property
    def cost_per_hour(self) -> float | None:
        return None if self.price_per_gpu_hour is None else round(self.num_gpus * self.price_per_gpu_hour, 6)


class FitResult(Record):
    model_id: str
    engine: str
    gpus: tuple[str, ...]  # catalog names, in the order asked
    context: int
    concurrency: int
    gpus_per_node: int
    max_gpus: int
    max_replicas: int | None
    best: Candidate | None
    candidates: tuple[Candidate, ...]  # ranked: setups that serve the load first, at most MAX_SHOWN
    num_evaluated: int = 0  # setups planned
    num_skipped: int = 0  # setups whose bound showed they could not be shown (kvplan.planning.search)
    ranking: str = RANKING
    notes: tuple[str, ...] = ()
    why: str | None = None  # the winner against the best layout of the other family on the same GPUs
    considered: tuple[str, ...] = ()  # every layout searched, with the nodes of one replica
    catalog: bool = False  # no GPU was named: every GPU type of the catalog was searched
    disaggregated: Any = None  # fit(disaggregated=True): planning.disaggregated.Disaggregated (that module imports this)

    @property
    def verdict(self) -> str:
        """"fits" (a setup serves the load) or "refuses" (none does; the closest are the candidates)."""
        return "fits" if self.best is not None else "refuses"

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(n.removeprefix("warning: ") for n in self.notes if n.startswith("warning:"))

    def raise_for_refusal(self) -> FitResult:
        """This answer, or ``Refused`` when no setup serves the load."""
        if self.best is None:
            from kvplan.errors import Refused

            raise Refused(f"no setup of {self.engine} serves {self.concurrency} requests of {self.context:,} tokens "
                          f"of {self.model_id} on {', '.join(self.gpus)}", self)
        return self


class Load(Record):
    """What is asked, and the limits a setup must stay within."""

    context: int
    concurrency: int
    max_gpus: int
    max_replicas: int | None = None


def replicate(c: Candidate, load: Load) -> Candidate:
    """Replicas needed for the load: ceil(concurrency / floor(requests per replica)), within the limits."""
    per_replica = int(c.requests_per_replica)
    if per_replica < 1:
        return replace(c, reason=f"one {load.context:,}-token request does not fit "
                                 f"({format_floor(c.requests_per_replica)} per replica)")
    replicas = cdiv(load.concurrency, per_replica)
    limit = replicas if load.max_replicas is None else load.max_replicas
    fitted = replace(c, replicas=replicas)
    if replicas > limit:
        return replace(c, replicas=limit, reason=f"{limit} replica{'s' * (limit != 1)} serve {limit * per_replica:,} < "
                                                 f"{load.concurrency:,} requests")
    if fitted.num_gpus > load.max_gpus:
        return replace(fitted, reason=f"{replicas} replica{'s' * (replicas != 1)} need{'s' * (replicas == 1)} "
                                      f"{fitted.num_gpus:,} GPUs, more than the {load.max_gpus:,} allowed")
    return replace(fitted, fits=True)


def _try(question: CapacityRequest, profile: Engine, load: Load, price: float | None, gpus_per_node: int) -> Candidate:
    """One layout on one GPU type: the engine's capacity for max_model_len = context, then the replicas."""
    cache = question.cache
    gpus = profile.replica_gpus(cache.parallel)
    base = Candidate(gpu=question.memory.gpu or "", tp=cache.tp, pp=cache.pp, dp=cache.dp, ep=cache.ep, dcp=cache.dcp,
                     kv_dtype=cache.kv_dtype, nodes=cdiv(gpus, gpus_per_node), price_per_gpu_hour=price,
                     launch=profile.multi_node(cache.parallel, gpus_per_node), gpus=gpus)
    try:
        result = plan_capacity(question, profile)
    except KvplanError as exc:  # this layout cannot run (tp not dividing the heads, the engine refusing ...)
        return replace(base, reason=str(exc))
    plan = result.plan
    base = replace(base, kv_budget_bytes_per_gpu=min(result.kv_budget_bytes_per_gpu),
                   kv_tokens=plan.kv_tokens * plan.pools, requests_per_replica=plan.requests_at_max_len,
                   gpus=plan.gpus or base.gpus, result=result, limiting_stage=limiting_stage(result))
    if plan.refusal is not None:  # the engine would not start: this setup serves nobody
        return replace(base, reason=f"the engine refuses: {plan.refusal.message}")
    return replicate(base, load)


def rank_key(c: Candidate, dtypes: Sequence[str]) -> tuple[Any, ...]:
    """RANKING as a sort key (setups that serve the load)."""
    cost = c.cost_per_hour
    return cost is None, cost or 0.0, c.num_gpus, c.pp, dtypes.index(c.kv_dtype), -c.requests, c.tp


def _check(question: CapacityRequest, load: Load, gpus_per_node: int) -> None:
    for name, value in (("concurrency", load.concurrency), ("gpus_per_node", gpus_per_node),
                        ("max_gpus", load.max_gpus),
                        ("max_replicas", 1 if load.max_replicas is None else load.max_replicas)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError(f"{name} must be positive, got {value}", arg=name)
    model = question.model
    if question.cache.max_model_len is None:
        raise InputError("fit needs max_model_len: the tokens of each request", arg="max_model_len")
    if model.max_model_len and load.context > model.max_model_len:
        raise InputError(f"max_model_len {load.context:,} exceeds {model.model_id}'s maximum length "
                         f"{model.max_model_len:,}", arg="max_model_len")


def _kv_dtypes(kv_dtype: str | Sequence[str]) -> tuple[str, ...]:
    names = kv_dtype.split(",") if isinstance(kv_dtype, str) else list(kv_dtype)
    out = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not out:
        raise InputError("kv_dtype names no KV dtype", arg="kv_dtype")
    if len(out) > 1 and "any" in (n.lower() for n in out):
        raise InputError(f"kv_dtype {','.join(out)!r}: any (auto, then fp8) stands alone; or list the dtypes",
                         arg="kv_dtype")
    if [n.lower() for n in out] == ["any"]:
        return ANY_KV_DTYPES
    return tuple(dict.fromkeys(KvDtypeName(n) for n in out))  # an unknown name is refused here, before planning


def fit(model: CapacityRequest | ModelConfig | str, *, concurrency: int, gpu: str | Sequence[str] | None = None,
        engine: str = DEFAULT_ENGINE, kv_dtype: str | Sequence[str] | None = None, gpus_per_node: int = 8,
        max_gpus: int | None = None, max_replicas: int | None = None, prices: Mapping[str, float] | None = None,
        nodes: int | None = None, progress: Callable[[int, int], None] | None = None, **options: Any) -> FitResult:
    """Every (GPU type, layout, KV dtype) with the replicas it needs to serve `concurrency` requests of the
    request's max_model_len; ranked by RANKING. `gpu`: one GPU type or several (default: every GPU of the catalog;
    H100 with gpu_memory_bytes). The question is a CapacityRequest, or a model and its fields as
    keywords (everything but the GPU, the layout and KV dtype is the same in every setup). `kv_dtype`: one, a list
    (tried in turn; earlier is preferred on a tie), or "any" (auto, then fp8); default: the request's. `nodes`:
    the most nodes of `gpus_per_node` GPUs in all (default 8, or max_gpus's)."""
    question, price = capacity_request(model, **options), price_table(prices)
    gpus, catalog = gpu_types(gpu, one=question.memory.gpu_memory_bytes is not None)
    dtypes = _kv_dtypes(question.cache.kv_dtype if kv_dtype is None else kv_dtype)
    load = Load(context=question.cache.max_model_len or 0, concurrency=concurrency,
                max_gpus=gpus_allowed(max_gpus, nodes, gpus_per_node), max_replicas=max_replicas)
    _check(question, load, gpus_per_node)
    if question.memory.gpu_memory_bytes is not None and len(gpus) > 1:
        raise InputError("gpu_memory_bytes overrides one GPU type's memory; name one gpu with it",
                         arg=("gpu_memory_bytes", "gpu"))
    profile = get_engine(engine)
    space = shapes(profile, question.model, gpus_per_node, load.max_gpus)
    found, skipped = _search(question, profile, load, (gpus, dtypes, price, space), gpus_per_node, progress)
    good = sorted((c for c in found if c.fits), key=lambda c: rank_key(c, dtypes))
    bad = sorted((c for c in found if not c.fits), key=lambda c: (-c.requests_per_replica, c.gpus_per_replica))
    return FitResult(model_id=question.model.model_id, engine=engine, gpus=gpus, context=load.context,
                     concurrency=concurrency, gpus_per_node=gpus_per_node, max_gpus=load.max_gpus,
                     max_replicas=max_replicas, best=good[0] if good else None, candidates=tuple((good + bad)[:MAX_SHOWN]),
                     num_evaluated=len(found), num_skipped=skipped, ranking=RANKING if price else RANKING_BY_GPUS,
                     notes=_notes((gpus, price, catalog), load, bool(good), estimated=question.memory.overhead_bytes is None),
                     catalog=catalog,
                     why=_why(good[0], [*good, *bad]) if good else None,
                     considered=tuple(dict.fromkeys(f"{shape_label(s)} on {n} node{'s' * (n > 1)}" for s in space
                                                    for n in [cdiv(profile.replica_gpus(s), gpus_per_node)])))


Asked = tuple[Sequence[str], Sequence[str], Mapping[str, float], Sequence[Parallel]]


def _search(question: CapacityRequest, profile: Engine, load: Load, asked: Asked, gpus_per_node: int,
            progress: Callable[[int, int], None] | None) -> tuple[list[Candidate], int]:
    """Every GPU type × layout × KV dtype, walked in the order of its bound (kvplan.planning.search); a setup
    that cannot be shown is skipped, but the layouts of the other family on the winner's GPUs are planned (`why`).
    Returns the candidates planned (in the space's order) and how many were skipped."""
    _, dtypes, price, _ = asked
    setups = bounded_setups(question, profile, asked, (load.context, load.concurrency, load.max_gpus, load.max_replicas))
    done = [0]

    def plan(s: Setup) -> Candidate:
        asking = question.on_gpu(s.gpu).with_cache(tp=s.shape.tp, pp=s.shape.pp, dp=s.shape.dp, ep=s.shape.ep,
                                                   dcp=s.shape.dcp, kv_dtype=s.kv_dtype)
        done[0] += 1
        if progress:
            progress(done[0], len(setups))
        return _try(asking, profile, load, price.get(s.gpu), gpus_per_node)

    pairs, skipped = walk(setups, plan, lambda c: rank_key(c, dtypes)[:6], MAX_SHOWN)
    best = min((c for _, c in pairs if c.fits), key=lambda c: rank_key(c, dtypes), default=None)
    if best is not None:  # `why` compares the winner with the first of the other family on the same GPUs
        pairs += [(s.place, plan(s)) for s in skipped if s.gpu == best.gpu and s.kv_dtype == best.kv_dtype and
                  s.gpus == best.gpus_per_replica and (s.shape.dp > 1) != (best.dp > 1)]
    pairs.sort(key=lambda p: p[0])
    if progress:
        progress(len(setups), len(setups))  # the setups the bound skipped are done too
    return [c for _, c in pairs], len(setups) - len(pairs)


def _why(best: Candidate, ranked: Sequence[Candidate]) -> str | None:
    def planned(c: Candidate) -> Planned:
        return Planned(shape=c.shape, gpu=c.gpu, kv_dtype=c.kv_dtype, gpus=c.gpus_per_replica, kv_tokens=c.kv_tokens)

    return why(planned(best), [planned(c) for c in ranked if c.result is not None and c.result.plan.refusal is None])


def _notes(asked: tuple[Sequence[str], Mapping[str, float], bool], load: Load, any_fits: bool,
           estimated: bool) -> tuple[str, ...]:
    notes = ["KV budgets subtract kvplan's overhead estimate from each GPU; give the measured overhead for exact "
             "numbers"] if estimated else []
    notes += price_notes(*asked)
    if not any_fits:
        n = load.max_replicas
        replicas = f" and {n} replica{'s' * (n != 1)}" if n else ""
        notes.append(f"nothing up to {load.max_gpus:,} GPUs{replicas} serves {load.concurrency:,} × "
                     f"{load.context:,} tokens; the closest setups are shown")
    return tuple(notes)
