"""Typed payload and tables of ``kvplan engines``: the releases kvplan follows and what changed in each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.engines.listing import ReleaseChange, ReleaseInfo
from kvplan.render.tables import Table


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleasePayload:
    name: str
    label: str
    newest: bool
    aliases: tuple[str, ...]
    source: str
    changes: tuple[ReleaseChange, ...]  # {rule, source}: kvplan.engines.listing's rows as they are


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineReleases:
    engine: str
    releases: tuple[ReleasePayload, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EnginesPayload:
    """{"engines": [{"engine", "releases": [{name, label, newest, aliases, source, changes: [{rule, source}]}]}]}."""

    engines: tuple[EngineReleases, ...]


def engines_payload(releases: Sequence[ReleaseInfo]) -> EnginesPayload:
    engines: dict[str, list[ReleasePayload]] = {}
    for r in releases:
        engines.setdefault(r.engine, []).append(ReleasePayload(name=r.name, label=r.label, newest=r.newest,
                                                               aliases=r.aliases, source=r.source, changes=r.changes))
    return EnginesPayload(engines=tuple(EngineReleases(engine=name, releases=tuple(rows))
                                        for name, rows in engines.items()))


def engines_tables(payload: EnginesPayload) -> list[Table]:
    """One table per engine: a row per change (the release named on its first), oldest release first."""
    tables = []
    for engine in payload.engines:
        table = Table(title=f"{engine.engine}: releases kvplan follows (--engine NAME)", title_justify="left")
        for header, wrap in (("release", False), ("what changed from the release before", True), ("source", True)):
            table.add_column(header, wrap=wrap)
        for r in engine.releases:
            name = r.name + (" (newest)" if r.newest else "")
            changes = r.changes or (ReleaseChange(rule="first release kvplan follows", source=r.source),)
            for i, change in enumerate(changes):
                table.add_row(name if i == 0 else "", change.rule, change.source)
        tables.append(table)
    return tables


def engines_summary(payload: EnginesPayload) -> list[Table]:
    """`kvplan engines` without a release asked: one row per engine (the rules of each release: --release NAME,
    --engine NAME or --json)."""
    table = Table(title="engine releases kvplan follows (each one's rules: --release NAME)",
                  title_justify="left")
    for header in ("engine", "releases", "oldest", "newest (default)", "rules"):
        table.add_column(header, justify="right" if header in ("releases", "rules") else "left")
    for engine in payload.engines:
        rows = engine.releases
        newest = next((r.name for r in rows if r.newest), rows[-1].name)
        table.add_row(engine.engine, f"{len(rows):,}", rows[0].name, newest, f"{sum(len(r.changes) for r in rows):,}")
    return [table]
