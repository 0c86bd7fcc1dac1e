"""An engine's argument list read as that release's parser reads it, against its flag table.

vLLM (``FlexibleArgumentParser``, 0.33 ``utils/argparse_utils.py:313-500``; 0.8.0 ``utils.py:1175-1200``):
``--a_b`` is ``--a-b`` (the part before the first ``.``), ``--json-flag.key value`` sets one key of a JSON
option, ``-O3`` / ``-O=3`` is ``--optimization-level 3`` (0.12 on; before, ``-O 3``: the compilation config).
vLLM and SGLang keep argparse's ``allow_abbrev``: a unique prefix of a long option is that option, two or more
is argparse's "ambiguous option" (exit 2). SGLang rewrites nothing (``--tp_size`` is unknown). trtllm-serve is
click: exact names only. Values are checked by the parser's own type function (``human_readable_int``: ``k`` =
1000, ``K`` = 1024, 0.33 ``utils/argparse_utils.py:30-94``), a choice by its choices, JSON by ``json.loads``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.launch.tables import Flag, FlagTable

_NUMBER = re.compile(r"-\d+(\.\d+)?")
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_STRICT_JSON = ("loads", "json_list_type")  # parse functions that only take JSON text


@dataclass(frozen=True, kw_only=True)
class Given:
    """One flag of the command: the option it resolved to, as typed, and its parsed value."""

    flag: Flag
    typed: str  # the spelling in the command (--max_model_len, --max-model, -tp)
    value: Any
    text: str | None = None  # the value as typed (one word), where it took one

    @property
    def name(self) -> str:
        return self.flag.name

    @property
    def dest(self) -> str:
        return self.flag.dest


def label(table: FlagTable) -> str:
    return f"{table.label} {table.release}"


def human_int(text: str) -> int:
    """vLLM's human_readable_int: 25.6k = 25,600; 32K = 32,768 (no decimals with a binary suffix)."""
    match = _HUMAN.fullmatch(text.strip())
    if match is None:
        return int(text)
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return int(float(number) * _DECIMAL[suffix])
    return int(number) * _BINARY[suffix]


def decimal_suffix_note(given: Given) -> str | None:
    """vLLM's 32k is 32,000 tokens where kvplan's own options read 32k as 32,768: said where a command used it."""
    match = _HUMAN.fullmatch((given.text or "").strip()) if "human_readable" in (given.flag.parse or "") else None
    if match is None or match.group(2) not in _DECIMAL:
        return None
    return (f"{given.typed} {given.text} is {given.value:,} as vLLM reads it (k = 1,000, K = 1,024: 0.33 "
            f"utils/argparse_utils.py:30-94); kvplan's own options read {given.text} as "
            f"{int(float(match.group(1)) * 1024 ** ('kmgt'.index(match.group(2)) + 1)):,}")


def _int(flag: Flag, text: str) -> int | None:
    parse = flag.parse or ""
    if "optional" in parse and text in ("", "None"):
        return None
    if parse == "human_readable_int_or_auto" and text.strip().lower() in ("auto", "-1"):
        return -1
    return human_int(text) if "human_readable" in parse else int(text)


def _json(flag: Flag, text: str) -> Any:
    if (flag.parse or "") in _STRICT_JSON or (flag.parse or "").endswith("(loads)"):
        if "optional" in (flag.parse or "") and text in ("", "None"):
            return None
        return json.loads(text)
    try:
        return json.loads(text)
    except ValueError:
        return text  # union_dict_and_str, a config dataclass's CLI string: the engine takes text too


def _choice(flag: Flag, text: str) -> Any:
    value: Any = int(text) if flag.choice_type == "int" else text
    if flag.choices is not None and value not in flag.choices:
        raise ValueError(f"invalid choice {text!r} (choose from {', '.join(str(c) for c in flag.choices)})")
    return value


def _float(flag: Flag, text: str) -> float | None:
    return None if "optional" in (flag.parse or "") and text in ("", "None") else float(text)


_CONVERT = {"int": _int, "float": _float, "choice": _choice, "json": _json}


def convert(flag: Flag, text: str, table: FlagTable) -> Any:
    """A value as the release's parser reads it; a bad one is exit 2 naming the flag."""
    try:
        return _CONVERT.get(flag.type, lambda _f, t: t)(flag, text)
    except ValueError as exc:
        kind = {"int": "a whole number", "float": "a number", "json": "JSON"}.get(flag.type, "a valid value")
        why = str(exc) if flag.type == "choice" else f"{text!r} is not {kind}"
        raise InputError(f"{flag.name}: {why} ({label(table)})") from None


def spelled(token: str, table: FlagTable) -> tuple[str, str | None]:
    """(option name as the parser looks it up, inline value) for one `-…` token."""
    name, eq, inline = token.partition("=")
    value = inline if eq else None
    if table.parser != "flexible":
        return name, value
    if re.fullmatch(r"-O\d", name):
        return ("--optimization-level" if table.has("--optimization-level") else "-O"), name[2:]
    if name == "-O" and not table.has("-O"):
        return "--optimization-level", value
    if name.startswith("--"):
        base = name[2:].split(".", 1)[0]
        name = "--" + base.replace("_", "-")  # a dotted key sets one key of the JSON option before the dot
    return name, value


def resolve(name: str, table: FlagTable) -> Flag:
    """The option `name` is: exact, else (argparse's allow_abbrev) the one long option it prefixes."""
    flag = table.get(name)
    if flag is not None and not flag.positional:
        return flag
    if table.parser != "click" and name.startswith("--") and len(name) > 2:  # argparse's allow_abbrev
        matches = sorted(f for f in table.flags if f.startswith(name) and f.startswith("--"))
        if len(matches) == 1:
            return table.flags[matches[0]]
        if matches:
            raise InputError(f"ambiguous flag {name}: {label(table)} could read it as {', '.join(matches)} "
                             f"(argparse refuses it); spell the flag out")
    hint = _their_hint(name, table)
    near = table.closest(name)
    raise InputError(f"{label(table)} has no flag {name}" + (hint or (f"; the closest is {near}" if near else "")))


def whose_flag(name: str, engine: str) -> tuple[str, str] | None:
    """(the engine's label, the knob) where another engine than `engine` spells a knob `name` (SGLang's
    --mem-fraction-static is the memory fraction), from each engine's Spelling.flags; else None."""
    from kvplan.engines import ENGINE_NAMES, get_engine

    for other in ENGINE_NAMES:
        spelling = get_engine(other).spelling
        if other == engine or spelling is None:
            continue
        knob = next((k for k, flags in spelling.flags.items() if name in flags), None)
        if knob is not None:
            return spelling.label, knob
    return None


def _their_hint(name: str, table: FlagTable) -> str | None:
    """"; that is SGLang's flag; vLLM's is --gpu-memory-utilization" for another engine's spelling of a knob."""
    from kvplan.engines import get_engine

    found = whose_flag(name, table.engine)
    if found is None:
        return None
    spelling = get_engine(table.engine).spelling
    mine = next((f for f in (spelling.flags.get(found[1], ()) if spelling else ()) if table.has(f)), None)
    return f"; that is {found[0]}'s flag" + (f"; {table.label}'s is {mine}" if mine else f" ({table.label} has none)")


def _takes(token: str) -> bool:
    """Whether argparse would read `token` as a value rather than an option."""
    return not token.startswith("-") or token == "-" or bool(_NUMBER.fullmatch(token))


def _values(flag: Flag, inline: str | None, rest: list[str], table: FlagTable) -> tuple[Any, int]:
    """(value, tokens consumed after the flag)."""
    if flag.switch:
        if inline is not None:
            raise InputError(f"{flag.name} takes no value ({label(table)}), got {flag.name}={inline}")
        return flag.value, 0
    if inline is not None:
        return convert(flag, inline, table), 0
    if flag.nargs in ("+", "*"):
        taken = next((i for i, t in enumerate(rest) if not _takes(t)), len(rest))
        if flag.nargs == "+" and taken == 0:
            raise InputError(f"{flag.name} expects at least one value ({label(table)})")
        return [convert(flag, t, table) for t in rest[:taken]], taken
    if rest and _takes(rest[0]):
        return convert(flag, rest[0], table), 1
    if flag.nargs == "?":
        return flag.const, 0
    raise InputError(f"{flag.name} expects a value ({label(table)})")


def _dotted(token: str, table: FlagTable) -> bool:
    return table.parser == "flexible" and token.startswith("--") and "." in token.partition("=")[0]


def parse_args(tokens: list[str], table: FlagTable) -> tuple[list[Given], list[str]]:
    """The flags and the positional words of an argument list, as `table`'s release parses them."""
    given: list[Given] = []
    positional: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            positional += tokens[i + 1:]
            break
        if _takes(token):
            positional.append(token)
            i += 1
            continue
        name, inline = spelled(token, table)
        flag = resolve(name, table)
        if _dotted(token, table):  # --speculative-config.method mtp: one key of the JSON option, as text
            key = token.partition("=")[0].split(".", 1)[1]
            text, used = (inline, 0) if inline is not None else (tokens[i + 1] if i + 1 < len(tokens) else "", 1)
            value = {key: text}
        else:
            value, used = _values(flag, inline, tokens[i + 1:], table)
        typed = inline if inline is not None else tokens[i + 1] if used == 1 else None
        given.append(Given(flag=flag, typed=token.partition("=")[0], value=value, text=typed))
        i += 1 + used
    return given, positional
