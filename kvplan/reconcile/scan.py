"""A log of any size in one pass: the start-up records in it found by a cheap scan, and the text around them read.

A server's log (``kubectl logs``) is gigabytes of request lines with a start-up or two in it. Matching every line
against every engine's table costs microseconds a line; instead the log is read in chunks of bytes, and a chunk is
read line by line (``parse.LogReader``) only where a start-up can be: the first ``HEAD_CHUNKS`` of the log, and
``BEFORE_CHUNKS`` before and ``AFTER_CHUNKS`` after every chunk holding a KV-number line. Such lines are found by
``ANCHORS``, five literal searches that run at memory speed, each hit confirmed by the number patterns (every
collected start-up log holds a line they find: tests/reconcile/test_scan.py). Elsewhere
the lines are only counted, so that line numbers stay the file's (a skipped line ends at a line feed, a carriage
return, or both). A log up to ``HEAD_CHUNKS`` long is read whole: the same as ``parse_log`` of its text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import BinaryIO

from kvplan.reconcile.parse import LogReader, StartupLog, states_a_number

CHUNK_BYTES = 1 << 20
HEAD_CHUNKS = 1  # a start-up log is kilobytes: the first MiB is read whole
BEFORE_CHUNKS = 1  # the version, settings and load lines of a start-up come before its KV lines
AFTER_CHUNKS = 1  # the lines that follow them (vLLM's concurrency, TensorRT-LLM's max_tokens warning)
# literals that a line of every start-up holds: vLLM V1's, TensorRT-LLM's and the refusals' "KV cache " lines (KV
# cache size, Available KV cache memory, KV cache primary pool, GiB KV cache is needed), V0's "# CPU blocks", SGLang's
# "KV Cache is allocated" and the memory lines of all three (Memory profiling results, Memory pool end, Memory
# usage when ...), and "took" (the weights loaded: a start-up that stopped there); the lines that have none of them
# (vLLM's concurrency and padding, SGLang's weights and scheduler) are printed beside one that has
ANCHORS = (b"KV cache ", b"CPU blocks", b"Cache is allocated", b"emory", b"took")


def chunks(handle: BinaryIO, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The log in pieces of about `size` bytes, each ending where a line does (at a line feed; a carriage return
    where a piece holds none)."""
    carry = b""
    while block := handle.read(size):
        block = carry + block
        cut = block.rfind(b"\n")
        if cut < 0:
            cut = block.rfind(b"\r", 0, len(block) - 1)  # not the last byte: a line feed may follow it
        carry = block[cut + 1:]
        if cut >= 0:
            yield block[:cut + 1]
    if carry:
        yield carry


def line_count(chunk: bytes) -> int:
    """Lines that end in a piece: at a line feed, a carriage return, or both."""
    feeds = chunk.count(b"\n")
    if b"\r" not in chunk:  # memchr: far quicker than counting
        return feeds
    return feeds + chunk.count(b"\r") - chunk.count(b"\r\n")


def holds_record(chunk: bytes, confirm: Callable[[str], bool] = states_a_number) -> bool:
    """Whether a piece holds a KV-number line: an anchor's line that `confirm` accepts."""
    for anchor in ANCHORS:
        at = chunk.find(anchor)
        while at >= 0:
            start, end = chunk.rfind(b"\n", 0, at) + 1, chunk.find(b"\n", at)
            end = len(chunk) if end < 0 else end
            if confirm(chunk[start:end].decode("utf-8", errors="replace")):
                return True
            at = chunk.find(anchor, end)
    return False


def regions(handle: BinaryIO, size: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes, bool]]:
    """(first line number, piece, whether lines were skipped before it) of each piece to read line by line."""
    line, held, gap, read_until = 1, deque[tuple[int, bytes]](), False, HEAD_CHUNKS
    for index, chunk in enumerate(chunks(handle, size)):
        if holds_record(chunk):
            read_until = max(read_until, index + 1 + AFTER_CHUNKS)
        if index < read_until:
            for first, before in held:
                yield first, before, gap
                gap = False
            held.clear()
            yield line, chunk, gap
            gap = False
        else:
            held.append((line, chunk))
            if len(held) > BEFORE_CHUNKS:
                held.popleft()
                gap = True
        line += line_count(chunk)


def read_startup_log(handle: BinaryIO, engine: str | None = None, size: int = CHUNK_BYTES) -> StartupLog:
    """``parse_log`` of a log read from a binary handle in one pass, in memory that does not grow with the log."""
    reader = LogReader()
    for first, chunk, after_gap in regions(handle, size):
        reader.feed(first, chunk.decode("utf-8", errors="replace"), after_gap)
    return reader.startup_log(engine)
