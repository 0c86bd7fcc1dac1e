"""Which vLLM release serves an architecture, as data keyed by release (``registry.json`` beside this file).

Each architecture of ``vllm/model_executor/models/registry.py`` across the releases kvplan's research read
(0.8.0-0.33.0; mllama's first, 0.6.2, from that release's ``models/__init__.py``): the first release that lists
it, and the first that refuses it (``_PREVIOUSLY_SUPPORTED_MODELS``), with the last release vLLM's refusal names.
A release row serves it when its version is at least the first and below the refusal; a version compares on as
many parts as the row's key has (the row ``0.10`` stands for every 0.10.x, so it serves what 0.10.2 serves).
An architecture first listed in 0.8.0 may be older: rows before 0.8 serve it. Architectures that left the native
registry for the Transformers backend are still served (kvplan sizes them by their config).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from kvplan.engines.version import below
from kvplan.errors import InputError
from kvplan.records import Record

REGISTRY = Path(__file__).with_name("registry.json")  # beside this file (resolving its links first costs a stat a folder)
# registry.json's columns, in order
SERVED_FIELDS = ("first", "last", "refused_from", "says_last", "kind", "transformers_from")
_DECODER = json.JSONDecoder()


class Served(Record):
    """One architecture's releases: first listed (None: 0.8.0 or earlier), last native, first refusing, the release
    vLLM's refusal names, kind, and the first release that has it only through the Transformers backend."""

    first: str | None
    last: str | None
    refused_from: str | None
    says_last: str | None
    kind: str
    transformers_from: str | None


@cache
def _rows() -> dict[str, list[str | None]]:
    return dict(json.loads(_text())["architectures"])


def _served(row: list[str | None]) -> Served:
    return Served(**dict(zip(SERVED_FIELDS, row + [None] * (6 - len(row)), strict=True)))  # type: ignore[arg-type]


@cache
def registry() -> dict[str, Served]:
    return {name: _served(row) for name, row in _rows().items()}


@cache
def served(arch: str) -> Served | None:
    """One architecture's row, built alone: a plan looks up its model's one or two of the ~480."""
    row = _row(arch)
    return None if row is None else _served(row)


@cache
def _text() -> str:
    return REGISTRY.read_text()


def _row(arch: str) -> list[str | None] | None:
    """`arch`'s row, decoded alone where the file writes its key as the compact JSON it is (``"arch":[``, after
    ``"architectures":{``): a plan asks for one or two of the ~480 rows, and decoding the whole file costs more than
    the rest of the lookup. Any other spelling, or a name not found so, reads the whole file (the same rows)."""
    text = _text()
    at = text.find(f'"{arch}":[', text.find('"architectures":{') + 1)
    if at > 0 and text[at - 1] in "{,":  # a key of the object (a quote inside a JSON string is escaped)
        row, _ = _DECODER.raw_decode(text, at + len(arch) + 3)
        return list(row)
    return _rows().get(arch)


def newest() -> str:
    return str(json.loads(REGISTRY.read_text())["newest"])


def check_served(architectures: list[str], row_key: str, label: str) -> None:
    """Refuse an architecture the release does not build, in vLLM's words where it has them."""
    for arch in architectures:
        row = served(arch)
        if row is None:
            continue
        if row.refused_from and not below(row_key, row.refused_from):
            raise InputError(f"{label} refuses architecture {arch}: supported until v{row.says_last} "
                             "(vllm/model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS)", arg="engine")
        if row.first and below(row_key, row.first):
            raise InputError(f"{label} does not have architecture {arch}: vLLM serves it from v{row.first} "
                             "(vllm/model_executor/models/registry.py)", arg="engine")
