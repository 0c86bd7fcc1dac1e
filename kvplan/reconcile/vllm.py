"""vLLM logs recomputed: the KV budget from the memory breakdown (``vllm_budget.py``), blocks from each
worker's budget through kvplan's vLLM planner (paired with that worker's own PP stage), tokens and concurrency
by the rules of the log's release (``rules.VLLM_RULES``), the CPU swap blocks (V0), and a refusal's needed
memory and estimated maximum length.

Which budget a "GPU KV cache size" line speaks for depends on the release: 0.8.0 sizes every worker with the
smallest budget and the most layers; 0.8.4-0.11 print one line per worker, in rank order, each from its own
budget and its own stage's layers, before the minimum; 0.12 on print one line after the minimum over workers
(of each worker's budget // its own stage's block). A concurrency is recomputed from the tokens (or blocks)
printed just before it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from kvplan.engines import EnginePlan
from kvplan.reconcile.check import Outcome, compare, skip, weights_checks
from kvplan.reconcile.given import conflict
from kvplan.reconcile.inputs import Inputs, plan, reference_plan
from kvplan.reconcile.parse import GIB, Number, Record, StartupLog, rank_key
from kvplan.reconcile.rules import VLLM_SWAP_SPACE_GIB, VllmRules, vllm_rules
from kvplan.reconcile.vllm_budget import budget_checks

NO_BUDGET = "the log prints no KV memory (Available KV cache memory) to recompute it from"


@dataclass(frozen=True, slots=True)
class Shape:
    """What the release's log rules need from kvplan's plan."""

    block: int  # tokens per block (attention layers)
    groups: int  # KV cache groups sharing the block pool
    per_request: int  # blocks one max_model_len request reserves, all groups
    page_bytes: int  # one block id, every layer of the most loaded worker


@dataclass(frozen=True, slots=True)
class Budget:
    record: Record
    number: Number
    stage: int | None  # the worker's PP stage (None: not known; planned on the most loaded stage)


def shape_of(ref: EnginePlan) -> Shape:
    return Shape(block=ref.block_size, groups=sum(g.engine_groups for g in ref.groups) or 1,
                 per_request=ref.reserve_bytes_per_request // ref.page_bytes, page_bytes=ref.page_bytes)


def tokens_of(rules: VllmRules, s: Shape, blocks: int, max_model_len: int, dcp: int) -> int:
    """The "GPU KV cache size" a release prints for `blocks`."""
    legacy = {"blocks": blocks * s.block, "groups": blocks // s.groups * s.block}
    if rules.tokens in legacy:
        return legacy[rules.tokens] * (dcp if rules.dcp else 1)
    return int(blocks / s.per_request * max_model_len)


def concurrency_of(rules: VllmRules, s: Shape, blocks: int, max_model_len: int) -> Fraction:
    """The "Maximum concurrency" a release prints for `blocks`."""
    if rules.concurrency == "tokens":
        return Fraction(blocks * s.block, max_model_len)
    return Fraction(blocks, s.per_request)


def stage_of(worker: str | None, inputs: Inputs) -> int | None:
    """'PP1 TP0' -> 1; 'rank 3' -> 3 // tp; 'TP2' -> 0 without PP; unnamed -> None (unless pp is 1)."""
    if inputs.pp == 1:
        return 0
    for part in (worker or "").split(" "):
        if part.startswith("PP"):
            return int(part[2:])
    if worker and worker.startswith("rank "):
        return min(int(worker[5:]) // inputs.tp, inputs.pp - 1)
    return None


def plans_between(inputs: Inputs, budget: Budget) -> tuple[EnginePlan, EnginePlan] | str:
    """kvplan's plans for the smallest and largest budget a printed size allows, on the budget's own stage (or its
    refusal)."""
    found = [plan(inputs, int(b), stage=budget.stage) for b in budget.number.bytes_range()]
    if isinstance(found[0], str) or isinstance(found[1], str):
        return next(f for f in found if isinstance(f, str))
    return found[0], found[1]


def worker_budgets(log: StartupLog, inputs: Inputs) -> list[Budget]:
    """Each worker's KV budget (exact bytes where printed), in rank order: the order vLLM plans them; where the log
    prints none, the one given (kv_budget_bytes: one, or one per PP stage)."""
    found = log.numbers("kv_budget")
    chosen = [(r, n) for r, n in found if n.unit == "B"] or found
    given = inputs.memory.kv_budget_bytes
    if given is None:
        return [Budget(r, n, stage_of(r.worker, inputs)) for r, n in sorted(chosen, key=lambda rn: rank_key(rn[0].worker))]
    for record, number in chosen:
        value = given[min(stage_of(record.worker, inputs) or 0, len(given) - 1)]
        low, high = number.bytes_range()
        if not low <= value <= high:
            raise conflict("kv_budget_bytes", f"{value / GIB:.2f} GiB", f"{number.text} {number.unit} "
                           f"({record.worker or 'line ' + str(record.line)})")
    if chosen:
        return worker_budgets(log, replace(inputs, memory=replace(inputs.memory, kv_budget_bytes=None)))
    return [Budget(Record("given", 0, None, (n := Number("kv_budget", str(b), "B", 0),), "kv_budget_bytes"), n,
                   k if len(given) > 1 else None) for k, b in enumerate(given)]


def _said(budget: Budget) -> str:
    number = budget.number
    text = f"{int(number.value):,} B" if number.unit == "B" else f"{number.text} GiB"
    where = f" (stage {budget.stage})" if budget.stage else ""
    return f"{budget.record.worker}'s {text}{where}" if budget.record.worker else text


def _span(low: int, high: int) -> str:
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def line_budgets(rules: VllmRules, budgets: list[Budget], count: int) -> list[list[Budget]]:
    """The budget(s) each of `count` token lines is computed from: its own worker's (0.8.4-0.11, rank order;
    all alike where the workers cannot be told apart), else every worker's (the minimum is taken)."""
    if not budgets:
        return [[] for _ in range(count)]
    if rules.workers == "min-max":
        low = min(budgets, key=lambda b: b.number.bytes_range()[0])
        return [[replace(low, stage=None)] for _ in range(count)]
    if rules.workers == "own" and len(budgets) >= count:
        return [[budgets[i]] for i in range(count)]
    if rules.workers == "own" and len({b.number.text for b in budgets}) == 1:
        return [[budgets[0]] for _ in range(count)]
    return [budgets for _ in range(count)]


def min_plans(inputs: Inputs, budgets: list[Budget]) -> tuple[EnginePlan, EnginePlan] | str:
    """The plans of the fewest blocks over workers (each on its own stage), at both ends of the printed rounding."""
    spans = [plans_between(inputs, b) for b in budgets]
    refused = next((x for x in spans if isinstance(x, str)), None)
    if refused is not None:
        return refused
    found = [x for x in spans if not isinstance(x, str)]
    return (min((x[0] for x in found), key=lambda p: p.num_blocks or 0),
            min((x[1] for x in found), key=lambda p: p.num_blocks or 0))


def min_blocks(inputs: Inputs, budgets: list[Budget]) -> tuple[int, int] | str:
    """The smallest blocks over workers (each on its own stage), at both ends of the printed rounding."""
    found = min_plans(inputs, budgets)
    return found if isinstance(found, str) else (found[0].num_blocks or 0, found[1].num_blocks or 0)


def _tokens(rules: VllmRules, s: Shape, plans: tuple[EnginePlan, EnginePlan], inputs: Inputs) -> tuple[int, int]:
    """The "GPU KV cache size" of both plans: from 0.21 the release's int(concurrency × length), as kvplan's plan
    computes it (the release's own weighting of a request's blocks, capacity's figure); before, from the blocks."""
    if rules.tokens == "concurrency":
        return plans[0].kv_tokens, plans[1].kv_tokens
    return tokens_of(rules, s, plans[0].num_blocks or 0, inputs.max_model_len, inputs.cache.dcp), \
        tokens_of(rules, s, plans[1].num_blocks or 0, inputs.max_model_len, inputs.cache.dcp)


def token_checks(log: StartupLog, inputs: Inputs, rules: VllmRules, s: Shape) -> list[Outcome]:
    """Each "GPU KV cache size" line from the budget(s) it speaks for."""
    lines = [(r, n) for r, n in log.numbers("kv_tokens") if r.kind == "kv_size"]
    out: list[Outcome] = []
    for (record, number), budgets in zip(lines, line_budgets(rules, worker_budgets(log, inputs), len(lines)),
                                          strict=True):
        if not budgets:
            out.append(from_concurrency(log, record, number, rules, inputs) or skip("kv_tokens", record, number,
                                                                                     NO_BUDGET))
            continue
        plans = min_plans(inputs, budgets)
        if isinstance(plans, str):
            out.append(compare("kv_tokens", record, number, Fraction(0), Fraction(0), f"kvplan refuses: {plans}"))
            continue
        blocks = (plans[0].num_blocks or 0, plans[1].num_blocks or 0)
        low, high = _tokens(rules, s, plans, inputs)
        source = _said(budgets[0]) if len(budgets) == 1 else f"min over {len(budgets)} workers' budgets"
        how = (f"{source} -> {_span(*blocks)} blocks (kvplan) -> tokens by {rules.tokens} (vLLM {rules.releases})")
        check = compare("kv_tokens", record, number, Fraction(low), Fraction(high), how)
        # the engine core prints one line per worker, in rank order: name the worker it speaks for
        named = budgets[0].record.worker if len(budgets) == 1 else None
        out.append(replace(check, workers=(named,)) if named and not record.worker else check)
    return out


def from_concurrency(log: StartupLog, record: Record, number: Number, rules: VllmRules, inputs: Inputs) -> Outcome | None:
    """0.21 on, with no budget to plan from: tokens = int(concurrency × max_model_len), and the log prints the
    concurrency too ("%.2fx", on the same line from 0.28, the next before): the tokens its rounding allows (0.25.0
    v1/core/kv_cache_utils.py:1798, printed at :2146-2150)."""
    if rules.tokens != "concurrency":
        return None
    found = next(((r, n) for r, n in log.numbers("max_concurrency") if r.seq in (record.seq, record.seq + 1)), None)
    if found is None:
        return None
    printed, concurrency = found[0].get("max_model_len"), found[1]
    length = int(printed.value) if printed is not None else inputs.max_model_len
    low, high = (int(c * length) for c in (concurrency.value - concurrency.half_unit,
                                            concurrency.value + concurrency.half_unit))
    return compare("kv_tokens", record, number, Fraction(low), Fraction(high), f"int(the logged concurrency "
                   f"{concurrency.text}x ± half a digit × {length:,} tokens) (vLLM {rules.releases})")


def upstream(log: StartupLog, record: Record, rules: VllmRules) -> Number | None:
    """The tokens or blocks the engine printed just before a concurrency (same record or the one before)."""
    near = [r for r in log.records if r.seq in (record.seq, record.seq - 1) and r is not record]
    near.append(record)
    for r in near:
        tokens = r.get("kv_tokens") if rules.tokens != "concurrency" and r.kind != "refusal_v0" else None
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
            out.append(_from_upstream(record, number, source, rules, s, length))
            continue
        budgets = worker_budgets(log, inputs)
        found = min_plans(inputs, budgets) if budgets else "no tokens or blocks line before it, " + NO_BUDGET
        if isinstance(found, str):
            out.append(skip("max_concurrency", record, number, found))
            continue
        out.append(_from_plans(record, number, found, rules, s, length))
    return out


def _from_plans(record: Record, number: Number, plans: tuple[EnginePlan, EnginePlan], rules: VllmRules, s: Shape,
                length: int) -> Outcome:
    """A concurrency from kvplan's plans of the budgets: from 0.21 the release's own (kvplan's plan), before, the
    blocks over the blocks one request reserves."""
    blocks = _span(plans[0].num_blocks or 0, plans[1].num_blocks or 0)
    if rules.tokens == "concurrency" and plans[0].max_concurrency is not None and plans[1].max_concurrency is not None:
        return compare("max_concurrency", record, number, Fraction(plans[0].max_concurrency),
                       Fraction(plans[1].max_concurrency), f"min over worker budgets -> {blocks} blocks, the "
                       f"release's concurrency for {length:,}-token requests (kvplan's plan)")
    low, high = (concurrency_of(rules, s, p.num_blocks or 0, length) for p in plans)
    return compare("max_concurrency", record, number, low, high, f"min over worker budgets -> {blocks} blocks "
                   f"(kvplan) / {s.per_request:,} per {length:,}-token request")


def _from_upstream(record: Record, number: Number, source: Number, rules: VllmRules, s: Shape, length: int) -> Outcome:
    """A concurrency from the tokens (or blocks) printed before it. Tokens = blocks // groups × block drops the
    remainder of blocks over the groups: the blocks lie in [tokens // block × groups, + groups − 1]."""
    value = int(source.value)
    if source.name == "kv_tokens" and rules.concurrency == "tokens":
        exact = Fraction(value, length)
        return compare("max_concurrency", record, number, exact, exact,
                       f"the logged {value:,} tokens / {length:,} (vLLM {rules.releases})")
    low = value if source.name == "num_blocks" else value // s.block * (s.groups if rules.tokens == "groups" else 1)
    high = low + (s.groups - 1 if source.name == "kv_tokens" and rules.tokens == "groups" else 0)
    how = f"{_source_text(source, s, _span(low, high), rules)} (vLLM {rules.releases})"
    return compare("max_concurrency", record, number, concurrency_of(rules, s, low, length),
                   concurrency_of(rules, s, high, length), how)


def _source_text(source: Number, s: Shape, blocks: str, rules: VllmRules) -> str:
    if source.name == "num_blocks" and rules.concurrency == "tokens":
        return f"the logged {blocks} blocks × {s.block} tokens / max_model_len"
    if source.name == "num_blocks":
        return f"the logged {blocks} blocks / {s.per_request:,} per request"
    return f"the logged {int(source.value):,} tokens = {blocks} blocks of {s.block}, {s.per_request:,} per request"


def block_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """num_blocks (V0 "# GPU blocks", V1 "num_gpu_blocks is"): the smallest worker's blocks, each on its stage."""
    out: list[Outcome] = []
    budgets = worker_budgets(log, inputs)
    for record, number in log.numbers("num_blocks"):
        found = min_blocks(inputs, budgets) if budgets else NO_BUDGET
        if isinstance(found, str):
            out.append(skip("num_blocks", record, number, found))
            continue
        how = (f"min over {len(budgets)} worker budget(s) ({', '.join(_said(b) for b in budgets[:3])}"
               f"{', ...' if len(budgets) > 3 else ''}) // the block of each worker's stage (kvplan)")
        out.append(compare("num_blocks", record, number, Fraction(found[0]), Fraction(found[1]), how))
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


def refusal_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """The memory one max-length request needs, and the longest length the available memory holds."""
    out: list[Outcome] = []
    for record in log.of_kind("refusal"):
        length, needed = record.get("max_model_len"), record.get("kv_needed")
        available, estimate = record.get("kv_available"), record.get("estimated_max_model_len")
        if length is None or needed is None or available is None:
            continue
        ref = reference_plan(inputs, int(length.value))
        need = Fraction(ref.start_check_bytes)
        out.append(compare("kv_needed_bytes", record, needed, need, need,
                           f"one {int(length.value):,}-token request reserves {int(need) // ref.page_bytes:,} "
                           f"blocks of {ref.page_bytes:,} B (kvplan)" if ref.check_bytes_per_request is None else
                           f"the release's start-up check counts {int(need):,} B for one {int(length.value):,}-token "
                           "request (kvplan)"))
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
        fits = reference_plan(inputs, mid).start_check_bytes <= available
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


def vllm_checks(log: StartupLog, inputs: Inputs) -> tuple[list[Outcome], str]:
    rules, why = vllm_rules(log)
    s = shape_of(reference_plan(inputs))
    out = [*weights_checks(log, inputs), *budget_checks(log, inputs), *block_checks(log, inputs),
           *token_checks(log, inputs, rules, s), *concurrency_checks(log, inputs, rules, s), *v0_checks(log, s),
           *refusal_checks(log, inputs)]
    return out, f"vLLM {rules.releases} rules ({why}): {rules.source}"
