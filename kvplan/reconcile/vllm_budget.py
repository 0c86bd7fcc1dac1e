"""vLLM's KV budget recomputed from the memory terms its log prints, by the rule of the log's release
(``rules.BUDGET_RULES``): usable = total × utilization (ceil from 0.14; the printed "requested" where the
printed utilization is rounded), minus what the release subtracts.

- V0 0.6.4, "Memory profiling results": usable − absolute torch peak (weights included) − non-torch.
- V0 0.6.5-0.10, "the current vLLM instance can use ...": usable − weights − activation peak − non-torch.
- V1 "Free memory on device ... Actual usage is ..." (0.10.2 info, 0.11-0.25 debug, 0.26+ info): usable −
  weights − activation − non-torch − the CUDA-graph estimate where the release applies it (0.20-0.26 by
  default, 0.18-0.19 only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1); 0.27+: usable − consumed (weights +
  non-torch) − activation (which includes the applied estimate).
Each printed term is taken at both ends of its rounding, so the budget is a range.
"""

from __future__ import annotations

from fractions import Fraction

from kvplan.reconcile.check import Outcome, compare, skip
from kvplan.reconcile.inputs import Inputs
from kvplan.reconcile.parse import Number, Record, StartupLog
from kvplan.reconcile.rules import BudgetRule, budget_rule

Span = tuple[Fraction, Fraction]
NO_BREAKDOWN = ("the log prints no memory breakdown (total, utilization, weights, activation, non-torch) to "
                "recompute it from")


def usable(log: StartupLog, inputs: Inputs, total: Number, util: Number, requested: Number | None) -> tuple[Span, str]:
    """total × u at both ends of the printed rounding (u from the log's setting where that is the same number more
    precisely); the printed "requested" instead when total × u cannot give it (u printed rounded: Unsloth's 0.5943
    shows as 0.59)."""
    t_lo, t_hi = total.bytes_range()
    u_lo, u_hi = util.value - util.half_unit, util.value + util.half_unit
    setting = inputs.settings.vllm.gpu_memory_utilization
    if setting is not None and u_lo <= Fraction(str(setting)) <= u_hi:
        u_lo = u_hi = Fraction(str(setting))
    span = (t_lo * u_lo, t_hi * u_hi)
    how = f"total {total.text} GiB × {float(u_lo):g}"
    if requested is not None:
        r_lo, r_hi = requested.bytes_range()
        if r_hi < span[0] or span[1] < r_lo:
            return (r_lo, r_hi), f"the printed {requested.text} GiB (total × u printed as {util.text})"
    return span, how


def terms_span(pieces: list[Number]) -> Span:
    """The sum of printed terms at both ends of their rounding (low, high)."""
    return sum((p.bytes_range()[0] for p in pieces), Fraction(0)), sum((p.bytes_range()[1] for p in pieces), Fraction(0))


def graph_estimate(log: StartupLog, inputs: Inputs, rule: BudgetRule, worker: str | None) -> Number | None:
    """The "Estimated CUDA graph memory" the release subtracted, if it did."""
    applied = {"default": log.setting("graph_estimate") != "off" and not inputs.settings.enforce_eager,
               "env": log.setting("graph_estimate") == "on"}.get(rule.graphs, False)
    found = [r.get("cuda_graph") for r in log.of_kind("cuda_graph") if r.worker == worker]
    return found[-1] if applied and found else None


def _check(printed: Record, logged: Number, space: tuple[Span, str], pieces: list[tuple[str, Number]],
           rule: BudgetRule) -> Outcome:
    (low, high), how = space
    taken = terms_span([p for _, p in pieces])
    terms = " − ".join(f"{name} {p.text}" for name, p in pieces)
    text = f"vLLM {rule.releases} rule: {how} − {terms} GiB (each ± half a printed digit)"
    return compare("kv_budget_bytes", printed, logged, low - taken[1], high - taken[0], text)


def v0_checks(log: StartupLog, inputs: Inputs, rule: BudgetRule) -> list[Outcome]:
    out: list[Outcome] = []
    for record in log.of_kind("profile_v064"):
        total, util, logged = record.get("total"), record.get("utilization"), record.get("kv_budget")
        peak, non_torch = record.get("used_peak"), record.get("used_non_torch")
        if total and util and logged and peak and non_torch:
            pieces = [("absolute torch peak", peak), ("non-torch", non_torch)]
            out.append(_check(record, logged, usable(log, inputs, total, util, None), pieces, rule))
    for record in log.of_kind("breakdown_v0"):
        before = [r for r in log.of_kind("requested_v0") if r.worker == record.worker and r.seq < record.seq]
        logged = record.get("kv_budget")
        pieces = [(n, p) for n, k in (("weights", "used_weights"), ("activation", "used_activation"),
                                      ("non-torch", "used_non_torch")) if (p := record.get(k)) is not None]
        if not before or logged is None or len(pieces) < 3:
            continue
        total, util = before[-1].get("total"), before[-1].get("utilization")
        assert total is not None and util is not None
        out.append(_check(record, logged, usable(log, inputs, total, util, before[-1].get("requested")), pieces, rule))
    return out


def v1_checks(log: StartupLog, inputs: Inputs, rule: BudgetRule) -> list[Outcome]:
    out: list[Outcome] = []
    for record in log.of_kind("breakdown_v1"):
        available = next((r for r in log.of_kind("available") if r.worker == record.worker), None)
        logged = available.get("kv_budget") if available else None
        total, util = record.get("total"), record.get("utilization")
        if logged is None or available is None or total is None or util is None:
            continue
        names = (("consumed", "used_consumed"),) if record.get("used_consumed") else (
            ("weights", "used_weights"), ("non-torch", "used_non_torch"))
        pieces = [(n, p) for n, k in (*names, ("activation", "used_activation")) if (p := record.get(k)) is not None]
        graphs = graph_estimate(log, inputs, rule, record.worker)
        pieces += [("CUDA-graph estimate", graphs)] if graphs is not None else []
        out.append(_check(available, logged, usable(log, inputs, total, util, record.get("requested")), pieces, rule))
    return out


def budget_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """The KV budget from the memory breakdown the log prints; the budgets no breakdown explains are listed."""
    rule = budget_rule(log)
    out = [*v0_checks(log, inputs, rule), *v1_checks(log, inputs, rule)]
    checked = {line for c in out for line in c.lines}
    unexplained = [*log.numbers("kv_budget"), *log.numbers("kv_available")]
    return out + [skip("kv_budget_bytes", r, n, NO_BREAKDOWN) for r, n in unexplained
                  if n.unit == "GiB" and r.line not in checked]

