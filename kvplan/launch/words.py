"""A model id or a launch command? Told from the words alone, before any engine or flag table is imported
(``kvplan capacity MODEL`` never loads the launch readers); ``kvplan.launch.command`` reads a command."""

from __future__ import annotations

import os
import re
import shlex

from kvplan.errors import InputError

_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
# The engines' executables (their spellings' entry points that are no module), known without loading every engine:
# a plain model id is told from a command before any engine is imported. tests/launch/test_argv.py checks it is
# what the spellings say.
EXECUTABLES = frozenset({"vllm", "sglang", "trtllm-serve"})


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
    return bool(split) and (split[0] == "env" or bool(_ENV.fullmatch(split[0])) or
                            _executable(split[0]) in EXECUTABLES or bool(_PYTHON.fullmatch(_executable(split[0]))))


def _executable(word: str) -> str:
    return os.path.basename(word)
