"""Parsing and rounding of sizes: tokens (`4k` = 4,096) and bytes (`80GiB`, `80GB`).

Token suffixes are binary (k = 1,024), as context lengths are quoted (`128k` = 131,072).
Byte suffixes follow their names: `GiB` = 2**30, `GB` = 10**9.
"""

from __future__ import annotations

import math
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
MIB = 1024**2
# Token counts beyond this are typos: the longest configured context (Llama 4 Scout's 10M tokens) is under 2**24.
MAX_TOKENS = 2**31
MAX_COUNT = 2**31  # the same bound for counts of sequences and requests


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
    """parse_tokens, refusing zero, negative values and lengths past MAX_TOKENS with the option's name."""
    try:
        value = parse_tokens(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}", arg=name) from None
    if value <= 0:
        raise InputError(f"{name} must be positive, got {text!r}", arg=name)
    if value > MAX_TOKENS:
        raise InputError(f"{name} {text!r} is beyond any model's length: kvplan takes at most 2**31 = "
                         f"{MAX_TOKENS:,} tokens", arg=name)
    return value


def parse_count(text: str | int, name: str) -> int:
    """A positive whole number of things (sequences, requests, GPUs): `64`, `4k` = 4,096; at most MAX_COUNT."""
    match = _NUMBER.match(str(text))
    if not match or match.group(2).lower() not in _TOKEN_SUFFIX:
        raise InputError(f"{name} must be a whole number like 64 or 4k, got {text!r}", arg=name)
    value = Fraction(match.group(1)) * _TOKEN_SUFFIX[match.group(2).lower()]
    if value.denominator != 1:
        raise InputError(f"{name} must be a whole number, got {text!r}", arg=name)
    if value <= 0:
        raise InputError(f"{name} must be positive, got {text!r}", arg=name)
    if value > MAX_COUNT:
        raise InputError(f"{name} must be at most 2**31 = {MAX_COUNT:,}, got {text!r}", arg=name)
    return int(value)


def parse_memory_size(text: str | int, name: str) -> int:
    """parse_bytes for a memory size (GPU memory, KV budget, overhead): 0, or at least 1 MiB. A bare `80` is
    80 bytes, which nobody means: it is refused with the unit it probably lacks."""
    try:
        value = parse_bytes(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}", arg=name) from None
    check_memory_size(value, str(text), name)
    return value


def parse_gib_size(text: str | int, name: str) -> int:
    """A host-memory size as vLLM and LMCache take it: a bare number is GiB (`10` = 10 GiB), a size keeps its unit
    (`10GiB`, `512MiB`)."""
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", str(text)):
        return int(float(text) * GIB)
    try:
        return parse_bytes(str(text))
    except InputError as exc:
        raise InputError(f"{name}: {exc}", arg=name) from None


def check_memory_size(value: int, text: str, name: str) -> None:
    """Refuse 0 < value < 1 MiB: `80` -> "did you mean 80GiB?"."""
    if 0 < value < MIB:
        match = _NUMBER.match(text)
        hint = f"did you mean {match.group(1)}GiB?" if match and not match.group(2) else "give at least 1MiB"
        raise InputError(f"{name} {text.strip()!r} is {value:,} B, under 1 MiB: {hint}", arg=name)


def format_floor(value: float, digits: int = 2) -> str:
    """`70.995` -> `70.99`, with thousands separators: a count shown with decimals is cut, never rounded up, so
    it cannot read more than the whole requests beside it (70.995 requests per replica serve 70, not "71.00")."""
    if not math.isfinite(value):
        return f"{value:,.{digits}f}"
    from decimal import ROUND_FLOOR, Decimal

    cut = Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_FLOOR)  # repr: 0.29 stays 0.29
    return f"{cut:,.{digits}f}"


def format_gib(num_bytes: float, digits: int = 2, grouped: bool = False) -> str:
    """Bytes as GiB (2**30) with `digits` decimals, without the unit: the one GiB formatter."""
    return f"{num_bytes / GIB:,.{digits}f}" if grouped else f"{num_bytes / GIB:.{digits}f}"
