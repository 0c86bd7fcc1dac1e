"""Sequence lengths for `kvplan waste`: a file of lengths, or a distribution spec.

A file has one length per line (`4k` suffixes allowed; blank lines and `#` comments skipped).
A spec draws N lengths deterministically, at the quantile midpoints (i + 0.5) / N of a distribution,
so the same spec always gives the same lengths (no random seed to pass around):

- ``uniform:LO..HI:N`` — N lengths spread evenly from LO to HI
- ``normal:MEAN,STD:N`` — a normal distribution
- ``lognormal:MEDIAN,SIGMA:N`` — log-normal (SIGMA of the log), the usual shape of chat lengths
- ``fixed:LEN:N`` — N copies of LEN

Lengths are rounded to whole tokens and clamped to [1, max_seq_len].
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

from kvplan.errors import InputError
from kvplan.units import parse_positive_tokens, parse_tokens

SPEC_HELP = "uniform:LO..HI:N, normal:MEAN,STD:N, lognormal:MEDIAN,SIGMA:N or fixed:LEN:N"
MAX_SPEC_LENGTHS = 10_000_000


def read_lengths(path: Path) -> tuple[int, ...]:
    """One length per line; errors name the file and the line."""
    try:
        text_lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a text file of lengths ({type(exc).__name__})", arg="lengths") from None
    lengths = []
    for number, line in enumerate(text_lines, 1):
        text = line.split("#", 1)[0].strip()
        if text:
            try:
                lengths.append(parse_positive_tokens(text, "length"))
            except InputError as exc:
                raise InputError(f"{path}:{number}: {exc}") from None
    if not lengths:
        raise InputError(f"{path} holds no lengths: expected one positive integer per line")
    return tuple(lengths)


def spec_lengths(spec: str, max_seq_len: int) -> tuple[int, ...]:
    """A distribution spec -> N lengths at quantile midpoints, clamped to [1, max_seq_len]."""
    kind, _, rest = spec.partition(":")
    params, colon, count_text = rest.rpartition(":")
    if not colon:  # one colon: KIND:PARAMS with no :N
        raise InputError(f"invalid length spec {spec!r}: it needs a count, KIND:PARAMS:N ({SPEC_HELP})", arg="lengths")
    count = _count(count_text, spec)
    qs = [(i + 0.5) / count for i in range(count)]
    kind = kind.strip().lower()
    if kind == "uniform" and ".." in params:
        lo, hi = (parse_tokens(p.strip()) for p in params.split("..", 1))
        if lo > hi:
            raise InputError(f"invalid length spec {spec!r}: LO is larger than HI")
        values = [lo + i * (hi - lo) / (count - 1) for i in range(count)] if count > 1 else [(lo + hi) / 2]
    elif kind in ("normal", "lognormal") and params.count(",") == 1:
        center, spread = (_number(p, spec) for p in params.split(","))
        dist = NormalDist(math.log(center) if kind == "lognormal" else center, spread)
        values = [dist.inv_cdf(q) for q in qs]
        # exp() past the longest length overflows: clamp in log space first (the result is clamped anyway)
        ceiling = math.log(max_seq_len) + 1
        values = [math.exp(min(v, ceiling)) for v in values] if kind == "lognormal" else values
    elif kind == "fixed" and params:
        values = [float(parse_tokens(params.strip()))] * count
    else:
        raise InputError(f"invalid length spec {spec!r}: expected a file or {SPEC_HELP}")
    return tuple(min(max(1, round(v)), max_seq_len) if math.isfinite(v) else max_seq_len for v in values)


def lengths_from(text: str, max_seq_len: int) -> tuple[int, ...]:
    """`lengths`: an existing file, a comma list of lengths (100,2000,30000; 4k), else a distribution spec."""
    path = Path(text)
    if path.is_file():
        return read_lengths(path)
    if (":" not in text and "," in text) or text.strip().isdigit():  # each length is one request: repeats count
        return tuple(parse_positive_tokens(item.strip(), "lengths") for item in text.split(","))
    if ":" not in text:
        raise InputError(f"lengths {text!r}: no such file, not a comma list of lengths, and not a spec "
                         f"({SPEC_HELP})", arg="lengths")
    return spec_lengths(text, max_seq_len)


def _count(text: str, spec: str) -> int:
    if not text.strip().isdigit() or not 0 < int(text) <= MAX_SPEC_LENGTHS:
        raise InputError(f"invalid length spec {spec!r}: N must be between 1 and {MAX_SPEC_LENGTHS:,}")
    return int(text)


def _number(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"invalid length spec {spec!r}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(f"invalid length spec {spec!r}: {text!r} is not a finite number", arg="lengths")
    if value <= 0:
        raise InputError(f"invalid length spec {spec!r}: {text!r} must be positive")
    return value
