"""A public keyword's value, as Python gives it or as the command line writes it: ``32768`` or ``"32k"``,
``2`` or ``"2"``, ``21474836480`` or ``"20GiB"``, ``["vllm", "sglang"]`` or ``"vllm,sglang"``.

Each reader takes (keyword, value) and returns the library's value, or raises ``InputError`` naming the keyword
and the type it takes: never an ``AttributeError`` or ``TypeError`` from inside. A value of the right type is
returned as it is (its range is checked by the object that holds it, with the CLI's message).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from kvplan.errors import InputError
from kvplan.units import MAX_COUNT, MAX_TOKENS, parse_count, parse_gib_size, parse_memory_size, parse_positive_tokens

Reader = Callable[[str, Any], Any]
_INT = re.compile(r"\s*[+-]?\d+\s*")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def wrong(name: str, value: Any, expected: str) -> InputError:
    """The error for a value of the wrong type: the keyword, what it takes, what it got."""
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return InputError(f"{name} must be {expected}, got {type(value).__name__} {shown}", arg=name)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def integer(name: str, value: Any) -> int:
    """A whole number: 2 or "2"."""
    if _is_int(value):
        return int(value)
    if isinstance(value, str) and _INT.fullmatch(value):
        return int(value)
    raise wrong(name, value, "an int (2, or the text '2')")


def count(name: str, value: Any) -> int:
    """A positive count of things: 64, "64" or "4k" (4,096)."""
    if type(value) is int and 0 < value <= MAX_COUNT:
        return value
    if _is_int(value) or isinstance(value, str):
        return parse_count(value, name)
    raise wrong(name, value, "an int or a count like '64' or '4k'")


def tokens(name: str, value: Any) -> int:
    """Tokens: 32768, "32768" or "32k"."""
    if type(value) is int and 0 < value <= MAX_TOKENS:
        return value
    if _is_int(value) or isinstance(value, str):
        return parse_positive_tokens(value, name)
    raise wrong(name, value, "an int or a token count like '32k'")


def size(name: str, value: Any) -> int:
    """A memory size in bytes: 85899345920 or "80GiB" (at least 1 MiB, or 0)."""
    if _is_int(value) or isinstance(value, str):
        return parse_memory_size(value, name)
    raise wrong(name, value, "an int of bytes or a size like '80GiB'")


def host_size(name: str, value: Any) -> int:
    """A host-memory size in bytes: an int is bytes; text is GiB when bare ("10") and keeps its unit ("10GiB")."""
    if _is_int(value):
        return int(value)
    if isinstance(value, str):
        return parse_gib_size(value, name)
    raise wrong(name, value, "an int of bytes or a size like '10GiB' (a bare '10' is GiB)")


def gib(name: str, value: Any) -> int:
    """A `..._gb` alias (cpu_offload_gb=10): a number is GiB, as the engines' flag takes it."""
    if (_is_int(value) or isinstance(value, float)) and value >= 0:
        return parse_gib_size(str(value), name)
    return host_size(name, value)


def budget(name: str, value: Any) -> tuple[int, ...]:
    """KV memory per GPU: bytes or a size ("20GiB"), or one per PP stage (a list, or "12.13GiB,11GiB")."""
    from kvplan.planning.budget import parse_budget

    if _is_int(value):
        return (int(value),)
    if isinstance(value, str):
        return parse_budget(value)
    if isinstance(value, (list, tuple)) and value:
        return tuple(v for item in value for v in budget(name, item))
    raise wrong(name, value, "an int of bytes, a size like '20GiB', or one per PP stage")


def fraction(name: str, value: Any) -> float:
    """A number: 0.9 or "0.9"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise wrong(name, value, "a float (0.9, or the text '0.9')")


def flag(name: str, value: Any) -> bool:
    """A switch: True/False, or "true"/"false" (yes/no, on/off, 1/0)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    raise wrong(name, value, "a bool (True/False, or the text 'true'/'false')")


def text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    raise wrong(name, value, "a str")


def names(name: str, value: Any) -> tuple[str, ...]:
    """One name or several: "vllm", "vllm,sglang" or ["vllm", "sglang"] -> ("vllm", "sglang"), each once."""
    items: Sequence[Any] = value.split(",") if isinstance(value, str) else value \
        if isinstance(value, (list, tuple)) else ()
    if not items or not all(isinstance(item, str) for item in items):
        raise wrong(name, value, "a str or a list of str ('vllm,sglang' or ['vllm', 'sglang'])")
    out = [item.strip() for item in items]
    if not all(out):
        raise InputError(f"{name} {value!r} has an empty item: give a list like vllm,sglang", arg=name)
    return tuple(dict.fromkeys(out))


def axis(parse: Reader, text_axis: Callable[[str, str], tuple[int, ...]]) -> Reader:
    """A sweep axis: one value, a list of values, or the CLI's text ("1,2,4", "4k..32k")."""

    def read(name: str, value: Any) -> tuple[int, ...]:
        if isinstance(value, str):
            return text_axis(value, name)
        if isinstance(value, (list, tuple, range)) and value:
            return tuple(dict.fromkeys(parse(name, v) for v in value))
        if _is_int(value):
            return (parse(name, value),)
        raise wrong(name, value, "an int, a list of them, or the text '1,2,4' or '4k..32k'")

    return read


def optional(read: Reader) -> Reader:
    """None stays None (the default: the model's, the engine's, the log's)."""

    def read_or_none(name: str, value: Any) -> Any:
        return None if value is None else read(name, value)

    return read_or_none
