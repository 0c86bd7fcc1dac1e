"""How `kvplan fit` walks its space without planning every setup: a bound per setup, planned in the bound's order,
skipped when the bound shows it cannot be among the setups shown.

A replica of G GPUs of M bytes each holds every weight of the model at least once (tensor, pipeline and expert
parallel split them, data parallel and replicated heads only copy them), so its KV memory is at most G × M − W, W the
model's weights as stored; G × ⌈f × M⌉ − W where the engine cuts its budget from a fraction f of each GPU
(``usable_fraction``: vLLM's gpu_memory_utilization). One request of the context holds at least S bytes: the unsharded cache of one sequence
(``Layout.whole``: full layers the context, window layers their window, states once); replicated KV heads and paging
only add to it. Without data parallel, each of the replica's TP ranks holds its own share of every layer for the
request (its own copy of what is replicated: MLA's latent), for cdiv(context, DCP) tokens with DCP, so S is at
least TP × what one rank of one stage holding every layer keeps (``replicated_bytes``; MLA models only).
So a replica serves at most R = (G × M − W) / S requests of the context, and the setup needs at
least ceil(concurrency / floor(R)) replicas: a lower bound on its GPUs and its cost per hour, and at those GPUs at
most replicas × floor(R) requests served (the ranking's next key, ``most_served``). ``SLACK`` widens R (an
engine's own rounding, a window counted a token short) so the bound never cuts a setup that could be shown.

``walk`` plans the setups in the order of their bounds and skips one when it cannot enter the first ``shown`` of the
ranking (its bound ranks after the last of them) nor the closest setups shown when fewer serve the load (its R is
below theirs). A setup it skips could not change what fit prints: the winner, the rows, the notes. No bound (R
infinite) where the GPU's memory does not bound the KV: a given KV budget, weights offloaded to the host, a host KV
tier.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from kvplan.engines import Engine
from kvplan.errors import KvplanError
from kvplan.formulas.layout import build_layout
from kvplan.formulas.request import Parallel
from kvplan.planning.gpus import lookup_gpu
from kvplan.planning.request import CapacityRequest
from kvplan.units import cdiv

SLACK = 1.1  # R is widened by 10%: a bound, not an estimate
NO_BOUND = math.inf


class Setup(NamedTuple):
    """One point of the space: a GPU type, a layout, a KV dtype, with its bound."""

    place: int  # its place in the space (ties rank in this order, as when every setup is planned)
    gpu: str
    shape: Parallel
    kv_dtype: str
    gpus: int  # GPUs of one replica, as the engine lays it out
    requests_max: float  # R: the most requests of the context one replica could serve
    lower: tuple[Any, ...] | None  # the least rank key prefix it could have, to the requests served (None: it cannot
    # serve the load)


class Floors(NamedTuple):
    """The GPU-independent figures of the bound: the weights as stored, one request's bytes per KV dtype."""

    weights_bytes: int
    request_bytes: dict[str, int]
    bounded: bool  # False: the GPU's memory does not bound the KV (a given budget, offloading)
    replicated_bytes: dict[tuple[str, int, int], int]  # (KV dtype, tp, dcp): S over the TP ranks, no DP
    usable_fraction: float = 1.0  # of a GPU's memory the engine's budget starts from (vLLM: gpu_memory_utilization)


def floors(question: CapacityRequest, dtypes: Sequence[str], context: int,
           splits: Iterable[tuple[int, int]] = ()) -> Floors:
    """W and S (per KV dtype, and per (tp, dcp) of `splits` over the TP ranks) of the module's bound, each computed
    once per fit."""
    settings, memory, model = question.settings, question.memory, question.model
    bounded = memory.kv_budget_bytes is None and not (settings.kv_offloading_bytes or settings.lmcache_cpu_bytes
                                                      or settings.sglang.hicache_ratio)
    if not bounded:
        return Floors(0, {}, False, {})
    weights = 0
    if not settings.cpu_offload_bytes:
        from kvplan.planning.weights import weight_bytes

        try:
            weights = weight_bytes(model, memory.weights_for(model))
        except KvplanError:  # weights kvplan cannot count: bound the KV by the GPU's memory alone
            weights = 0
    one = replace(question.cache, tp=1, pp=1, dcp=1, dp=1, ep=1)
    sizes = {}
    for d in dtypes:
        try:
            sizes[d] = build_layout(model, replace(one, kv_dtype=d)).whole.sequence_bytes(context)
        except KvplanError:
            sizes[d] = 0  # no bound for it: every setup with it is planned
    return Floors(weights, sizes, True, _replicated(question, sizes, context, splits))


def _replicated(question: CapacityRequest, sizes: dict[str, int], context: int,
                splits: Iterable[tuple[int, int]]) -> dict[tuple[str, int, int], int]:
    """S of a replica without DP, per (KV dtype, tp, dcp) of `splits`: TP × one rank's bytes for the request with
    every layer on one stage (the stages of a PP split hold the layers between them), at least the unsharded S."""
    out, model = {}, question.model
    # MLA's latent is on every rank; GQA heads fewer than the ranks are too, but laid out per TP they cost more than
    # they cut (a hybrid model's layouts): the bound keeps S there
    splits = [(tp, dcp) for tp, dcp in splits if tp > 1 and model.is_mla]
    for d, whole in sizes.items():
        for tp, dcp in splits if whole > 0 else ():
            try:
                rank = build_layout(question.model, replace(question.cache, tp=tp, pp=1, dcp=1, dp=1, ep=1,
                                                            kv_dtype=d), unpaged=True).stages[0]
            except KvplanError:
                continue
            out[(d, tp, dcp)] = max(whole, tp * rank.sequence_bytes(cdiv(context, dcp)))
    return out


def requests_max(floor: Floors, kv_dtype: str, gpus: int, memory_bytes: int, shape: Parallel | None = None) -> float:
    """R = SLACK × (G × ⌈f × M⌉ − W) / S (S over the TP ranks for a `shape` without data parallel)."""
    request = floor.request_bytes.get(kv_dtype, 0)
    if not floor.bounded or request <= 0:
        return NO_BOUND
    if shape is not None and shape.dp == 1:
        request = floor.replicated_bytes.get((kv_dtype, shape.tp, shape.dcp), request)
    usable = memory_bytes if floor.usable_fraction >= 1 else math.ceil(memory_bytes * floor.usable_fraction)
    return SLACK * max(gpus * usable - floor.weights_bytes, 0) / request


def usable_fraction(question: CapacityRequest, profile: Engine) -> float:
    """The share of each GPU's memory the engine's KV budget is cut from (``Engine.usable_fraction``: vLLM's
    gpu_memory_utilization, 1 for the others). Weights kept in host memory subtract a negative term: 1 there."""
    return 1.0 if question.settings.cpu_offload_bytes else profile.usable_fraction(question.settings)


def fewest_gpus(most: float, gpus: int, concurrency: int, max_gpus: int, max_replicas: int | None) -> int | None:
    """The fewest GPUs a setup of `gpus` per replica serving at most `most` requests each needs (None: it cannot
    serve the load within the limits)."""
    per_replica = concurrency if most == NO_BOUND else min(int(most), concurrency)
    if per_replica < 1:
        return None
    replicas = cdiv(concurrency, per_replica)
    if (max_replicas is not None and replicas > max_replicas) or replicas * gpus > max_gpus:
        return None
    return replicas * gpus


def most_served(most: float, replicas: int) -> float:
    """The most requests `replicas` replicas serving at most `most` each could serve: at its fewest GPUs a setup
    serves replicas × floor(requests per replica) ≤ replicas × floor(R) (more GPUs rank it later anyway)."""
    return math.inf if most == NO_BOUND else replicas * int(most)


def bounded_setups(question: CapacityRequest, profile: Engine,
                   asked: tuple[Sequence[str], Sequence[str], Mapping[str, float], Sequence[Parallel]],
                   limits: tuple[int, int, int, int | None]) -> list[Setup]:
    """The space (GPU types × layouts × KV dtypes, in that order) with each setup's bound: the GPU-independent
    floors once, then arithmetic per setup. `limits`: context, concurrency, max GPUs, max replicas."""
    gpus, dtypes, price, space = asked
    context, concurrency, max_gpus, max_replicas = limits
    floor = floors(question, dtypes, context, dict.fromkeys((s.tp, s.dcp) for s in space if s.dp == 1))
    floor = floor._replace(usable_fraction=usable_fraction(question, profile))
    replica = [(shape, profile.replica_gpus(shape)) for shape in space]
    out: list[Setup] = []
    for g in gpus:
        memory, cost = question.memory.gpu_memory_bytes or lookup_gpu(g).memory_bytes, price.get(g)
        for shape, n in replica:
            for k, d in enumerate(dtypes):
                fewest = fewest_gpus(most := requests_max(floor, d, n, memory, shape), n, concurrency, max_gpus, max_replicas)
                lower = None if fewest is None else \
                    (cost is None, 0.0 if cost is None else round(fewest * cost, 6), fewest, shape.pp, k,
                     -most_served(most, fewest // n))
                out.append(Setup(len(out), g, shape, d, n, most, lower))
    return out


Planner = Callable[[Setup], Any]  # plans one setup into a Candidate


def walk(setups: Sequence[Setup], plan: Planner, good_key: Callable[[Any], tuple[Any, ...]],
         shown: int) -> tuple[list[tuple[int, Any]], list[Setup]]:
    """Plan the setups in the order of their bounds, skipping those that cannot be shown; returns the candidates
    planned with their places in the space, and the setups skipped."""
    order = sorted(setups, key=lambda s: (s.lower is None, s.lower or (), -s.requests_max, s.place))
    good: list[tuple[Any, ...]] = []  # rank key prefixes of the setups serving the load, sorted
    bad: list[tuple[float, int]] = []  # (-requests per replica, GPUs per replica) of the others, sorted
    planned: list[tuple[int, Any]] = []
    skipped: list[Setup] = []
    for s in order:
        if not _wanted(s, good, bad, shown):
            skipped.append(s)
            continue
        c = plan(s)
        planned.append((s.place, c))
        if c.fits:
            bisect.insort(good, good_key(c))
        else:
            bisect.insort(bad, (-c.requests_per_replica, c.gpus_per_replica))
    return planned, skipped


def _wanted(s: Setup, good: list[tuple[Any, ...]], bad: list[tuple[float, int]], shown: int) -> bool:
    """Whether the setup could still rank among the first `shown` serving the load, or among the closest shown
    after them (ties are planned: the space's order breaks them)."""
    if s.lower is not None and (len(good) < shown or s.lower <= good[shown - 1]):
        return True
    room = shown - len(good)
    return room > 0 and (len(bad) < room or (-s.requests_max, s.gpus) <= bad[room - 1])
