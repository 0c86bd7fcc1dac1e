"""Results -> JSON payloads, rich tables, explanations and plots. The only place bytes become GiB.

Every command builds one typed payload (frozen dataclasses whose field names are the JSON keys) from a
frozen result; ``--json`` prints it through ``kvplan.render.payload.plain`` and the tables read the same
object's attributes, so the two never disagree. Nothing here builds a layout or plans
capacity: it reads what the library returned. Plots (``plot``) need matplotlib and are imported by
the CLI only.
"""

from __future__ import annotations

import json

from kvplan.render.payload import plain
from kvplan.units import GIB, format_gib


def gib(num_bytes: int | float) -> str:
    """`12.13 GiB`, with thousands separators."""
    return f"{format_gib(num_bytes, grouped=True)} GiB"


def gib_number(num_bytes: int | float) -> str:
    """GiB without the unit, for columns whose header carries it."""
    return format_gib(num_bytes, grouped=True)


def human_bytes(num_bytes: int | float) -> str:
    """Binary units: KiB below 1 MiB, MiB below 1 GiB, else GiB."""
    for unit, size in (("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024)):
        if num_bytes >= size:
            return f"{num_bytes / size:,.2f} {unit}"
    return f"{num_bytes:,} B"


def to_json(payload: object) -> str:
    """A payload (kvplan.render.payload: typed dataclasses) as indented JSON."""
    return json.dumps(plain(payload), indent=2)
