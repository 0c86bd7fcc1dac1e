"""Payload and tables of ``kvplan engines``: the releases kvplan follows and what changed in each."""

from __future__ import annotations

from typing import Any

from kvplan.engines.listing import ReleaseInfo
from kvplan.render.tables import Table


def engines_payload(releases: list[ReleaseInfo]) -> dict[str, Any]:
    """{"engines": [{"engine", "releases": [{name, label, newest, aliases, source, changes: [{rule, source}]}]}]}."""
    engines: dict[str, list[dict[str, Any]]] = {}
    for r in releases:
        engines.setdefault(r.engine, []).append({
            "name": r.name, "label": r.label, "newest": r.newest, "aliases": list(r.aliases), "source": r.source,
            "changes": [{"rule": c.rule, "source": c.source} for c in r.changes]})
    return {"engines": [{"engine": name, "releases": rows} for name, rows in engines.items()]}


def engines_tables(payload: dict[str, Any]) -> list[Table]:
    """One table per engine: a row per change (the release named on its first), oldest release first."""
    tables = []
    for engine in payload["engines"]:
        table = Table(title=f"{engine['engine']}: releases kvplan follows (--engine NAME)", title_justify="left")
        for header, wrap in (("release", False), ("what changed from the release before", True), ("source", True)):
            table.add_column(header, wrap=wrap)
        for r in engine["releases"]:
            name = r["name"] + (" (newest)" if r["newest"] else "")
            changes = r["changes"] or [{"rule": "first release kvplan follows", "source": r["source"]}]
            for i, change in enumerate(changes):
                table.add_row(name if i == 0 else "", change["rule"], change["source"])
        tables.append(table)
    return tables
