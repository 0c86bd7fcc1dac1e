"""A pasted launch command -> its engine, entry point, model and flags, read with the release's parser.

A command given as one string (quoted, with ``\\``-newline continuations) is split as a POSIX shell splits
it; leading ``NAME=value`` environment assignments (and ``env``) are dropped and named in a note. Entry
points (each engine's own, as its release installs them):

- ``vllm serve MODEL``; ``python[3] -m vllm.entrypoints.openai.api_server --model MODEL``: vLLM 0.10-0.33
  parse a positional there and never use it (0.33 ``entrypoints/launchers/api_server/entry.py:204-226``: the
  default model is served), 0.8-0.9 refuse it; kvplan asks for ``--model`` instead;
- ``python[3] -m sglang.launch_server --model-path MODEL``; ``sglang serve`` (0.5.5 on; a positional
  model from 0.5.16, ``cli/serve.py _normalize_positional_model_path``; ``--model-type`` is its own, 0.5.12 on);
- ``trtllm-serve MODEL`` and, where ``serve`` is a subcommand (the snapshot's DefaultGroup),
  ``trtllm-serve serve MODEL``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache

from kvplan.engines.spelling import EntryPoint, Spelling
from kvplan.engines.version import listed_from
from kvplan.errors import InputError
from kvplan.launch.argv import Given, decimal_suffix_note, label, parse_args
from kvplan.launch.config_file import with_config_file
from kvplan.launch.tables import FlagTable, flag_table, releases, table_release
from kvplan.launch.words import _executable, is_env, is_python, words_of
from kvplan.launch.words import is_command as is_command  # where callers found it before

ENTRY_POINTS = ("vllm serve MODEL, python -m vllm.entrypoints.openai.api_server --model MODEL, "
                "python -m sglang.launch_server --model-path MODEL, sglang serve, trtllm-serve MODEL")


@dataclass(frozen=True, kw_only=True)
class Command:
    """A launch command as its engine release reads it."""

    engine: str  # vllm | sglang | trtllm
    entry: str  # serve | api_server | launch_server
    table: FlagTable
    model: str
    given: tuple[Given, ...]
    notes: tuple[str, ...] = field(default=())


@cache
def _spellings() -> tuple[tuple[str, Spelling], ...]:
    """(engine, its launch spelling) of every engine kvplan reads commands of."""
    from kvplan.engines import ENGINE_NAMES, get_engine

    return tuple((name, spelling) for name in ENGINE_NAMES if (spelling := get_engine(name).spelling) is not None)


def _executables() -> frozenset[str]:
    return frozenset(e.words[0] for _, s in _spellings() for e in s.entry_points if not e.module)


def _matches(entry: EntryPoint, words: list[str]) -> int:
    """How many words the entry point takes from the command's start (0: not this entry point)."""
    if entry.module:
        python = bool(words) and is_python(_executable(words[0]))
        return 3 if python and words[1:2] == ["-m"] and words[2:3] == list(entry.words) else 0
    n = len(entry.words)
    return n if words and _executable(words[0]) == entry.words[0] and words[1:n] == list(entry.words[1:]) else 0


def entry_point(words: list[str]) -> tuple[str, EntryPoint, list[str], list[str]]:
    """(engine, entry point, the words after it, environment assignments)."""
    env = []
    while words and (is_env(words[0]) or words[0] == "env"):
        env += [] if words[0] == "env" else [words[0]]
        words = words[1:]
    for engine, spelling in _spellings():
        for entry in spelling.entry_points:
            if taken := _matches(entry, words):
                return engine, entry, words[taken:], env
    shown = " ".join(words[:3]) or "nothing"
    raise InputError(f"not a launch command kvplan reads: {shown!r}; it reads {ENTRY_POINTS}")


def _newer(table: FlagTable, first: str) -> bool:
    """The table's release is `first` or later (its engine's releases in order)."""
    return listed_from(releases(table.engine), table.release, first)


def _said(entry: EntryPoint) -> str:
    return f"python -m {entry.words[0]}" if entry.module else " ".join(entry.words)


def _model(entry: EntryPoint, given: list[Given], positional: list[str], table: FlagTable) -> str:
    """The model the command serves: each entry point's own way of naming it."""
    named = [g.value for g in given if g.dest in ("model", "model_path")]
    if entry.model_flag and (positional or not named):
        raise InputError(f"{_said(entry)} serves {entry.model_flag} MODEL ({entry.model_flag_why}): give "
                         f"{entry.model_flag}")
    extra = positional[1:] if entry.positional_model is not None else positional
    if extra:
        raise InputError(f"{label(table)} takes one model; unrecognized arguments: {' '.join(extra)}")
    if entry.model_flag:
        return str(named[-1])
    if entry.positional_model and positional and not _newer(table, entry.positional_model):
        raise InputError(f"{_said(entry)} takes a positional model from {entry.positional_model} ({label(table)}: "
                         f"{entry.model_option} MODEL)")
    models = [*positional[:1], *(str(m) for m in named)]
    if not models:
        raise InputError(f"the command names no model ({ENTRY_POINTS})")
    if len(set(models)) > 1:
        raise InputError(f"the command names two models: {', '.join(dict.fromkeys(models))}")
    return models[0]


def read_command(words: list[str], engine_name: str | None = None) -> Command:
    """The command's engine from its entry point, the release from `engine_name` (default: the newest row)."""
    engine, entry, rest, env = entry_point(words_of(words))
    asked = engine_name or engine
    found, release = table_release(asked)
    if found != engine:
        raise InputError(f"--engine {asked} is {found}, the command is {engine}'s: give --engine {engine}@RELEASE")
    table = flag_table(engine, release)
    notes = [f"environment not read: {' '.join(env)}"] if env else []
    if entry.first and not _newer(table, entry.first):
        other = next(e for e in dict(_spellings())[engine].entry_points if e is not entry)
        raise InputError(f"{_said(entry)} exists from {entry.first} ({label(table)}: {_said(other)})")
    rest, notes = _own_flags(entry, rest, notes)
    if entry.subcommand and rest[:1] == [entry.subcommand] and table.release != entry.subcommand_absent_in:
        rest = rest[1:]  # `trtllm-serve serve MODEL`: an optional subcommand (DefaultGroup)
    if entry.serve_only_dropped:
        table = replace(table, flags={k: v for k, v in table.flags.items() if k not in table.serve_only})
    if table.parser == "flexible" and table.has("--config"):
        rest, path = with_config_file(rest)
        notes += [f"--config {path}: each key read as a flag before the command's own, as vLLM reads it"] if path else []
    given, positional = parse_args(rest, table)
    notes += [n for n in map(decimal_suffix_note, given) if n]
    model = _model(entry, given, positional, table)
    return Command(engine=engine, entry=entry.name, table=table, model=model, given=tuple(given), notes=tuple(notes))


def _own_flags(entry: EntryPoint, rest: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """The entry point's own flags (`sglang serve --model-type X`, 0.5.12 on) are not server flags: dropped, named."""
    for flag in entry.own_flags:
        if flag in rest:
            i = rest.index(flag)
            rest, notes = rest[:i] + rest[i + 2:], [*notes, f"{flag}: {_said(entry)}'s own; no effect on memory"]
    return rest, notes
