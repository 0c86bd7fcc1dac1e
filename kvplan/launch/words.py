"""A model id or a launch command? Told from the words alone, before any engine or flag table is imported
(``kvplan capacity MODEL`` never loads the launch readers); ``kvplan.launch.command`` reads a command.

A plain model id is told with string tests alone: the patterns are compiled, and shlex imported, only for words
that could be a command (every `kvplan capacity MODEL` asks, and a pasted command is the rare case)."""

from __future__ import annotations

import os
import re

from kvplan.errors import InputError

_ENV = r"[A-Za-z_][A-Za-z0-9_]*=.*"  # NAME=value
_PYTHON = r"python(\d+(\.\d+)?)?"
# The engines' executables (their spellings' entry points that are no module), known without loading every engine:
# a plain model id is told from a command before any engine is imported. tests/launch/test_argv.py checks it is
# what the spellings say.
EXECUTABLES = frozenset({"vllm", "sglang", "trtllm-serve"})


def words_of(words: list[str]) -> list[str]:
    """The command's words: one string is split as a shell would (continuations joined); stray `\\` dropped."""
    if len(words) == 1 and any(map(str.isspace, words[0])):  # what the pattern \s matches
        import shlex

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
    return bool(split) and (split[0] == "env" or is_env(split[0]) or _executable(split[0]) in EXECUTABLES or
                            is_python(_executable(split[0])))


def is_env(word: str) -> bool:
    """`NAME=value`: an environment assignment before the command."""
    return "=" in word and re.fullmatch(_ENV, word, re.S) is not None


def is_python(executable: str) -> bool:
    """`python`, `python3`, `python3.11`."""
    return executable.startswith("python") and re.fullmatch(_PYTHON, executable) is not None


def _executable(word: str) -> str:
    return os.path.basename(word)
