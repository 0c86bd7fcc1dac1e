"""`kvplan fit --disaggregated`: a prefill pool and a decode pool on the layout `fit` finds for the decode side.

Memory only: the decode pool holds the load (``concurrency`` requests of ``max_model_len`` tokens, each with the
engine's decode reserve: ``kvplan.planning.extras.role``), so its replicas are ``ceil(concurrency / floor(requests
per replica))``; the prefill pool has ``prefill:decode`` replicas in the ratio asked (``--pd-ratio``, default 1:1),
on the same GPU, layout and KV dtype, each planned with its role (its budget, pool, transfer bytes and launch command).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.engines import get_engine
from kvplan.errors import InputError
from kvplan.planning.capacity import CapacityResult, plan_capacity
from kvplan.planning.fit import Candidate, FitResult, fit
from kvplan.planning.request import CapacityRequest


@dataclass(frozen=True, kw_only=True)
class Pool:
    """One role's pool (JSON ``prefill`` / ``decode``)."""

    role: str
    replicas: int  # 0: one replica cannot hold one request
    requests_per_replica: int  # at max_model_len with the role's reserve
    result: CapacityResult
    launch: Mapping[str, Any] = field(default_factory=dict)  # fit's multi-node flags for the layout


@dataclass(frozen=True, kw_only=True)
class Disaggregated:
    ratio: tuple[int, int]  # prefill : decode replicas
    fitted: FitResult  # the decode side's search
    prefill: Pool | None
    decode: Pool | None


def parse_ratio(text: str) -> tuple[int, int]:
    """`1:2` -> (1, 2): prefill replicas per decode replicas."""
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise InputError(f"pd_ratio {text!r}: give prefill:decode replicas, e.g. 1:2", arg="pd_ratio")
    return int(parts[0]), int(parts[1])


def with_role(question: CapacityRequest, role: str) -> CapacityRequest:
    return dataclasses.replace(question, settings=dataclasses.replace(question.settings, role=role))


def _pool(question: CapacityRequest, best: Candidate, role: str, engine: str) -> tuple[CapacityResult, int]:
    asking = with_role(question, role).on_gpu(best.gpu).with_cache(tp=best.tp, pp=best.pp, dp=best.dp, ep=best.ep,
                                                                   kv_dtype=best.kv_dtype)
    result = plan_capacity(asking, get_engine(engine))
    summary = result.extras.role
    return result, math.floor(summary.requests_at_max_len) if summary else 0


def disaggregated(question: CapacityRequest, *, ratio: tuple[int, int] = (1, 1), engine: str,
                  **options: Any) -> Disaggregated:
    """The decode layout `fit` finds for the load, its replicas with the decode reserve, and the prefill pool."""
    fitted = fit(with_role(question, "decode"), engine=engine, **options)
    best = fitted.best
    if best is None or best.result is None:
        return Disaggregated(ratio=ratio, fitted=fitted, prefill=None, decode=None)
    decode, per_decode = _pool(question, best, "decode", engine)
    prefill, per_prefill = _pool(question, best, "prefill", engine)
    replicas = math.ceil(options["concurrency"] / per_decode) if per_decode else 0
    return Disaggregated(
        ratio=ratio, fitted=fitted,
        decode=Pool(role="decode", replicas=replicas, requests_per_replica=per_decode, result=decode,
                    launch=best.launch),
        prefill=Pool(role="prefill", replicas=math.ceil(replicas * ratio[0] / ratio[1]),
                     requests_per_replica=per_prefill, result=prefill, launch=best.launch))
