"""How sure a verdict is: the margin between "starts" and "refuses", against what the estimated terms add up to.

The margin is how far the KV budget is from the engine's refusal: on the binding stage, the budget less what its
start check needs (vLLM: one max_model_len request's reservation, ``EnginePlan.check_bytes_per_request`` or the
reserve; the other engines refuse only a budget of nothing), and, where kvplan checks what the release allocates
after the cache (``AfterKvCheck``), the memory left then less the graphs and the sampler warm-up; where a KV budget is
given, what the GPU has left beside it (``given_budget``, with what of the resident bytes is estimated); the closest
of these binds. Negative: the engine refuses, short by that much. The estimate's error is the estimated terms added up (their bytes, whatever
their sign): when it is more than the margin, an error in them can turn the verdict, and the answer says so.
"""

from __future__ import annotations

from kvplan.engines import BudgetTerm, EnginePlan
from kvplan.planning.after_kv import AfterKvCheck
from kvplan.units import format_gib


def estimate_error_bytes(terms: tuple[BudgetTerm, ...]) -> int:
    """The estimated terms added up: how far off the budget may be."""
    return sum(abs(t.bytes) for t in terms if not t.exact)


def margin_bytes(start_check: bool, plan: EnginePlan, budgets: tuple[int, ...], after: AfterKvCheck | None) -> int:
    """The budget less what the start needs (negative: short by that much); `start_check`: the engine refuses to start
    when one max_model_len request does not fit (``Engine.start_check``), else it refuses only a budget of nothing."""
    need = (plan.check_bytes_per_request or plan.reserve_bytes_per_request) if start_check else 0
    margin = min(budgets) - need
    if after is not None:
        margin = min(margin, after.free_bytes - after.graph_bytes - after.warmup_bytes)
    return margin


def within_estimate(margin: int | None, error: int) -> bool:
    """The verdict could go the other way within the estimated terms."""
    return margin is not None and error > abs(margin)


def verdict_text(refuses: bool, margin: int | None, error: int) -> str:
    """"starts" / "refuses", or with the margin (to spare, or short) of the estimated terms where they could turn it:
    "starts, but within the estimate's error: 0.52 GiB of 3.40"."""
    word = "refuses" if refuses else "starts"
    if margin is None or not within_estimate(margin, error):
        return word
    return f"{word}, but within the estimate's error: {format_gib(abs(margin))} GiB of {format_gib(error)}"


def uncertain_note(margin: int, error: int, refused: bool) -> tuple[str, ...]:
    """The note a verdict within the estimate's error carries (none otherwise)."""
    if not within_estimate(margin, error):
        return ()
    return (f"the verdict is within the estimate's error: {format_gib(abs(margin))} GiB "
            f"{'short of starting' if refused else 'from a refusal'}, and the estimated terms add up to "
            f"{format_gib(error)} GiB; give the KV memory the engine logs (kv_budget_bytes) for a sure answer",)
