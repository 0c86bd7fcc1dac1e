"""`kvplan fit`: the smallest parallel layout (then KV dtype) whose KV cache serves a load.

A layout serves ``concurrency`` requests of ``context`` tokens when the engine starts (an engine's
refusal is "does not fit") and admits that many at once: vLLM's logged max concurrency for max_model_len = context, SGLang's and TRT-LLM's
pools divided by one request, transformers' budget divided by one request's bytes.

Ranking: fewest GPUs (tp × pp), then smaller PP (TP stays inside a node, PP crosses nodes), then
the more precise KV dtype (auto before fp8). TP runs over powers of two up to ``gpus_per_node``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.engines import Settings
from kvplan.errors import InputError, KvplanError
from kvplan.planning.capacity import capacity

ANY_KV_DTYPES = ("auto", "fp8")
MAX_SHOWN = 12


@dataclass(frozen=True, kw_only=True)
class Candidate:
    tp: int
    pp: int
    kv_dtype: str
    kv_budget_bytes_per_gpu: int = 0
    kv_tokens: int = 0
    requests: float = 0.0
    fits: bool = False
    reason: str = ""

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp

    def as_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "pp": self.pp, "num_gpus": self.num_gpus, "kv_dtype": self.kv_dtype,
                "kv_budget_bytes_per_gpu": self.kv_budget_bytes_per_gpu, "kv_tokens": self.kv_tokens,
                "requests": self.requests, "fits": self.fits, "reason": self.reason}


@dataclass(frozen=True, kw_only=True)
class FitResult:
    model_id: str
    engine: str
    gpu: str
    context: int
    concurrency: int
    gpus_per_node: int
    best: Candidate | None
    candidates: tuple[Candidate, ...]  # ranked: fitting layouts first
    notes: tuple[str, ...] = ()


def _layouts(gpus_per_node: int, max_gpus: int) -> list[tuple[int, int]]:
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= gpus_per_node]
    pps = [p for p in (1, 2, 3, 4, 6, 8, 16) if p * tps[0] <= max_gpus]
    return [(t, p) for t in tps for p in pps if t * p <= max_gpus]


def _try(model: ModelConfig, tp: int, pp: int, kv_dtype: str, concurrency: int, **kwargs: Any) -> Candidate:
    try:
        result = capacity(model, tp=tp, pp=pp, kv_dtype=kv_dtype, **kwargs)
    except KvplanError as exc:
        return Candidate(tp=tp, pp=pp, kv_dtype=kv_dtype, reason=str(exc))
    plan = result.plan
    fits = plan.refusal is None and plan.requests_at_max_len >= concurrency
    reason = (f"the engine refuses: {plan.refusal.message}" if plan.refusal else
              "" if fits else f"{plan.requests_at_max_len:.2f} < {concurrency} requests")
    return Candidate(tp=tp, pp=pp, kv_dtype=kv_dtype, kv_budget_bytes_per_gpu=min(result.kv_budget_bytes_per_gpu),
                     kv_tokens=plan.kv_tokens, requests=plan.requests_at_max_len, fits=fits, reason=reason)


def fit(model: ModelConfig | str, *, gpu: str, context: int, concurrency: int, engine: str = "vllm",
        kv_dtype: str = "auto", gpus_per_node: int = 8, max_gpus: int | None = None,
        gpu_memory_bytes: int | None = None, overhead_bytes: int | None = None,
        settings: Settings | None = None) -> FitResult:
    """Smallest layout serving `concurrency` × `context` tokens, and the ranked alternatives."""
    model = as_model(model)
    if context <= 0 or concurrency <= 0 or gpus_per_node <= 0:
        raise InputError("context, concurrency and gpus_per_node must be positive",
                         arg=("context", "concurrency", "gpus_per_node"))
    if model.max_model_len and context > model.max_model_len:
        raise InputError(f"context {context:,} exceeds {model.model_id}'s maximum length {model.max_model_len:,}",
                         arg="context")
    dtypes: tuple[str, ...] = ANY_KV_DTYPES if kv_dtype.strip().lower() == "any" else (kv_dtype,)
    limit = max_gpus or 8 * gpus_per_node
    kwargs: dict[str, Any] = dict(engine=engine, gpu=gpu, gpu_memory_bytes=gpu_memory_bytes, max_model_len=context,
                  overhead_bytes=overhead_bytes, settings=settings)
    found = [_try(model, tp, pp, d, concurrency, **kwargs) for tp, pp in _layouts(gpus_per_node, limit)
             for d in dtypes]
    good = sorted((c for c in found if c.fits), key=lambda c: (c.num_gpus, c.pp, dtypes.index(c.kv_dtype), c.tp))
    bad = sorted((c for c in found if not c.fits), key=lambda c: (-c.requests, c.num_gpus))
    notes: tuple[str, ...] = ("ranked by GPUs, then PP, then KV dtype precision; budgets use kvplan's overhead estimate",)
    if not good:
        notes += (f"nothing up to {limit} GPUs serves {concurrency} × {context:,} tokens; closest layouts shown",)
    return FitResult(model_id=model.model_id, engine=engine, gpu=gpu, context=context, concurrency=concurrency,
                     gpus_per_node=gpus_per_node, best=good[0] if good else None,
                     candidates=tuple((good + bad)[:MAX_SHOWN]), notes=notes)
