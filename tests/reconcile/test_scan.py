"""Reading a log of any size in one pass (scan.py) and the literals that gate each line (needles.py).

A log that fits in the first piece reads exactly as ``parse_log`` of its text; a collected start-up log buried in
megabytes of request lines (before and after it) reads as the start-up alone, its line numbers shifted by the lines
before it (the request lines: tests/request_noise.py).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from request_noise import noise

from kvplan.errors import KvplanError
from kvplan.reconcile import parse_log
from kvplan.reconcile.formats import FORMATS
from kvplan.reconcile.needles import needles
from kvplan.reconcile.parse import logical_lines
from kvplan.reconcile.scan import CHUNK_BYTES, chunks, holds_record, line_count, read_startup_log

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
NAMES = sorted(p.stem for p in LOGS.glob("*.log"))


def read(text: str, size: int = CHUNK_BYTES) -> object:
    return read_startup_log(io.BytesIO(text.encode("utf-8", errors="replace")), size=size)


@pytest.mark.parametrize("name", NAMES)
def test_a_small_log_reads_as_its_text(name: str) -> None:
    text = (LOGS / f"{name}.log").read_text(errors="replace")
    try:
        expected = parse_log(text)
    except KvplanError as exc:  # the same refusal either way
        with pytest.raises(type(exc)) as caught:
            read(text)
        assert str(caught.value) == str(exc)
        return
    assert read(text) == expected


@pytest.mark.parametrize("name", ["vllm-v0102-qwen3-8b-fp8-lora-l4", "sglang-v058-qwen25-0.5b-h100-docs",
                                  "trtllm-1.2.0rc2-qwen3-8b-fp8-pytorch", "vllm-v0641-qwen25-32b-awq-4k-a6000"])
def test_a_startup_buried_in_request_lines_reads_as_the_startup(name: str) -> None:
    text = (LOGS / f"{name}.log").read_text()
    text = text if text.endswith("\n") else text + "\n"
    before = noise(3)
    alone, buried = parse_log(text), read(before + text + noise(3))
    shift = before.count("\n")
    assert buried.records == tuple(r.__class__(r.kind, r.line + shift, r.worker, r.numbers, r.site, r.source, r.seq
                                               + _seq_shift(buried, alone)) for r in alone.records)
    assert (buried.engine, buried.version, buried.settings, buried.markers) == (
        alone.engine, alone.version, alone.settings, alone.markers)


def _seq_shift(buried: object, alone: object) -> int:
    """The records' places move by the same amount (the lines read before the start-up, and a gap)."""
    return buried.records[0].seq - alone.records[0].seq  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", NAMES)
def test_every_startup_holds_an_anchored_line(name: str) -> None:
    data = (LOGS / f"{name}.log").read_bytes()
    try:
        has_records = bool(parse_log(data.decode("utf-8", errors="replace")).records)
    except KvplanError:  # a refused log
        has_records = False
    assert holds_record(data) == has_records


def test_needles_hold_for_every_collected_line() -> None:
    """A line that a pattern matches holds one of the pattern's needles, on every logical line collected."""
    patterns = [p for f in FORMATS.values() for p in (*f.detect, *f.versions, *(n.regex for n in f.numbers),
                                                       *(s.regex for s in f.settings))]
    assert all(needles(p) != frozenset([""]) for p in patterns)
    lines = [line for p in LOGS.glob("*.log") for _, line in logical_lines(p.read_text(errors="replace"))]
    missed = [(p.pattern, line) for p in patterns for line in lines
              if p.search(line) and not any(n in line for n in needles(p))]
    assert not missed


@pytest.mark.parametrize("text", ["a\nb\r\nc\rd\n", "x" * 50 + "\r" + "y" * 50, "\n\n\r\r\n", "no end"])
def test_pieces_end_at_line_ends_and_count_the_lines(text: str) -> None:
    data = text.encode()
    pieces = list(chunks(io.BytesIO(data), size=7))
    assert b"".join(pieces) == data
    assert sum(line_count(p) for p in pieces[:-1]) + len(pieces[-1].decode().splitlines()) == len(text.splitlines())
