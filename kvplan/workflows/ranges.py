"""Sweep axes from the command line: `1k..128k` doubles from 1k to 128k; `1,2,4` is a list.

Items of a comma list may themselves be ranges (`1..8,12,16k`). Values keep their first-seen
order and duplicates are dropped, so a sweep never repeats a point.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from kvplan.errors import InputError
from kvplan.units import parse_positive_tokens

T = TypeVar("T", int, str)
MAX_RANGE_VALUES = 64  # a doubling range past this many values is a typo, not a plan


def doubling(first: int, last: int, name: str) -> tuple[int, ...]:
    """first, 2·first, 4·first, … up to last; `last` is included even if it is not first·2^k."""
    if first > last:
        raise InputError(f"{name} range {first}..{last} is empty: the start is larger than the end", arg=name)
    values = [first]
    while values[-1] * 2 <= last and len(values) < MAX_RANGE_VALUES:
        values.append(values[-1] * 2)
    if values[-1] != last:
        values.append(last)
    return tuple(values)


def parse_int_axis(text: str, name: str,
                   parse: Callable[[str, str], int] = parse_positive_tokens) -> tuple[int, ...]:
    """`1k..128k` | `1,2,4` | `1..8,12` -> positive ints (suffixes allowed: 4k = 4,096). `parse` reads one
    value: token counts by default; units.parse_count for counts (batch, tp, pp)."""
    values: list[int] = []
    for item in _items(text, name):
        lo, dots, hi = item.partition("..")
        if dots:
            values += doubling(parse(lo, name), parse(hi, name), name)
        elif _dashed(item):
            first, _, last = item.partition("-")
            raise InputError(f"{name} {item!r}: a range is written {first}..{last} (doubling from {first} to "
                             f"{last}), a list 1,2,4", arg=name)
        else:
            values.append(parse(item, name))
    return _unique(values)


def _dashed(item: str) -> bool:
    """`1k-128k`: a range written with a dash (two numbers, as a token count or a count reads them)."""
    return bool(re.fullmatch(r"\d+(\.\d+)?[kKmM]?-\d+(\.\d+)?[kKmM]?", item.strip()))


def parse_str_axis(text: str, name: str) -> tuple[str, ...]:
    """`bf16,fp8` -> ("bf16", "fp8")."""
    return _unique(_items(text, name))


def _items(text: str, name: str) -> list[str]:
    items = [part.strip() for part in str(text).split(",")]
    if not all(items):
        raise InputError(f"invalid {name} {text!r}: expected a comma list like 1,2,4 or a range like 1k..128k",
                         arg=name)
    return items


def _unique(values: list[T]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(values))
