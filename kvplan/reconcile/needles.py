"""The literal text each line pattern needs: a line holding none of a pattern's needles cannot match it.

Read from the compiled patterns themselves (Python's own regex parser), so the tables in ``formats.py``,
``vllm_lines.py`` and ``sites.py`` stay the only place a line's shape is written. A pattern's needles are the
alternatives of its longest run of literal characters outside anything optional: ``Available KV cache memory: ``
for ``Available KV cache memory: (?P<kv_budget_gib>...) GiB``; ``vLLM`` and ``vllm`` for ``\\bvLLM\\b|\\bvllm\\b``.
``parse.py`` matches a line against the tables only when it holds one of them (about a tenth of the time of
trying every pattern on every line).
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

_PARSER: Any = importlib.import_module("re._parser")  # the stdlib's regex parser (typeshed has no stubs for it)
_OPS: Any = importlib.import_module("re._constants")
_REPEATS = {_OPS.MAX_REPEAT, _OPS.MIN_REPEAT, _OPS.POSSESSIVE_REPEAT}


def _score(needles: frozenset[str]) -> tuple[int, int]:
    return min(map(len, needles)), -len(needles)  # the longest shortest needle, then the fewest


def _lead(items: Any) -> str:
    """The literal characters an alternative starts with."""
    out = []
    for op, arg in items:
        if op is not _OPS.LITERAL:
            break
        out.append(chr(arg))
    return "".join(out)


def _inner(op: Any, arg: Any) -> frozenset[str] | None:
    """The needles a group, an alternation or a repeat (taken at least once) holds, else None."""
    if op is _OPS.SUBPATTERN:
        return needles_of(arg[3])
    if op is _OPS.BRANCH:
        alternatives = [needles_of(b) for b in arg[1]]
        return frozenset().union(*alternatives) if all(alternatives) else None  # type: ignore[arg-type]
    if op in _REPEATS and arg[0] >= 1:
        return needles_of(arg[2])
    return None


def needles_of(items: Any) -> frozenset[str] | None:
    """The best set of literals one of which every match of a parsed pattern holds (None: none found)."""
    found: list[frozenset[str]] = []
    run: list[str] = []
    for op, arg in items:
        if op is _OPS.LITERAL:
            run.append(chr(arg))
            continue
        if op is _OPS.BRANCH:  # the parser moves the alternatives' common prefix out: "v(?:LLM|llm)"
            found.append(frozenset("".join(run) + _lead(b) for b in arg[1]))
        if run:
            found.append(frozenset(["".join(run)]))
        run = []
        inner = _inner(op, arg)
        if inner:
            found.append(inner)
    if run:
        found.append(frozenset(["".join(run)]))
    found = [f for f in found if all(f)]
    return max(found, key=_score) if found else None


@lru_cache(maxsize=512)
def needles(pattern: re.Pattern[str]) -> frozenset[str]:
    """A pattern's needles; a pattern without one has the empty needle (every line may match it)."""
    if pattern.flags & re.IGNORECASE:
        return frozenset([""])
    return needles_of(_PARSER.parse(pattern.pattern, pattern.flags)) or frozenset([""])
