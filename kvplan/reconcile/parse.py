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
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from kvplan.errors import InputError
from kvplan.reconcile.formats import FORMATS
from kvplan.reconcile.lines import EngineFormat
from kvplan.reconcile.needles import needles
from kvplan.reconcile.sites import LABELS

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


def detect_engine(scores: dict[str, int], forced: str | None = None) -> EngineFormat:
    """The engine whose lines the log holds most of (`scores`: how many lines of each engine's the log holds), or
    the one forced: an engine, or a release of one, vllm@0.25, whose log it must be."""
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
    reader = LogReader(keep=True)
    reader.feed(1, text)
    reader.finish()
    return reader.kept


@dataclass(slots=True)
class _Seen:
    """What one engine's patterns found in the lines read."""

    score: int = 0  # lines that only this engine prints (its `detect` patterns)
    records: list[Record] = field(default_factory=list)
    settings: dict[int, str] = field(default_factory=dict)  # setting pattern's index -> its first line's value
    versions: dict[int, str] = field(default_factory=dict)  # version pattern's index -> its first line's version
    markers: set[str] = field(default_factory=set)


@lru_cache(maxsize=1)
def _needles() -> tuple[str, ...]:
    """Every literal a line must hold for any pattern of any engine to match it (``needles.py``)."""
    patterns = [*LABELS.values(), *(re.compile(re.escape(m)) for f in FORMATS.values() for m in f.markers)]
    for fmt in FORMATS.values():
        patterns += [*fmt.detect, *fmt.versions, *(p.regex for p in fmt.numbers), *(p.regex for p in fmt.settings)]
    found = {n for p in patterns for n in needles(p)}
    return tuple(sorted(n for n in found if not any(m != n and m in n for m in found)))  # "" keeps every line


def states_a_number(line: str) -> bool:
    """Whether a line is a KV-number line of some engine (``scan.py`` reads the text around such lines)."""
    line = _ANSI.sub("", line)
    return any(p.regex.search(line) for f in FORMATS.values() for p in f.numbers)


class LogReader:
    """A log read in pieces, in order: records joined across the pieces, each record matched against every engine's
    table once (only where it holds one of the tables' literals). ``finish`` then ``startup_log`` give the result."""

    def __init__(self, keep: bool = False) -> None:
        self.seen = {name: _Seen() for name in FORMATS}
        self.sites: dict[tuple[str, str], None] = {}  # (site, message) of each line read, first seen first
        self.kept: list[tuple[int, str]] = []  # every record, where `keep` (logical_lines)
        self._keep, self._seq, self._previous = keep, 0, ""
        self._pending: tuple[int, str] | None = None

    def feed(self, first_line: int, text: str, after_gap: bool = False) -> None:
        """Lines `first_line`... of the log; `after_gap`: lines were skipped before them (a record ends there, and
        the next record is not the one after it)."""
        if after_gap:
            self.finish()
            self._seq, self._previous = self._seq + 1, ""
        if "\x1b" in text or "#033[" in text:
            text = _ANSI.sub("", text)
        for number, line in enumerate(text.splitlines(), start=first_line):
            pending = self._pending
            if pending and (line[:1].isspace() or len(self._previous) >= WRAP_COLUMNS) and not _RECORD.search(line):
                first, joined = pending
                self._pending = (first, f"{joined.rstrip()} {line.strip()}" if line[:1].isspace() else joined + line)
            else:
                self.finish()
                self._pending = (number, line)
            self._previous = line

    def finish(self) -> None:
        """Read the record still open (the log, or a piece before a gap, ended)."""
        if self._pending is None:
            return
        number, line = self._pending
        self._pending = None
        if self._keep:
            self.kept.append((number, line))
        if any(map(line.__contains__, _needles())):
            self._read(number, line, self._seq)
        self._seq += 1

    def _read(self, number: int, line: str, seq: int) -> None:
        for fmt in FORMATS.values():
            seen = self.seen[fmt.engine]
            seen.score += any(p.search(line) for p in fmt.detect)
            for pattern in fmt.numbers:
                if found := pattern.regex.search(line):
                    values = tuple(_number(k, v, pattern.decimals) for k, v in found.groupdict().items() if v is not None)
                    source = _SOURCE.search(line)
                    seen.records.append(Record(pattern.kind, number, worker_of(line, fmt), values, pattern.site,
                                               source.group(1) if source else None, seq))
            for i, setting in enumerate(fmt.settings):
                if i not in seen.settings and (hit := setting.regex.search(line)):
                    seen.settings[i] = setting.value or hit.group(1)
            for i, version in enumerate(fmt.versions):
                if i not in seen.versions and (hit := version.search(line)):
                    seen.versions[i] = hit.group(1).removeprefix("v")
            seen.markers.update(m for m in fmt.markers if m in line)
        if site := _SITE.search(line):
            self.sites[(site.group(1), site.group(2).strip())] = None

    def startup_log(self, engine: str | None = None) -> StartupLog:
        """What the lines read say; `engine` (vllm, or a release: vllm@0.25) names the engine instead of recognizing
        it; a log with two engines' start-ups is refused."""
        self.finish()
        fmt = detect_engine({name: seen.score for name, seen in self.seen.items()}, engine)
        seen = self.seen[fmt.engine]
        records = tuple(seen.records)
        if records:
            self._single_engine(fmt, records)
        return StartupLog(engine=fmt.engine, label=fmt.label, version=next(iter(
                              seen.versions[i] for i in sorted(seen.versions)), None),
                          settings=_settings(fmt, seen.settings), records=records, sites=tuple(self.sites),
                          markers=tuple(m for m in fmt.markers if m in seen.markers))

    def _single_engine(self, fmt: EngineFormat, records: tuple[Record, ...]) -> None:
        """Refuse a log that also holds another engine's start-up: its KV lines and lines only that engine prints.
        Which lines belong to which start-up cannot be told apart reliably (two servers may write to one file, and
        a setting one engine prints may match another's pattern), so none is guessed: one engine's log at a time."""
        for other in FORMATS.values():
            theirs = tuple(self.seen[other.engine].records)
            if other is not fmt and theirs and self.seen[other.engine].score:
                raise InputError(f"the log holds two engines' start-ups: {fmt.label} (KV numbers on {_span(records)}) "
                                 f"and {other.label} (KV numbers on {_span(theirs)}); reconcile reads one engine's "
                                 "start-up log: give each part on its own")


def _settings(fmt: EngineFormat, first: dict[int, str]) -> tuple[tuple[str, str], ...]:
    """Each setting from the first of its patterns (in table order) that any line matches; a warning that is
    itself the evidence sets the pattern's value."""
    found: dict[str, str] = {}
    for i, pattern in enumerate(fmt.settings):
        if pattern.setting in found or i not in first:
            continue
        value = first[i]
        if value != "None":
            found[pattern.setting] = str(Decimal(value) / 100) if pattern.percent else value
    return tuple(found.items())


def _span(records: tuple[Record, ...]) -> str:
    first, last = records[0].line, records[-1].line
    return f"line {first}" if first == last else f"lines {first}-{last}"


def parse_log(text: str, engine: str | None = None) -> StartupLog:
    """A start-up log (any excerpt of one) -> its engine, version, settings and KV numbers. `engine` (vllm, or a
    release: vllm@0.25) names the engine instead of recognizing it; a log with two engines' start-ups is refused."""
    reader = LogReader()
    reader.feed(1, text)
    return reader.startup_log(engine)
