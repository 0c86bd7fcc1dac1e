"""Each engine release's launch flags, as its own parser declares them (package data in ``tables/``).

``tables/<engine>.json`` is built by ``tools/launch_tables.py`` from per-release dumps of the engines' own
parsers: vLLM's ``make_arg_parser`` plus the ``vllm serve`` extras and SGLang's ``ServerArgs.add_cli_args``,
run from each release's sources (vLLM 0.8.0-0.33.0, SGLang 0.4.0.post2-0.5.23); trtllm-serve's click options
transcribed from the 0.18.2 docs and one ``serve.py`` snapshot (commit 00209af, 1.2/1.3-era, release not pinned).
Each flag lists its variants (dest, nargs, type, choices, the value a switch stores) with the release ranges
that have them; each dest its memory category (layout, budget, kv_format, length, activation, graphs, weights,
state, host_tier, placement, constraint or none). The file is JSON written a top-level key a line, and ``flags`` and
``categories`` an entry a line (indented one space), so that one flag is parsed alone (``_Section``).

A kvplan engine release maps to the table of the release its row was read from (``table_release``, from
``Engine.launch_release``): vLLM's row ``release`` (0.19 -> 0.19.0), SGLang's minor (0.5.6 -> 0.5.6.post2), TRT-LLM
1.x -> the snapshot and 0.20 -> 0.18.2 (the nearest release whose options were read).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from kvplan.engines import get_engine
from kvplan.engines.spelling import Parser
from kvplan.errors import InputError
from kvplan.json_lines import ABSENT, entry, line_value
from kvplan.memo import long_lived
from kvplan.records import Record

TABLES = Path(__file__).resolve().parent / "tables"


class Flag(Record):
    """One option string of one release: how its parser reads it."""

    name: str
    dest: str
    type: str  # bool, int, float, str, choice, json
    nargs: int | str | None = None  # 0: a switch; None: one value; '?', '+', '*'
    choices: tuple[Any, ...] | None = None
    choice_type: str | None = None
    value: Any = None  # what a switch stores
    const: Any = None
    parse: str | None = None  # the parser's type function (human_readable_int, loads, ...)
    default: Any = None
    accepts_str: bool = False
    positional: bool = False

    @property
    def switch(self) -> bool:
        return self.nargs == 0


class _Flags(Mapping[str, Flag]):
    """A release's flags by option string, each ``Flag`` made when first asked for: a launch line reads a dozen of
    the ~480 (making them all was a hundredth of `kvplan capacity`'s start-up), and which variant of a flag the
    release has is looked up then too (scanning all ~560 flags' release ranges was another). Equal to the dict of
    them all, in the table's order."""

    def __init__(self, variants: Mapping[str, list[dict[str, Any]]], index: int) -> None:
        self._variants = variants  # every release's variants of each option string
        self._index = index  # the release's position in the table's releases
        self._specs: dict[str, dict[str, Any] | None] = {}  # None: the release lacks the option
        self._made: dict[str, Flag] = {}
        self._names: list[str] | None = None

    def _spec(self, name: str) -> dict[str, Any] | None:
        try:
            return self._specs[name]
        except KeyError:
            index = self._index
            found = next((v for v in self._variants.get(name, ()) if any(a <= index <= b for a, b in v["in"])), None)
            self._specs[name] = found
            return found

    def _all(self) -> list[str]:
        if self._names is None:
            self._names = [name for name in self._variants if self._spec(name) is not None]
        return self._names

    def __getitem__(self, name: str) -> Flag:
        made = self._made.get(name)
        if made is None:
            found = self._spec(name)
            if found is None:
                raise KeyError(name)
            spec = {k: v for k, v in found.items() if k != "in"}
            if "choices" in spec:
                spec["choices"] = tuple(spec["choices"])
            made = self._made[name] = Flag(name=name, **spec)
        return made

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._spec(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return repr(dict(self))


class FlagTable(Record):
    """The options of one engine release."""

    engine: str
    release: str
    flags: Mapping[str, Flag]
    categories: Mapping[str, str]  # dest -> memory category
    serve_only: frozenset[str] = frozenset()  # vLLM: options of `vllm serve` that the api_server module lacks
    parser: Parser = "argparse"  # how its parser reads option strings (the engine's Spelling.parser)
    label: str = ""  # how a note names the engine's command (Spelling.label)

    def get(self, name: str) -> Flag | None:
        return self.flags.get(name)

    def has(self, name: str) -> bool:
        return name in self.flags

    def category(self, dest: str) -> str:
        return self.categories.get(dest, "none")

    def closest(self, name: str) -> str | None:
        """The option string nearest to `name` (difflib, as click's suggestions), or None."""
        options = [f for f in self.flags if f.startswith("-")]
        near = difflib.get_close_matches(name, options, n=1, cutoff=0.5)
        return near[0] if near else None

    def flag_for(self, dest: str, *prefer: str) -> str | None:
        """The option string this release has for `dest`: the first of `prefer` it has, else None."""
        return next((p for p in prefer if p in self.flags and self.flags[p].dest == dest), None)


LINE_SECTIONS = ("flags", "categories")  # written an entry a line: read an entry at a time (_Section)


def table_text(table: Mapping[str, Any]) -> str:
    """A table as this module reads it (tools/launch_tables.py writes the package's with it): JSON, a top-level key
    a line, ``flags`` and ``categories`` an entry a line; json.loads of the text gives `table` back."""
    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    lines = []
    for key, value in table.items():
        if key in LINE_SECTIONS and value:
            entries = ",\n".join(f" {line(k)}:{line(v)}" for k, v in value.items())
            lines.append(f"{line(key)}:{{\n{entries}\n}}")
        else:
            lines.append(f"{line(key)}:{line(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


@cache
def _text(engine: str) -> str:
    return (TABLES / f"{engine}.json").read_text(encoding="utf-8")  # a path, not importlib.resources: no zipfile


class _Section(Mapping[str, Any]):
    """A top-level object of a table that ``tools/launch_tables.py`` writes an entry a line (``flags``, ``categories``):
    an entry parsed when first asked for. A launch line reads a dozen of vllm.json's 563 flags, and parsing the
    whole file was a fortieth of `kvplan capacity`'s start-up; the whole object is parsed only to list it."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self._text, self._start, self._end = text, start, end  # the entry lines: text[start:end]
        self._parsed: dict[str, Any] = {}
        self._whole: dict[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        if self._whole is not None:
            return self._whole[key]
        try:
            return self._parsed[key]
        except KeyError:
            pass
        value = entry(self._text, key, indent=" ", separator=":", start=self._start - 1, end=self._end)
        if value is ABSENT:
            raise KeyError(key)
        self._parsed[key] = value
        return value

    def _all(self) -> dict[str, Any]:
        if self._whole is None:
            with long_lived():  # the parse makes ~3k containers (vllm.json), all kept (cached): no collection runs
                self._whole = json.loads(f"{{{self._text[self._start:self._end]}}}")
        return self._whole

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


@cache
def _part(engine: str, key: str) -> Any:
    """One top-level key of the engine's table (None: the table lacks it); ``flags`` and ``categories`` as a
    ``_Section`` (an entry a line), the others parsed whole (each on its line)."""
    text = _text(engine)
    marker = f"\n{json.dumps(key)}:"
    at = text.find(marker)
    if at < 0:
        return None
    start = at + len(marker)
    if text.startswith("{\n", start):  # a section: its entries, up to the line that closes it
        return _Section(text, start + 2, text.index("\n}", start + 1))
    return line_value(text, start)


@cache
def releases(engine: str) -> tuple[str, ...]:
    return tuple(_part(engine, "releases"))


@cache
def flag_table(engine: str, release: str) -> FlagTable:
    """The flags `release` of `engine` accepts (a release the tables hold)."""
    flags = _Flags(_part(engine, "flags"), releases(engine).index(release))
    spelling = get_engine(engine).spelling
    assert spelling is not None  # the tables hold the engines with a launch command
    return FlagTable(engine=engine, release=release, flags=flags, categories=_part(engine, "categories"),
                     serve_only=frozenset((_part(engine, "serve_only") or {}).get(release, ())), parser=spelling.parser,
                     label=spelling.label)


def table_release(engine_name: str) -> tuple[str, str]:
    """(engine, table release) for a kvplan engine release name (`vllm`, `vllm@0.19`, `sglang@0.5.6`, `trtllm`): the
    release the engine's row says its parser was read from (``Engine.launch_release``; a minor's last patch where the
    spelling says so: SGLang 0.5.6 -> 0.5.6.post2); exit 2 where kvplan follows the release but no parser of it was
    read (vLLM's V0 rows, transformers)."""
    from kvplan.engines import release_key

    engine, _ = release_key(engine_name)
    profile = get_engine(engine_name)
    found = profile.launch_release
    if found is not None and profile.spelling is not None and profile.spelling.table_match == "last_patch":
        patches = [r for r in releases(engine) if r == found or r.startswith(f"{found}.")]
        found = patches[-1] if patches else None
    if found is None or profile.spelling is None or found not in releases(engine):
        raise InputError(f"{engine_name}: kvplan has no launch flags for this release (vLLM: 0.8.0 on; SGLang: "
                         f"0.4 on; TensorRT-LLM: trtllm-serve); name a newer one with --engine")
    return engine, found
