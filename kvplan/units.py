"""Parsing and rounding of sizes: tokens (`4k` = 4,096) and bytes (`80GiB`, `80GB`).

Token suffixes are binary (k = 1,024), as context lengths are quoted (`128k` = 131,072).
Byte suffixes follow their names: `GiB` = 2**30, `GB` = 10**9.
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvplan.errors import InputError

_TOKEN_SUFFIX = {"": 1, "k": 1024, "m": 1024**2}
_BYTE_SUFFIX = {
    "": 1, "b": 1,
    "k": 1024, "kib": 1024, "kb": 1000,
    "m": 1024**2, "mib": 1024**2, "mb": 1000**2,
    "g": 1024**3, "gib": 1024**3, "gb": 1000**3,
    "t": 1024**4, "tib": 1024**4, "tb": 1000**4,
}
# At most 30 digits either side of the point: exact arithmetic below, no giant-integer parsing.
_NUMBER = re.compile(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*$", re.ASCII)
GIB = 1024**3


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for non-negative integers."""
    return -(-a // b)


def _parse(text: str, table: dict[str, int], what: str, example: str, round_down: bool = False) -> int:
    match = _NUMBER.match(str(text))
    if not match or match.group(2).lower() not in table:
        raise InputError(f"invalid {what} {text!r}: expected a positive number like {example}")
    value = Fraction(match.group(1)) * table[match.group(2).lower()]  # exact: no float rounding
    if value.denominator != 1 and not round_down:
        raise InputError(f"invalid {what} {text!r}: not a whole number")
    return int(value)


def parse_tokens(text: str | int) -> int:
    """`4096`, `4k`, `128k`, `1.5k`, `1m` -> tokens (k = 1,024)."""
    if isinstance(text, int):
        return text
    return _parse(text, _TOKEN_SUFFIX, "token count", "4096, 4k or 128k")


def parse_bytes(text: str | int) -> int:
    """`1073741824`, `80GiB`, `80GB`, `12.13GiB` -> bytes (GiB = 2**30, GB = 10**9), rounded down."""
    if isinstance(text, int):
        return text
    # Engines log rounded sizes ("12.13 GiB"): a fraction of a byte is dropped, not refused.
    return _parse(text, _BYTE_SUFFIX, "size in bytes", "80GiB, 80GB or 1073741824", round_down=True)


def parse_positive_tokens(text: str | int, name: str) -> int:
    """parse_tokens, refusing zero and negative values with the option's name."""
    try:
        value = parse_tokens(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    if value <= 0:
        raise InputError(f"{name} must be positive, got {text!r}")
    return value


def format_gib(num_bytes: float, digits: int = 2, grouped: bool = False) -> str:
    """Bytes as GiB (2**30) with `digits` decimals, without the unit: the one GiB formatter."""
    return f"{num_bytes / GIB:,.{digits}f}" if grouped else f"{num_bytes / GIB:.{digits}f}"
