"""The releases kvplan follows, per engine, and what changed in each (``kvplan engines``).

Read from ``REGISTRY`` generically: every ``engine@release`` name is one release row of its engine's module
(the name users type, the label plans carry, the row's ``source``). What changed from the previous row is the
row's own ``changes`` (rule + the release's file:line; vLLM's rows say it), else the fields whose value differs
from the previous row of the same engine, with the row's source. Rows are ordered by their release numbers.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any

from kvplan.engines import ALIASES, ENGINE_NAMES, _lookup, registry
from kvplan.engines.version import Version
from kvplan.errors import InputError


@dataclass(frozen=True, kw_only=True)
class ReleaseChange:
    rule: str
    source: str


@dataclass(frozen=True, kw_only=True)
class ReleaseInfo:
    engine: str
    name: str  # what --engine takes (engine@key)
    key: str
    label: str  # EnginePlan.version
    newest: bool  # the bare engine name plans with it
    source: str
    changes: tuple[ReleaseChange, ...]
    aliases: tuple[str, ...] = ()  # other names that reach the same row (vllm@0.5 style)


def _row(module: str, cls: str, key: str) -> tuple[str, Any]:
    profile = getattr(importlib.import_module(module), cls)(key)
    return str(profile.version), getattr(profile, "release", None)


def _diff(row: Any, previous: Any) -> tuple[ReleaseChange, ...]:
    """Fields whose value differs from the previous row (rows without their own change list)."""
    if previous is None or type(row) is not type(previous) or not dataclasses.is_dataclass(row):
        return ()
    skip = {"key", "label", "source", "changes", "release"}
    source = str(getattr(row, "source", ""))
    return tuple(ReleaseChange(rule=f"{f.name}: {getattr(previous, f.name)!r} -> {getattr(row, f.name)!r}",
                               source=source)
                 for f in dataclasses.fields(row) if f.name not in skip
                 and getattr(row, f.name) != getattr(previous, f.name))


def _own(row: Any) -> tuple[ReleaseChange, ...]:
    """A row's own change list: vLLM's (rule, source) pairs, or one sentence and the row's source (SGLang, TRT-LLM).
    A release that follows the previous release's row (SGLang 0.5.5 on 0.5.4's) has none of its own."""
    changes = getattr(row, "changes", ()) or ()
    if isinstance(changes, str):
        return (ReleaseChange(rule=changes, source=str(getattr(row, "source", ""))),)
    return tuple(ReleaseChange(rule=c.rule, source=c.source) for c in changes)


def _selected(engines: list[str] | None) -> tuple[set[str], set[tuple[str, str]]]:
    """(engines, (module, release key) rows) asked for; an unknown name is an input error naming the known ones."""
    names: set[str] = set()
    rows: set[tuple[str, str]] = set()
    for asked in engines or ["all"]:
        for one in (s.strip().lower() for s in asked.split(",") if s.strip()):
            found = None if one == "all" else _lookup(one)
            if one == "all":
                names |= set(ENGINE_NAMES)
            elif found is None:
                raise InputError(f"unknown engine {one!r}; choose one of: {', '.join(ENGINE_NAMES)}, all, or a release "
                                 f"({', '.join(n for n in registry() if '@' in n)})", arg="engine")
            elif "@" in one:
                rows.add((found[0], found[2]))
            else:
                names.add(ALIASES.get(one, one))
    return names, rows


def engine_releases(engines: list[str] | None = None) -> list[ReleaseInfo]:
    """Every release row of the engines asked (all by default), oldest first within an engine."""
    names, releases = _selected(engines)
    rows: dict[tuple[str, str, str], list[str]] = {}
    for name, target in registry().items():
        rows.setdefault(target, []).append(name)
    out: list[ReleaseInfo] = []
    for engine in ENGINE_NAMES:
        mine = [(t, n, *_row(*t)) for t, n in rows.items() if n[0].split("@")[0] == engine]
        mine.sort(key=lambda r: Version.parse(str(getattr(r[3], "release", "") or r[0][2])).order())
        previous = None
        for (module, _, key), called, label, row in mine:
            own = _own(row) if row is not previous else (ReleaseChange(
                rule="no rule kvplan follows changed (the release before's row)", source=str(getattr(row, "source", ""))),)
            info = ReleaseInfo(engine=engine, name=f"{engine}@{key}", key=key, label=label,
                               newest=engine in called, source=str(getattr(row, "source", "") or ""),
                               changes=own or _diff(row, previous), aliases=tuple(n for n in called if "@" in n
                                                                                  and n != f"{engine}@{key}"))
            previous = row
            if engine in names or (module, key) in releases:
                out.append(info)
    return out
