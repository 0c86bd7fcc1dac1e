"""What changes between two releases of one engine, field by field of their rows, each with the rule that changed it.

An engine's releases are a chain of rows (vLLM ``vllm/rows.py`` + ``rows_late.py``, SGLang ``sglang/releases.py``,
TRT-LLM ``trtllm.py``), each the previous one plus the rules its release introduced. ``field_changes(engine, a, b)``
walks the chain between the two rows and, for every field whose value differs, names the step releases that set it
and the rule each cites (the rule text and its release file:line): a vLLM row lists several rules per release, so
``vllm/field_rules.py`` says which rule sets which field; an SGLang or TRT-LLM row has one ``changes`` text. The rows
are compared in either direction (a downgrade cites the rules the older release lacks).

``with_field`` gives a profile whose row has one field set to another value: what ``kvplan diff`` replans with to
see what each step moves.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass, fields, replace
from itertools import pairwise
from typing import Any

from kvplan.engines.protocol import Engine

# Fields that name or describe a row rather than rule on anything.
BOOKKEEPING = frozenset({"key", "label", "release", "changes", "source"})
# engine -> (module, attribute): the rows of every release, oldest first
_CHAINS = {"vllm": ("kvplan.engines.vllm.field_rules", "CHAIN"), "sglang": ("kvplan.engines.sglang.releases", "ROWS"),
           "trtllm": ("kvplan.engines.trtllm", "RELEASES")}


@dataclass(frozen=True, kw_only=True)
class RuleCite:
    """One rule a release introduced: the release that first has it, the rule, and where its code has it."""

    release: str  # the row's key (vLLM 0.29, SGLang 0.5.3)
    rule: str
    source: str  # release and file:line


@dataclass(frozen=True, kw_only=True)
class Step:
    """One release of the chain where the field changed: its value after that release, and the rules behind it."""

    release: str
    value: Any
    rules: tuple[RuleCite, ...]


@dataclass(frozen=True, kw_only=True)
class FieldChange:
    """A row field whose value differs between two releases; ``steps`` walk from the first release to the second."""

    field: str
    before: Any  # the first release's value
    after: Any  # the second release's
    steps: tuple[Step, ...]

    @property
    def rules(self) -> tuple[RuleCite, ...]:
        return tuple(r for s in self.steps for r in s.rules)


def chain(engine: str) -> tuple[Any, ...]:
    """The rows of an engine's releases, oldest first (() for an engine without release rows)."""
    where = _CHAINS.get(engine)
    if where is None:
        return ()
    found = getattr(importlib.import_module(where[0]), where[1])
    return tuple(found.values() if isinstance(found, dict) else found)


def row_fields(row: Any) -> tuple[str, ...]:
    """The fields of a row that rule on something (not its key, label or citations)."""
    return tuple(f.name for f in fields(row) if f.name not in BOOKKEEPING)


def field_changes(engine: str, release_a: str, release_b: str) -> tuple[FieldChange, ...]:
    """Every rule field that differs between two releases of `engine` (row keys: ``field_changes("vllm", "0.25",
    "0.29")``), each with the releases between them that changed it and their rules; () for equal rows, different
    engines' rows, or an engine without release rows."""
    rows = chain(engine)
    keys = [r.key for r in rows]
    if release_a not in keys or release_b not in keys:
        return ()
    a, b = keys.index(release_a), keys.index(release_b)
    lo, hi = min(a, b), max(a, b)
    path = rows[lo:hi + 1] if a <= b else rows[lo:hi + 1][::-1]
    out = []
    for name in row_fields(rows[a]):
        before, after = getattr(rows[a], name), getattr(rows[b], name)
        steps = _steps(engine, path, name, forward=a <= b)
        if before != after or steps:
            out.append(FieldChange(field=name, before=before, after=after, steps=steps))
    return tuple(out)


def _steps(engine: str, path: tuple[Any, ...], name: str, forward: bool) -> tuple[Step, ...]:
    """Where along `path` the field changes: each step's value, cited by the newer row of the pair (going back, the
    rule the older release lacks)."""
    out = []
    for prev, row in pairwise(path):
        if getattr(prev, name) != getattr(row, name):
            newer = row if forward else prev
            out.append(Step(release=newer.key, value=getattr(row, name), rules=rules_for(engine, newer, name)))
    return tuple(out)


def rules_for(engine: str, row: Any, name: str) -> tuple[RuleCite, ...]:
    """The rules of `row` that set field `name`: a one-text row's rule, or the vLLM rules ``field_rules`` maps it to
    (every rule of the release where none is mapped)."""
    if isinstance(row.changes, str):
        return (RuleCite(release=row.key, rule=row.changes, source=row.source),)
    if engine == "vllm":
        from kvplan.engines.vllm.field_rules import rules_setting

        return tuple(RuleCite(release=row.key, rule=c.rule, source=c.source) for c in rules_setting(row, name))
    return tuple(RuleCite(release=row.key, rule=c.rule, source=c.source) for c in row.changes)


def with_field(profile: Engine, name: str, value: Any) -> Engine:
    """A copy of `profile` whose release row has `name` set to `value` (the rest of the row, and the profile, as
    they were)."""
    row = getattr(profile, "release", None)
    if row is None or name not in row_fields(row):
        raise ValueError(f"{type(profile).__name__} has no release row field {name!r}")
    changed = copy.copy(profile)
    changed.release = replace(row, **{name: value})  # type: ignore[attr-defined]
    return changed
