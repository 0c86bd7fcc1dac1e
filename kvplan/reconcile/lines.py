"""The pieces a start-up log's line table is made of (``formats.py`` and ``vllm_lines.py`` hold the tables).

A number pattern's named groups are the values it sets. The group name carries the unit:
``…_gib`` is a size printed in GiB (SGLang and vLLM V0 write "GB" for it: ``/ (1 << 30)``),
``…_bytes`` a size in bytes, anything else a count or a ratio. ``decimals`` is the printed
precision where the digits shown can be fewer (vLLM's ``round(x, 2)`` prints 15.0 for 15.00).
A pattern no collected log shows carries ``example``: the line the engine's own format string prints
(with the release and file:line it was read from), so that the table holds no guessed shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUM = r"[\d.]+"
SNUM = r"-?[\d.]+"  # a size that may be negative (vLLM prints a negative KV budget before it refuses)
INT = r"\d[\d,]*"


@dataclass(frozen=True, slots=True)
class LinePattern:
    kind: str  # the record it makes
    regex: re.Pattern[str]
    site: str  # where the engine prints it
    decimals: int | None = None  # printed precision when the digits shown can be fewer
    example: str | None = None  # the engine's format string filled in, where no collected log shows the line


@dataclass(frozen=True, slots=True)
class SettingPattern:
    setting: str
    regex: re.Pattern[str]
    percent: bool = False  # "99.0%" -> 0.99
    value: str | None = None  # the setting's value when the line itself is the evidence (a warning)


@dataclass(frozen=True, slots=True)
class EngineFormat:
    engine: str  # kvplan's engine name
    label: str
    detect: tuple[re.Pattern[str], ...]
    versions: tuple[re.Pattern[str], ...]
    numbers: tuple[LinePattern, ...]
    settings: tuple[SettingPattern, ...]
    worker: re.Pattern[str]  # the prefix naming the process that printed a line
    markers: tuple[str, ...] = ()  # wording that dates a log (V0 lines of vLLM 0.6-0.7 print no bracketed site)
    bare_rank: bool = False  # the worker prefix names a bare rank number (TensorRT-LLM's "[RANK 3]")
    dated_by_sites: bool = False  # a log without a version is placed by its print sites, a V0 log on a V0 row (vLLM)


def line(kind: str, pattern: str, site: str, decimals: int | None = None, example: str | None = None) -> LinePattern:
    return LinePattern(kind, re.compile(pattern), site, decimals, example)


def setting(name: str, *patterns: str, percent: bool = False, value: str | None = None) -> tuple[SettingPattern, ...]:
    return tuple(SettingPattern(name, re.compile(p), percent, value) for p in patterns)


def compiled(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)
