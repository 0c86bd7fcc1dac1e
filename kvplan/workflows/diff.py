"""`kvplan diff`: one question under two setups (two releases of an engine, two engines, two KV dtypes), the answers
compared quantity by quantity, and each change put down to the release rule that makes it.

Both answers are ``plan_capacity``'s, on the same ``CapacityRequest``. The rules come from the engine's release rows
(``engines.changes.field_changes``): for every row field that differs between the two releases, and every release
between them that changed it, the second setup is planned again with that field at its value before and after that
release (the rest of the row as the second release has it). A quantity that moves between the two is that
release's doing, with the rule and file:line its row cites; a field whose change moves nothing is listed as such. A
quantity that differs but that no single field moves (two fields together, or a setting) says so: ``unexplained``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.engines import Engine, get_engine
from kvplan.engines.changes import FieldChange, RuleCite, chain, field_changes, with_field
from kvplan.errors import InputError, KvplanError
from kvplan.planning.capacity import CapacityResult, plan_capacity
from kvplan.planning.request import CapacityRequest, capacity_request

Value = int | float | str | tuple[str, ...] | None
# The quantities an answer is compared on, in the order shown; budget terms ("term:<name>") and the engine's
# resolved settings ("setting:<name>") go between the budget and the blocks.
HEAD = ("verdict", "kv_dtype")
TAIL = ("kv_budget_bytes", "block_size", "page_bytes", "num_blocks", "kv_tokens", "max_concurrency",
        "reserve_bytes_per_request", "log_lines")


@dataclass(frozen=True, kw_only=True)
class Cause:
    """One release's change to one row field, and what it moves in the second setup's answer (planned with the field
    at its value before that release, then after it)."""

    field: str
    release: str
    rules: tuple[RuleCite, ...]
    moves: dict[str, tuple[Value, Value]]  # quantity -> (before the release, after it); empty: it moves nothing


@dataclass(frozen=True, kw_only=True)
class Diff:
    """Two setups' answers to one question (``a``, ``b``: capacity's), compared quantity by quantity, with the
    release changes behind each difference (``causes_of(key)``)."""

    a: CapacityResult
    b: CapacityResult
    labels: tuple[str, str]
    quantities: tuple[tuple[str, Value, Value], ...]  # (key, a, b), every quantity of either answer
    causes: tuple[Cause, ...]  # every field change between the releases, in row order
    unexplained: tuple[str, ...]  # quantities that differ but no single cause moves
    same_engine: bool  # both setups are releases of one engine (their rules are one timeline)

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(k for k, a, b in self.quantities if a != b)

    def causes_of(self, key: str) -> tuple[Cause, ...]:
        return tuple(c for c in self.causes if key in c.moves)


def quantities(result: CapacityResult) -> dict[str, Value]:
    """What one answer says, by key: verdict, budget terms, settings, blocks, tokens, concurrency, log lines."""
    plan = result.plan
    out: dict[str, Value] = {"verdict": "error" if result.error else "refuses" if plan.refusal else "starts",
                             "kv_dtype": plan.kv_dtype}
    terms: dict[str, int] = {}
    for term in result.budget_terms:
        key = f"term:{term_key(term.name)}"
        terms[key] = terms.get(key, 0) + term.bytes
    out.update(terms)
    out.update({f"setting:{k}": v for k, v in (result.settings.items() if result.settings else ())
                if isinstance(v, (int, float, str)) and not isinstance(v, bool)})
    out.update(kv_budget_bytes=min(result.kv_budget_bytes_per_gpu), block_size=plan.block_size,
               page_bytes=plan.page_bytes, num_blocks=plan.num_blocks, kv_tokens=plan.kv_tokens,
               max_concurrency=None if plan.max_concurrency is None else round(plan.max_concurrency, 2),
               reserve_bytes_per_request=plan.reserve_bytes_per_request, log_lines=plan.log_lines)
    return out


def term_key(name: str) -> str:
    """A budget term's name without what it says of this answer ("activation peak (sampler)" -> "activation peak")."""
    return re.sub(r"\s*\(.*\)$", "", name) or name


def diff(model: CapacityRequest | ModelConfig | str, *, engines: tuple[str, str] | str = "vllm",
         kv_dtypes: tuple[str, str] | str | None = None, **options: Any) -> Diff:
    """The same question under two setups: `engines` (two names, or one for both) and `kv_dtypes` (two, or one, or
    the question's), e.g. ``diff("Qwen/Qwen3-8B", engines=("vllm@0.25", "vllm@0.29"), gpu="H100")``."""
    question = capacity_request(model, **options)
    names = _pair(engines, "engines")
    dtypes = _pair(kv_dtypes if kv_dtypes is not None else question.cache.kv_dtype, "kv_dtypes")
    asks = tuple(question if d == question.cache.kv_dtype else question.with_cache(kv_dtype=d) for d in dtypes)
    profiles = (get_engine(names[0]), get_engine(names[1]))
    a, b = plan_capacity(asks[0], profiles[0]), plan_capacity(asks[1], profiles[1])
    same = profiles[0].name == profiles[1].name
    changes = field_changes(profiles[0].name, _row_key(profiles[0]), _row_key(profiles[1])) if same else ()
    order = [r.key for r in chain(profiles[0].name)]
    causes = tuple(sorted((c for change in changes for c in _causes(asks[1], profiles[1], change)),
                          key=lambda c: order.index(c.release)))
    qa, qb = quantities(a), quantities(b)
    rows = tuple((k, qa.get(k), qb.get(k)) for k in _order(qa, qb))
    moved = {k for c in causes for k in c.moves}
    return Diff(a=a, b=b, labels=_labels(profiles, dtypes), quantities=rows, causes=causes, same_engine=same,
                unexplained=tuple(k for k, x, y in rows if x != y and k not in moved))


def _pair(value: tuple[str, str] | str, name: str) -> tuple[str, str]:
    pair = (value, value) if isinstance(value, str) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, str) and v.strip() for v in pair):
        raise InputError(f"{name}: give two setups to compare (or one for both), got {value!r}", arg=name)
    return pair[0].strip(), pair[1].strip()


def _row_key(profile: Engine) -> str:
    row = getattr(profile, "release", None)
    return str(getattr(row, "key", ""))


def _labels(profiles: tuple[Engine, Engine], dtypes: tuple[str, str]) -> tuple[str, str]:
    """Each setup's name: the release, and the KV dtype where the two differ in it."""
    if dtypes[0] == dtypes[1]:
        return profiles[0].version, profiles[1].version
    return f"{profiles[0].version}, KV {dtypes[0]}", f"{profiles[1].version}, KV {dtypes[1]}"


def _order(qa: dict[str, Value], qb: dict[str, Value]) -> list[str]:
    keys = list(dict.fromkeys([*qa, *qb]))
    middle = [k for k in keys if k.startswith("term:")] + [k for k in keys if k.startswith("setting:")]
    return [*HEAD, *middle, *TAIL]


def _causes(question: CapacityRequest, profile: Engine, change: FieldChange) -> list[Cause]:
    """Each release that changed the field, with what it moves in the second setup's answer."""
    out, before = [], change.before
    seen: list[tuple[Any, dict[str, Value] | None]] = []
    for step in change.steps:
        moves = _moves(_outcome(question, profile, change.field, before, seen),
                       _outcome(question, profile, change.field, step.value, seen))
        out.append(Cause(field=change.field, release=step.release, rules=step.rules, moves=moves))
        before = step.value
    return out


def _outcome(question: CapacityRequest, profile: Engine, field: str, value: Any,
             seen: list[tuple[Any, dict[str, Value] | None]]) -> dict[str, Value] | None:
    """The second setup's quantities with one row field at `value` (None: that row would not plan the question)."""
    for known, found in seen:
        if known == value:
            return found
    try:
        found = quantities(plan_capacity(question, with_field(profile, field, value)))
    except KvplanError:
        found = None
    seen.append((value, found))
    return found


def _moves(before: dict[str, Value] | None, after: dict[str, Value] | None) -> dict[str, tuple[Value, Value]]:
    if before is None or after is None:
        return {}
    return {k: (before.get(k), after.get(k)) for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)}
