"""What the engine tests share: a plan for a bundled model, request options and a budget.

Expected numbers in the tests carry their derivation; GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

from kvplan.engines import BudgetTerm, Device, Request, Settings, get_engine
from kvplan.planning.capacity import plan_request

GIB = 2**30
# The worked examples of vLLM before 0.33: sliding reserve W − 1 + max_num_batched_tokens (8192, no async
# batch in flight) and "GPU KV cache size" = num_blocks // groups × block size.
LEGACY = Settings.of(async_scheduling=False, legacy_token_log=True)


def plan(model: Any, name: str, engine: str, budget: int | tuple[int, ...], **kw: Any) -> Any:
    """An engine's plan; `kw` are the cache's fields, `settings`, and `gpu_name` (the attention backend's GPU;
    the scheduler defaults stay an H100's, as when no GPU is given)."""
    settings = kw.pop("settings", Settings.of())
    gpu = kw.pop("gpu_name", None)
    device = Device(name=gpu, memory_bytes=80 * GIB) if gpu else None
    m = model(name)
    req = Request.of(m, max_model_len=kw.pop("max_model_len", m.max_model_len or 2048), settings=settings,
                     device=device, **kw)
    return plan_request(req, budget if isinstance(budget, tuple) else (budget,), engine)


def budget(model: Any, engine: str, memory: int, weights: int, other: int = 0, **settings: Any) -> int:
    """An engine's KV budget on a GPU of `memory` bytes with `weights` and `other` (activation) bytes subtracted."""
    req = Request.of(model("meta-llama/Llama-3.1-8B"), max_model_len=4096, settings=Settings.of(**settings),
                     device=Device(name=None, memory_bytes=memory))
    terms = (BudgetTerm(name="weights", bytes=weights, exact=True, source="test", kind="weights"),
             BudgetTerm(name="other", bytes=other, exact=True, source="test", kind="activation"))
    profile = get_engine(engine)
    return int(profile.kv_budget(profile.resolve(req), terms).kv_budget_bytes)
