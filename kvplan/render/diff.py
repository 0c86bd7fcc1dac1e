"""Diff -> the typed `kvplan diff --json` payload, its tables and its one-line summary.

Keys (stable, added to only): ``model``, ``a`` and ``b`` (the setups' labels), ``summary``, ``same_engine``,
``quantities`` (each ``key``, ``label``, ``a``, ``b``, ``changed``, ``rules``: the numbers of the causes that move
it), ``causes`` (each ``number``, ``field``, ``release``, ``rules`` with ``release``/``rule``/``source``, ``moves``:
the quantity keys it moves; ``moved``: each with its ``before`` and ``after``), ``unexplained``, and ``answers``: the two ``kvplan capacity --json`` payloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.render import gib
from kvplan.render.capacity import CapacityPayload, capacity_payload
from kvplan.render.payload import JsonValue, plain
from kvplan.render.tables import Table
from kvplan.workflows.diff import Diff, Value

if TYPE_CHECKING:
    from rich.console import RenderableType

LABELS = {"verdict": "verdict", "kv_dtype": "KV dtype", "kv_budget_bytes": "KV budget / GPU", "block_size": "block",
          "page_bytes": "page (all layers)", "num_blocks": "blocks", "kv_tokens": "KV tokens",
          "max_concurrency": "concurrency", "reserve_bytes_per_request": "request, admission reserve",
          "log_lines": "log lines"}
BYTES = ("term:", "kv_budget_bytes", "reserve_bytes_per_request")
ROWS_NOTE = "its value and sources are in the engine's rows"
# What the summary leads with: the first of these that changed (tokens only when either side holds some).
HEADLINE = ("kv_tokens", "kv_budget_bytes", "verdict", "max_concurrency", "num_blocks")


@dataclass(frozen=True, slots=True, kw_only=True)
class RulePayload:
    release: str
    rule: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MovePayload:
    """What one cause moves in the second setup's answer: the quantity before and after its release."""

    key: str
    before: JsonValue
    after: JsonValue


@dataclass(frozen=True, slots=True, kw_only=True)
class CausePayload:
    number: int
    field: str
    release: str
    rules: tuple[RulePayload, ...]
    moves: tuple[str, ...]
    moved: tuple[MovePayload, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuantityPayload:
    key: str
    label: str
    a: JsonValue
    b: JsonValue
    changed: bool
    rules: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffPayload:
    model: str
    a: str
    b: str
    summary: str
    same_engine: bool
    quantities: tuple[QuantityPayload, ...]
    causes: tuple[CausePayload, ...]
    unexplained: tuple[str, ...]
    answers: tuple[CapacityPayload, CapacityPayload]


def label(key: str) -> str:
    return LABELS.get(key) or key.partition(":")[2]


def diff_payload(d: Diff) -> DiffPayload:
    """The causes numbered: those that move the answer first (in release order), then those that move nothing."""
    ordered = [c for c in d.causes if c.moves] + [c for c in d.causes if not c.moves]
    causes = tuple(CausePayload(number=i, field=c.field, release=c.release, moves=tuple(c.moves),
                                moved=tuple(MovePayload(key=k, before=plain(x), after=plain(y))
                                            for k, (x, y) in c.moves.items()),
                                rules=tuple(RulePayload(release=r.release, rule=r.rule, source=r.source)
                                            for r in c.rules))
                   for i, c in enumerate(ordered, 1))
    quantities = tuple(QuantityPayload(key=k, label=label(k), a=plain(a), b=plain(b), changed=a != b,
                                       rules=tuple(c.number for c in causes if k in c.moves) if a != b else ())
                       for k, a, b in d.quantities)
    return DiffPayload(model=d.a.model.model_id, a=d.labels[0], b=d.labels[1], summary=summary(d),
                       same_engine=d.same_engine, quantities=quantities, causes=causes, unexplained=d.unexplained,
                       answers=(capacity_payload(d.a), capacity_payload(d.b)))


def summary(d: Diff) -> str:
    """One line: what changes most visibly, and the rule that moves it most (file:line)."""
    la, lb = d.labels
    values = {k: (a, b) for k, a, b in d.quantities}
    key = next((k for k in HEADLINE if values[k][0] != values[k][1]
                and (k != "kv_tokens" or values[k][0] or values[k][1])), None)
    if key is None:
        key = next(iter(d.changed), None)
    if key is None:
        return f"{lb} gives the same answer as {la}"
    a, b = values[key]
    return f"{_headline(key, a, b, la, lb, values['verdict'])}: {_because(d, key)}"


def _headline(key: str, a: Value, b: Value, la: str, lb: str, verdict: tuple[Value, Value]) -> str:
    if key == "kv_tokens" and isinstance(a, int) and isinstance(b, int):
        if not a:
            return f"{lb} holds {b:,} KV tokens where {la} holds none"
        pct = abs(b - a) * 100 / a
        share = f"{pct:.0f}" if pct >= 1 else f"{pct:.1f}"
        return f"{lb} holds {share}% {'more' if b > a else 'fewer'} KV tokens than {la} ({b:,} vs {a:,})"
    if key == "kv_budget_bytes" and isinstance(a, int) and isinstance(b, int):
        both = f" (both {'refuse' if verdict[0] == 'refuses' else 'start'})" if verdict[0] == verdict[1] else ""
        return f"{lb} has {gib(abs(b - a))} {'more' if b > a else 'less'} KV budget per GPU than {la}{both}"
    if key == "verdict":
        return f"{lb} {b} where {la} {a}"
    return f"{lb} differs from {la} in {label(key)}"


def _because(d: Diff, key: str) -> str:
    """The cause that moves `key` the most, shortened, with its file:line; or why there is none."""
    causes = d.causes_of(key)
    if not causes:
        if not d.same_engine:
            return "two engines (their rules are not one timeline; see the quantities)"
        kv = dict((k, (a, b)) for k, a, b in d.quantities)["kv_dtype"]
        return f"KV dtype {kv[0]} -> {kv[1]}" if kv[0] != kv[1] else "no single rule of the rows moves it"
    top = max(causes, key=lambda c: _size(c.moves[key]))
    more = f" (and {len(causes) - 1} more rule{'s' if len(causes) > 2 else ''})" if len(causes) > 1 else ""
    if not top.rules:
        return f"{top.release} {top.field} (the row cites no rule for it){more}"
    return f"{short(top.rules[0].rule)}, {top.rules[0].source.split(';')[0]}{more}"


def _size(moved: tuple[Value, Value]) -> float:
    a, b = moved
    return abs(float(b) - float(a)) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else 0.0


def short(rule: str, width: int = 90) -> str:
    """A rule's opening words: up to its first ': ' or '; ', cut at a word under `width` characters."""
    head = rule.split("; ")[0].split(": ")[0]
    if head.count("(") > head.count(")"):  # cut inside a parenthesis: end before it
        head = head[:head.rfind(" (")] if " (" in head else head
    return head if len(head) <= width else head[:width].rsplit(" ", 1)[0] + "…"


def cell(key: str, value: JsonValue) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return f"{len(value)} line{'s' if len(value) != 1 else ''}"
    if key.startswith(BYTES) and isinstance(value, int):
        return gib(value)
    return f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _change(key: str, q: QuantityPayload) -> str:
    """b − a: GiB for bytes (a term one side lacks counts 0), else the number; a percentage of a positive a."""
    a, b = q.a, q.b
    if not q.changed:
        return ""
    if key.startswith("term:"):
        a, b = a or 0, b or 0
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or key.startswith("setting:"):
        return "changed"
    delta = b - a
    text = gib(abs(delta)) if key.startswith(BYTES) else f"{abs(delta):,.2f}" if isinstance(delta, float) \
        else f"{abs(delta):,}"
    sign = "+" if delta > 0 else "−"
    pct = f" ({sign}{abs(delta) * 100 / a:.1f}%)" if a > 0 else ""
    return f"{sign}{text}{pct}"


def diff_tables(p: DiffPayload) -> list[RenderableType]:
    from rich.text import Text

    table = Table(title=f"{p.model}: {p.a} -> {p.b}", title_justify="left", stack="columns")
    for name, justify in (("", "left"), (p.a, "right"), (p.b, "right"), ("change", "right"), ("rules", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for q in p.quantities:
        if q.changed or not q.key.startswith("setting:"):
            table.add_row(q.label, cell(q.key, q.a), cell(q.key, q.b), _change(q.key, q),
                          " ".join(f"[{n}]" for n in q.rules))
    out: list[RenderableType] = [table, *(Text(line) for line in cause_lines(p))]
    for who, answer in ((p.a, p.answers[0]), (p.b, p.answers[1])):
        said = (f"refuses to start: {answer.refusal}",) if answer.refusal else answer.log_lines
        out += [Text(f"{who} {line if answer.refusal else 'logs: ' + line}") for line in said]
    return [*out, Text(p.summary)]


def cause_lines(p: DiffPayload) -> list[str]:
    """The rules that move the answer, numbered as the table cites them; then the changes that move nothing."""
    moving = [c for c in p.causes if c.moves]
    out = ["rules that change the answer:" if moving else "no rule of the rows changes the answer"]
    for c in moving:
        moves = f"moves {', '.join(label(k) for k in c.moves)}"
        out += [f"[{c.number}] {r.release} {c.field}: {r.rule} ({r.source}); {moves}" for r in c.rules] or \
            [f"[{c.number}] {c.release} {c.field}: the row cites no rule for it ({ROWS_NOTE}); {moves}"]
    idle = [f"{c.field} ({c.release})" for c in p.causes if not c.moves]
    if idle:
        out.append(f"changed in the rows, no effect on this answer: {', '.join(idle)}")
    if p.unexplained:
        out.append(f"changed with no single rule behind it: {', '.join(label(k) for k in p.unexplained)}")
    return out
