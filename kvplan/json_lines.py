"""JSON files written an entry a line, read an entry at a time.

kvplan's large data files (the class defaults, the weight tables' index, each engine's launch flags) are JSON whose
big objects the tools that build them write one entry a line. A run reads one or two entries of hundreds: parsing
the whole file was up to a fortieth of `kvplan capacity`'s start-up, so the entry's line is found and parsed alone.
"""

from __future__ import annotations

import json
from typing import Any

ABSENT: Any = object()  # what `entry` gives for a key with no line


def entry(text: str, key: str, *, indent: str, separator: str = ": ", start: int = 0, end: int | None = None) -> Any:
    """The value written on `key`'s line (``\\n{indent}"key"{separator}value``, a trailing comma dropped) between
    `start` and `end` of `text`; ``ABSENT`` where there is none."""
    marker = f"\n{indent}{json.dumps(key)}{separator}"
    at = text.find(marker, start, len(text) if end is None else end)
    if at < 0:
        return ABSENT
    return line_value(text, at + len(marker))


def line_value(text: str, start: int) -> Any:
    """The JSON value written from `start` to the end of its line (a trailing comma dropped)."""
    line_end = text.find("\n", start)
    return json.loads(text[start:line_end if line_end >= 0 else None].removesuffix(","))
