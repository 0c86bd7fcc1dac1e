"""Start-up log text -> a frozen ``StartupLog``: the engine and version, the settings the log
prints, and every KV-related number with the line and the process that printed it.

Pure: text in, records out; nothing here reads files or plans anything. Which lines mean what
is ``formats.py``'s table; this module only applies it.

Logs are read as published: terminal colour codes (``ESC[1;36m``, or ``#033[1;36m`` where a capture
escaped them) are stripped, and a record that its capture wrapped is joined back before matching: a
line that starts no record continues the one before when it is indented (an author's wrapping: joined
with one space) or when the line before is as long as a terminal's width (a hard wrap: joined as is).
A record keeps the number of its first physical line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from kvplan.errors import InputError
from kvplan.reconcile.formats import FORMATS
from kvplan.reconcile.lines import EngineFormat

GIB = 1 << 30
_UNITS = (("_gib", "GiB"), ("_bytes", "B"))
_SOURCE = re.compile(r"\b(\w+\.py:\d+)\]")
_SITE = re.compile(r"\[(\w+\.py:\d+)\] ?(.*)$")
_ANSI = re.compile(r"(?:\x1b|#033)\[[0-9;]*m")
# where a log record starts: a level, a "[date" or "[TensorRT-LLM]" stamp, a "(process pid=N)" prefix
_RECORD = re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|\[\d{4}-\d\d-\d\d|\[\d\d/\d\d/\d{4}|"
                     r"\[(?:TensorRT-LLM|TRT-LLM)\]|^\s*\(\w[\w ]*pid=\d+")
WRAP_COLUMNS = 100  # a physical line at least this long that the next one continues was hard-wrapped
_WORKER_RANK = re.compile(r"(?:^|_|\s)(PP\d+|TP\d+|rank=\d+|DP\d+)")  # DP: the engine core, not a worker


@dataclass(frozen=True, slots=True)
class Number:
    """One number as the log printed it."""

    name: str  # e.g. "kv_budget" (the unit suffix is in `unit`)
    text: str
    unit: str  # "GiB", "B" or "" (a count or a ratio)
    decimals: int  # printed precision (digits after the point the engine rounded to)

    @property
    def value(self) -> Fraction:
        return Fraction(self.text.replace(",", ""))

    @property
    def half_unit(self) -> Fraction:
        """Half of the last printed digit: the value lies within ± this."""
        return Fraction(1, 2 * 10**self.decimals) if self.decimals else Fraction(0)

    def bytes_range(self) -> tuple[Fraction, Fraction]:
        """The bytes a size printed in GiB (or bytes) may have been."""
        scale = GIB if self.unit == "GiB" else 1
        return (self.value - self.half_unit) * scale, (self.value + self.half_unit) * scale


@dataclass(frozen=True, slots=True)
class Record:
    """One matched line: its kind (formats.py), line number, the process that printed it."""

    kind: str
    line: int  # 1-based
    worker: str | None
    numbers: tuple[Number, ...]
    site: str  # where the engine prints it (formats.py)
    source: str | None = None  # the "file.py:N" the log line itself shows, if any
    seq: int = 0  # the record's place among the log's records (wrapped lines joined)

    def get(self, name: str) -> Number | None:
        return next((n for n in self.numbers if n.name == name), None)


@dataclass(frozen=True, kw_only=True)
class StartupLog:
    engine: str  # kvplan engine name: vllm, sglang, trtllm
    label: str
    version: str | None
    settings: tuple[tuple[str, str], ...]  # (setting, value as printed), first by pattern priority
    records: tuple[Record, ...]
    sites: tuple[tuple[str, str], ...] = ()  # ("gpu_worker.py:436", the message) of each "[file.py:N]" line
    markers: tuple[str, ...] = ()  # dating wording the log holds (formats: EngineFormat.markers)

    def setting(self, name: str) -> str | None:
        return next((v for k, v in self.settings if k == name), None)

    def numbers(self, name: str) -> tuple[tuple[Record, Number], ...]:
        """Every printed value called `name`, in log order, with the record it came from."""
        return tuple((r, n) for r in self.records for n in r.numbers if n.name == name)

    def of_kind(self, kind: str) -> tuple[Record, ...]:
        return tuple(r for r in self.records if r.kind == kind)


def _scores(lines: list[str]) -> dict[str, int]:
    return {name: sum(1 for line in lines if any(p.search(line) for p in fmt.detect)) for name, fmt in FORMATS.items()}


def detect_engine(lines: list[str], forced: str | None = None) -> EngineFormat:
    """The engine whose lines the log holds most of (or the one forced: an engine, or a release of one, vllm@0.25,
    whose log it must be)."""
    scores = _scores(lines)
    best = max(scores, key=lambda name: scores[name])
    if forced is not None:
        key = forced.strip().lower().partition("@")[0].replace("-", "").replace("tensorrtllm", "trtllm")
        if key not in FORMATS:
            raise InputError(f"unknown engine {forced!r}; reconcile reads vllm, sglang and trtllm logs", arg="engine")
        if scores[key] == 0 and scores[best] > 0:
            raise InputError(f"engine {forced} (given), but the log holds no {FORMATS[key].label} start-up line: it "
                             f"is a {FORMATS[best].label} log", arg="engine")
        return FORMATS[key]
    if scores[best] == 0:
        raise InputError("no vLLM, SGLang or TensorRT-LLM start-up line found in the log; pass engine if it is "
                         "one of them", arg="engine")
    return FORMATS[best]


def _number(name: str, text: str, decimals: int | None) -> Number:
    unit = next((u for suffix, u in _UNITS if name.endswith(suffix)), "")
    base = name.removesuffix("_gib").removesuffix("_bytes")
    printed = len(text.partition(".")[2])
    if decimals is None or unit != "GiB":  # `decimals` is the rounding of sizes; counts print every digit
        return Number(base, text, unit, printed)
    return Number(base, text, unit, max(decimals, printed))


def worker_of(line: str, fmt: EngineFormat) -> str | None:
    """'TP3' or 'PP1 TP0' for a worker's line, 'pid 534' for an unnamed worker, None for the
    engine's own process (vLLM's EngineCore or API server, SGLang's and TRT-LLM's unranked lines).
    The innermost prefix names it: "(EngineCore_0 pid=1) (RayWorkerWrapper pid=345, ip=10.0.0.2)"."""
    prefixes = list(fmt.worker.finditer(line))
    if not prefixes:
        return None
    found = prefixes[-1]
    who = found.group("who")
    ranks = [r.replace("rank=", "rank ") for r in _WORKER_RANK.findall(who) if not r.startswith("DP")]
    if ranks:
        return " ".join(ranks)
    if fmt.bare_rank:
        return f"rank {who}"
    ip = found.groupdict().get("ip")
    return f"pid {found.group('pid')}{' @' + ip if ip else ''}" if "Worker" in who else None


def rank_key(worker: str | None) -> tuple[int, ...]:
    """Sort key of a worker label: 'PP1 TP0' -> (1, 0); unnamed workers keep their order."""
    return tuple(int("".join(c for c in part if c.isdigit()) or 0) for part in (worker or "").split())


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, text) of each record, colour codes stripped and wrapped records joined."""
    out: list[tuple[int, str]] = []
    previous = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _ANSI.sub("", raw)
        if out and not _RECORD.search(line) and (line[:1].isspace() or len(previous) >= WRAP_COLUMNS):
            first, joined = out[-1]
            out[-1] = (first, f"{joined.rstrip()} {line.strip()}" if line[:1].isspace() else joined + line)
        else:
            out.append((number, line))
        previous = line
    return out


def parse_records(lines: list[tuple[int, str]], fmt: EngineFormat) -> tuple[Record, ...]:
    out = []
    for seq, (number, line) in enumerate(lines):
        for pattern in fmt.numbers:
            found = pattern.regex.search(line)
            if found is None:
                continue
            values = tuple(_number(k, v, pattern.decimals) for k, v in found.groupdict().items() if v is not None)
            source = _SOURCE.search(line)
            out.append(Record(pattern.kind, number, worker_of(line, fmt), values, pattern.site,
                              source.group(1) if source else None, seq))
    return tuple(out)


def parse_settings(lines: list[str], fmt: EngineFormat) -> tuple[tuple[str, str], ...]:
    """Each setting from the first of its patterns (in table order) that any line matches; a warning that is
    itself the evidence sets the pattern's value."""
    found: dict[str, str] = {}
    for pattern in fmt.settings:
        if pattern.setting in found:
            continue
        hit = next((h for line in lines if (h := pattern.regex.search(line))), None)
        if hit is None:
            continue
        value = pattern.value or hit.group(1)
        if value != "None":
            found[pattern.setting] = str(Decimal(value) / 100) if pattern.percent else value
    return tuple(found.items())


def parse_version(lines: list[str], fmt: EngineFormat) -> str | None:
    for pattern in fmt.versions:
        for line in lines:
            hit = pattern.search(line)
            if hit:
                return hit.group(1).removeprefix("v")
    return None


def _span(records: tuple[Record, ...]) -> str:
    first, last = records[0].line, records[-1].line
    return f"line {first}" if first == last else f"lines {first}-{last}"


def single_engine(numbered: list[tuple[int, str]], fmt: EngineFormat, records: tuple[Record, ...]) -> None:
    """Refuse a log that also holds another engine's start-up: its KV lines and lines only that engine prints.
    Which lines belong to which start-up cannot be told apart reliably (two servers may write to one file, and a
    setting one engine prints may match another's pattern), so none is guessed: one engine's log at a time."""
    for other in FORMATS.values():
        if other is fmt:
            continue
        theirs = parse_records(numbered, other)
        if theirs and any(p.search(line) for _, line in numbered for p in other.detect):
            raise InputError(f"the log holds two engines' start-ups: {fmt.label} (KV numbers on {_span(records)}) and "
                             f"{other.label} (KV numbers on {_span(theirs)}); reconcile reads one engine's start-up "
                             "log: give each part on its own")


def parse_log(text: str, engine: str | None = None) -> StartupLog:
    """A start-up log (any excerpt of one) -> its engine, version, settings and KV numbers. `engine` (vllm, or a
    release: vllm@0.25) names the engine instead of recognizing it; a log with two engines' start-ups is refused."""
    numbered = logical_lines(text)
    lines = [line for _, line in numbered]
    fmt = detect_engine(lines, engine)
    records = parse_records(numbered, fmt)
    if records:
        single_engine(numbered, fmt, records)
    sites = tuple((hit.group(1), hit.group(2).strip()) for line in lines if (hit := _SITE.search(line)))
    return StartupLog(engine=fmt.engine, label=fmt.label, version=parse_version(lines, fmt),
                      settings=parse_settings(lines, fmt), records=records, sites=sites,
                      markers=tuple(m for m in fmt.markers if any(m in line for line in lines)))
