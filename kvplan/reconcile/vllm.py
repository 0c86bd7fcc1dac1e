"""vLLM logs recomputed: the KV budget from the memory breakdown, blocks from the budget through
kvplan's vLLM planner, tokens and concurrency by the rules of the log's release, the CPU swap
blocks (V0), and a refusal's needed memory and estimated maximum length.

Each number is recomputed from the nearest number upstream of it that the log prints: a
concurrency from the tokens (or blocks) on the line before it, tokens from the worker's budget,
blocks from the smallest budget (vLLM gives every worker the minimum).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from kvplan.engines import EnginePlan, settings_from
from kvplan.reconcile.check import Outcome, compare, skip, weights_checks
from kvplan.reconcile.inputs import Inputs, logged_budget, plan, reference_plan
from kvplan.reconcile.parse import GIB, Number, Record, StartupLog, rank_key
from kvplan.reconcile.rules import VLLM_SWAP_SPACE_GIB, VllmRules, vllm_rules

NO_BUDGET = "the log prints no KV memory (Available KV cache memory) to recompute it from"
Budget = tuple[Record, Number]


@dataclass(frozen=True, slots=True)
class Shape:
    """What the release's log rules need from kvplan's plan."""

    block: int  # tokens per block (attention layers)
    groups: int  # KV cache groups sharing the block pool
    per_request: int  # blocks one max_model_len request reserves, all groups
    page_bytes: int  # one block id, every layer of the most loaded worker


def shape_of(ref: EnginePlan) -> Shape:
    return Shape(block=ref.block_size, groups=sum(g.engine_groups for g in ref.groups) or 1,
                 per_request=ref.reserve_bytes_per_request // ref.page_bytes, page_bytes=ref.page_bytes)


def tokens_of(rules: VllmRules, s: Shape, blocks: int, max_model_len: int) -> int:
    """The "GPU KV cache size" a release prints for `blocks`."""
    return {"blocks": blocks * s.block, "groups": blocks // s.groups * s.block,
            "concurrency": int(blocks / s.per_request * max_model_len)}[rules.tokens]


def concurrency_of(rules: VllmRules, s: Shape, blocks: int, max_model_len: int) -> Fraction:
    """The "Maximum concurrency" a release prints for `blocks`."""
    if rules.concurrency == "tokens":
        return Fraction(blocks * s.block, max_model_len)
    return Fraction(blocks, s.per_request)


def blocks_between(inputs: Inputs, budget: Number) -> tuple[int, int] | str:
    """kvplan's blocks for the smallest and largest budget a printed size allows (or its refusal)."""
    low, high = budget.bytes_range()
    found = [plan(inputs, int(b)) for b in (low, high)]
    if isinstance(found[0], str) or isinstance(found[1], str):
        return next(f for f in found if isinstance(f, str))
    return found[0].num_blocks or 0, found[1].num_blocks or 0


def worker_budgets(log: StartupLog) -> list[Budget]:
    """Each worker's KV budget (exact bytes where printed), in rank order: the order vLLM plans them."""
    found = log.numbers("kv_budget")
    exact = [(r, n) for r, n in found if n.unit == "B"]
    chosen = exact or found
    return sorted(chosen, key=lambda rn: rank_key(rn[0].worker))


def lowest(budgets: list[Budget]) -> Budget | None:
    return min(budgets, key=lambda rn: rn[1].bytes_range()[0], default=None)


def _said(budget: Budget) -> str:
    record, number = budget
    text = f"{int(number.value):,} B" if number.unit == "B" else f"{number.text} GiB"
    return f"{record.worker}'s {text}" if record.worker else text


def token_checks(log: StartupLog, inputs: Inputs, rules: VllmRules, s: Shape) -> list[Outcome]:
    """Each "GPU KV cache size" line from its worker's budget (one line: the smallest budget)."""
    lines = [(r, n) for r, n in log.numbers("kv_tokens") if r.kind == "kv_size"]
    budgets, out = worker_budgets(log), list[Outcome]()
    for i, (record, number) in enumerate(lines):
        budget = budgets[i] if len(budgets) == len(lines) > 1 else lowest(budgets)
        if budget is None:
            out.append(skip("kv_tokens", record, number, NO_BUDGET))
            continue
        blocks = blocks_between(inputs, budget[1])
        if isinstance(blocks, str):
            out.append(compare("kv_tokens", record, number, Fraction(0), Fraction(0), f"kvplan refuses: {blocks}"))
            continue
        low, high = (tokens_of(rules, s, b, inputs.max_model_len) for b in blocks)
        how = (f"{_said(budget)} -> {_span(*blocks)} blocks of {s.page_bytes:,} B (kvplan) -> "
               f"tokens by {rules.tokens} ({rules.releases})")
        check = compare("kv_tokens", record, number, Fraction(low), Fraction(high), how)
        # vLLM's engine core prints one line per worker, in rank order: name the worker it speaks for
        out.append(replace(check, workers=(budget[0].worker,)) if budget[0].worker and not record.worker else check)
    return out


def _span(low: int, high: int) -> str:
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def upstream(log: StartupLog, record: Record, rules: VllmRules) -> Number | None:
    """The tokens or blocks the engine printed just before a concurrency (same record or line)."""
    near = [r for r in log.records if r.line in (record.line, record.line - 1) and r is not record]
    near.append(record)
    for r in near:
        tokens = r.get("kv_tokens") if rules.tokens != "concurrency" else None
        if tokens is not None or (tokens := r.get("num_blocks")) is not None:
            return tokens
    return None


def concurrency_checks(log: StartupLog, inputs: Inputs, rules: VllmRules, s: Shape) -> list[Outcome]:
    out: list[Outcome] = []
    for record, number in log.numbers("max_concurrency"):
        printed = record.get("max_model_len")
        length = int(printed.value) if printed is not None else inputs.max_model_len
        source = upstream(log, record, rules)
        if source is not None:
            blocks = int(source.value) if source.name == "num_blocks" else int(source.value) // s.block * s.groups
            value = (Fraction(int(source.value), length) if source.name == "kv_tokens" and rules.concurrency == "tokens"
                     else concurrency_of(rules, s, blocks, length))
            how = f"{_source_text(source, s, blocks, rules, length)} ({rules.releases})"
            out.append(compare("max_concurrency", record, number, value, value, how))
            continue
        budget = lowest(worker_budgets(log))
        found = blocks_between(inputs, budget[1]) if budget else "no tokens or blocks line before it, " + NO_BUDGET
        if isinstance(found, str) or budget is None:
            out.append(skip("max_concurrency", record, number, str(found)))
            continue
        low, high = (concurrency_of(rules, s, b, length) for b in found)
        how = f"{_said(budget)} -> {_span(*found)} blocks (kvplan) / {s.per_request:,} per {length:,}-token request"
        out.append(compare("max_concurrency", record, number, low, high, how))
    return out


def _source_text(source: Number, s: Shape, blocks: int, rules: VllmRules, length: int) -> str:
    if source.name == "num_blocks":
        return f"the logged {blocks:,} blocks of {s.block} tokens"
    if rules.concurrency == "tokens":
        return f"the logged {int(source.value):,} tokens / {length:,}"
    return f"the logged {int(source.value):,} tokens = {blocks:,} blocks of {s.block}, {s.per_request:,} per request"


def block_checks(log: StartupLog, inputs: Inputs, s: Shape) -> list[Outcome]:
    """num_blocks (V0 "# GPU blocks", V1 "num_gpu_blocks is"): the smallest worker's blocks."""
    out: list[Outcome] = []
    budgets = worker_budgets(log)
    for record, number in log.numbers("num_blocks"):
        spans = [blocks_between(inputs, n) for _, n in budgets]
        if not spans or any(isinstance(x, str) for x in spans):
            out.append(skip("num_blocks", record, number, NO_BUDGET if not spans else str(spans[0])))
            continue
        low, high = min(x[0] for x in spans if not isinstance(x, str)), min(x[1] for x in spans if not isinstance(x, str))
        how = (f"min over {len(budgets)} worker budget(s) ({', '.join(_said(b) for b in budgets[:3])}"
               f"{', ...' if len(budgets) > 3 else ''}) // {s.page_bytes:,}-B blocks (kvplan)")
        out.append(compare("num_blocks", record, number, Fraction(low), Fraction(high), how))
    return out


def v0_checks(log: StartupLog, s: Shape) -> list[Outcome]:
    """V0: CPU swap blocks = swap_space // block bytes; the refusal's tokens = GPU blocks × block."""
    out: list[Outcome] = []
    swap = Fraction(log.setting("swap_space") or VLLM_SWAP_SPACE_GIB)
    for record, number in log.numbers("num_cpu_blocks"):
        value = Fraction(int(swap * GIB) // s.page_bytes)
        out.append(compare("num_cpu_blocks", record, number, value, value,
                           f"swap_space {swap} GiB // {s.page_bytes:,}-B block (kvplan)"))
    gpu = log.numbers("num_blocks")
    for record, number in ((r, n) for r, n in log.numbers("kv_tokens") if r.kind == "refusal_v0"):
        if gpu:
            value = Fraction(int(gpu[0][1].value) * s.block)
            out.append(compare("kv_tokens", record, number, value, value,
                               f"the logged {gpu[0][1].text} GPU blocks × {s.block} tokens (V0)"))
    return out


def budget_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """The KV budget from the memory breakdown the log prints, by kvplan's vLLM budget rule."""
    out: list[Outcome] = []
    for record in (*log.of_kind("breakdown_v0"), *log.of_kind("breakdown_v1")):
        printed = record if record.kind == "breakdown_v0" else _available(log, record.worker)
        requested = record if record.get("total") else _requested(log, record)
        if printed is None or requested is None:
            continue
        out.append(_budget_check(inputs, record, requested, printed))
    checked = {line for c in out for line in c.lines}
    unexplained = [*log.numbers("kv_budget"), *log.numbers("kv_available")]
    return out + [skip("kv_budget_bytes", r, n, "the log prints no memory breakdown (total, utilization, weights, "
                       "activation, non-torch) to recompute it from")
                  for r, n in unexplained if n.unit == "GiB" and r.line not in checked]


def _available(log: StartupLog, worker: str | None) -> Record | None:
    return next((r for r in log.of_kind("available") if r.worker == worker), None)


def _requested(log: StartupLog, record: Record) -> Record | None:
    before = [r for r in log.of_kind("requested_v0") if r.worker == record.worker and r.line < record.line]
    return before[-1] if before else None


def _budget_check(inputs: Inputs, breakdown: Record, requested: Record, printed: Record) -> Outcome:
    """ceil(total × utilization) − weights − activation − non-torch, at both ends of the rounding."""
    logged, total, util = printed.get("kv_budget"), requested.get("total"), requested.get("utilization")
    pieces = [breakdown.get(f"used_{p}") for p in ("weights", "activation", "non_torch")]
    assert logged is not None
    if total is None or util is None or None in pieces:
        return skip("kv_budget_bytes", printed, logged, "the breakdown lacks the total, utilization or a term")
    ranges = [total.bytes_range(), *(p.bytes_range() for p in pieces if p is not None)]
    at_util = replace(inputs, settings=settings_from({"gpu_memory_utilization": float(util.value)}, inputs.settings))

    def budget(end: int) -> Fraction:  # end 0: the smallest budget the rounding allows, 1: the largest
        used = [int(r[1 - end]) for r in ranges[1:]]
        return Fraction(logged_budget(at_util, int(ranges[0][end]), used[0], used[1] + used[2]))
    terms = " − ".join(f"{name} {p.text}" for name, p in zip(("weights", "activation", "non-torch"), pieces,
                                                            strict=True) if p is not None)
    how = f"kvplan's rule: ceil(total {total.text} GiB × {util.text}) − {terms} GiB (each ± half a printed digit)"
    return compare("kv_budget_bytes", printed, logged, budget(0), budget(1), how)


def refusal_checks(log: StartupLog, inputs: Inputs, s: Shape) -> list[Outcome]:
    """The memory one max-length request needs, and the longest length the available memory holds."""
    out: list[Outcome] = []
    for record in log.of_kind("refusal"):
        length, needed = record.get("max_model_len"), record.get("kv_needed")
        available, estimate = record.get("kv_available"), record.get("estimated_max_model_len")
        if length is None or needed is None or available is None:
            continue
        ref = reference_plan(inputs, int(length.value))
        need = Fraction(ref.reserve_bytes_per_request)
        out.append(compare("kv_needed_bytes", record, needed, need, need,
                           f"one {int(length.value):,}-token request reserves {int(need) // ref.page_bytes:,} "
                           f"blocks of {ref.page_bytes:,} B (kvplan)"))
        if estimate is not None:
            low, high = (longest(inputs, int(length.value), int(b)) for b in available.bytes_range())
            out.append(compare("estimated_max_model_len", record, estimate, Fraction(low), Fraction(high),
                               f"the longest request whose reservation fits {available.text} GiB (kvplan)"))
    return out


def longest(inputs: Inputs, max_model_len: int, available: int) -> int:
    """vLLM's binary search: the largest length whose reservation fits `available` bytes."""
    lo, hi = 0, max_model_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = reference_plan(inputs, mid).reserve_bytes_per_request <= available
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


def vllm_checks(log: StartupLog, inputs: Inputs) -> tuple[list[Outcome], str]:
    rules, why = vllm_rules(log)
    s = shape_of(reference_plan(inputs))
    out = [*weights_checks(log, inputs), *budget_checks(log, inputs), *block_checks(log, inputs, s),
           *token_checks(log, inputs, rules, s), *concurrency_checks(log, inputs, rules, s), *v0_checks(log, s),
           *refusal_checks(log, inputs, s)]
    return out, f"vLLM {rules.releases} rules ({why}): {rules.source}"
