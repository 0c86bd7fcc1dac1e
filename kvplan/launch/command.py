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

import os
import re
import shlex
from dataclasses import dataclass, field

from kvplan.errors import InputError
from kvplan.launch.argv import Given, label, parse_args
from kvplan.launch.tables import FlagTable, flag_table, releases, table_release

ENTRY_POINTS = ("vllm serve MODEL, python -m vllm.entrypoints.openai.api_server --model MODEL, "
                "python -m sglang.launch_server --model-path MODEL, sglang serve, trtllm-serve MODEL")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
MODULES = {"vllm.entrypoints.openai.api_server": ("vllm", "api_server"), "sglang.launch_server": ("sglang", "launch_server")}
SGLANG_SERVE_FIRST, SGLANG_POSITIONAL_FIRST = "0.5.5", "0.5.16"


@dataclass(frozen=True, kw_only=True)
class Command:
    """A launch command as its engine release reads it."""

    engine: str  # vllm | sglang | trtllm
    entry: str  # serve | api_server | launch_server
    table: FlagTable
    model: str
    given: tuple[Given, ...]
    notes: tuple[str, ...] = field(default=())


def words_of(words: list[str]) -> list[str]:
    """The command's words: one string is split as a shell would (continuations joined); stray `\\` dropped."""
    if len(words) == 1 and re.search(r"\s", words[0]):
        try:
            words = shlex.split(re.sub(r"\\\r?\n", " ", words[0]))
        except ValueError as exc:
            raise InputError(f"cannot split the command: {exc}") from None
    return [w.strip() for w in words if w.strip() not in ("", "\\")]


def is_command(words: list[str]) -> bool:
    """Whether the words are a launch command rather than one model id: more than one word, or one string that
    starts with an engine's executable, python, env or NAME=value (a path with a space is a model)."""
    if len(words) > 1:
        return True
    split = words_of(words)
    return bool(split) and (split[0] == "env" or bool(_ENV.fullmatch(split[0])) or _executable(split[0]) in (
        "vllm", "sglang", "trtllm-serve") or bool(_PYTHON.fullmatch(_executable(split[0]))))


def _executable(word: str) -> str:
    return os.path.basename(word)


def entry_point(words: list[str]) -> tuple[str, str, list[str], list[str]]:
    """(engine, entry, the words after the entry point, environment assignments)."""
    env = []
    while words and (_ENV.fullmatch(words[0]) or words[0] == "env"):
        env += [] if words[0] == "env" else [words[0]]
        words = words[1:]
    exe = _executable(words[0]) if words else ""
    if exe == "vllm" and words[1:2] == ["serve"]:
        return "vllm", "serve", words[2:], env
    if exe == "sglang" and words[1:2] == ["serve"]:
        return "sglang", "serve", words[2:], env
    if exe == "trtllm-serve":
        return "trtllm", "serve", words[1:], env
    if _PYTHON.fullmatch(exe) and words[1:2] == ["-m"] and len(words) > 2 and words[2] in MODULES:
        return (*MODULES[words[2]], words[3:], env)
    shown = " ".join(words[:3]) or "nothing"
    raise InputError(f"not a launch command kvplan reads: {shown!r}; it reads {ENTRY_POINTS}")


def _newer(release: str, first: str) -> bool:
    order = releases("sglang")
    return order.index(release) >= next(i for i, r in enumerate(order) if r.startswith(first))


def _model(engine: str, entry: str, given: list[Given], positional: list[str], table: FlagTable) -> str:
    """The model the command serves: each entry point's own way of naming it."""
    named = [g.value for g in given if g.dest in ("model", "model_path")]
    if entry == "api_server" and (positional or not named):
        raise InputError("python -m vllm.entrypoints.openai.api_server serves --model MODEL (vLLM 0.10-0.33 "
                         "ignore a positional model and serve the default one; 0.8-0.9 refuse it): give --model")
    extra = positional[1:] if entry in ("serve",) else positional
    if extra:
        raise InputError(f"{label(table)} takes one model; unrecognized arguments: {' '.join(extra)}")
    if entry == "api_server":
        return str(named[-1])
    if engine == "sglang" and entry == "serve" and positional and not _newer(table.release, SGLANG_POSITIONAL_FIRST):
        raise InputError(f"sglang serve takes a positional model from 0.5.16 ({label(table)}: --model-path MODEL)")
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
    if engine == "sglang" and entry == "serve":
        if not _newer(release, SGLANG_SERVE_FIRST):
            raise InputError(f"sglang serve exists from 0.5.5 ({label(table)}: python -m sglang.launch_server)")
        rest, notes = _model_type(rest, notes)
    if engine == "trtllm" and rest[:1] == ["serve"] and table.release != "0.18.2":
        rest = rest[1:]  # DefaultGroup: `trtllm-serve serve MODEL` (0.18.2 has no subcommand)
    if engine == "vllm" and entry == "api_server":
        table = _api_server(table)
    given, positional = parse_args(rest, table)
    model = _model(engine, entry, given, positional, table)
    return Command(engine=engine, entry=entry, table=table, model=model, given=tuple(given), notes=tuple(notes))


def _model_type(rest: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """`sglang serve --model-type X` (0.5.12 on) is sglang serve's own, not a server flag."""
    if "--model-type" in rest:
        i = rest.index("--model-type")
        return rest[:i] + rest[i + 2:], [*notes, "--model-type: sglang serve's own; no effect on memory"]
    return rest, notes


def _api_server(table: FlagTable) -> FlagTable:
    """The api_server module's parser: `vllm serve`'s less the serve-only options."""
    from dataclasses import replace

    return replace(table, flags={k: v for k, v in table.flags.items() if k not in table.serve_only})
