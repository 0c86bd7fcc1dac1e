"""Typed payloads -> JSON: the one serialiser every command's ``--json`` goes through.

A payload is a frozen dataclass whose field names are its JSON keys, in order. ``plain`` turns it into
JSON data: a dataclass becomes an object of its fields (in declaration order), a tuple or list an array,
recursively. Two field markers keep the contract's shape without dicts:

- ``INLINE``: the field is a dataclass whose own keys are written in its place (a capacity answer's
  budget keys, a layer group's head columns), as ``{**a, **b}`` would;
- ``OMIT_NONE``: the key is written only when the value is not None (``log_line``, a size answer's
  ``workload``, MLA's ``kv_lora_rank``): keys some answers have and others do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import TypeAlias

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
JsonObject: TypeAlias = dict[str, JsonValue]

INLINE = {"inline": True}
OMIT_NONE = {"omit_none": True}


def plain(value: object) -> JsonValue:
    """JSON data of a payload: dataclasses -> objects (field order kept), tuples -> lists, recursively."""
    if is_dataclass(value) and not isinstance(value, type):
        return _object(value)
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"not JSON data: {type(value).__name__}")


def _object(obj: object) -> JsonObject:
    out: JsonObject = {}
    for f in fields(obj):  # type: ignore[arg-type]  # a dataclass instance (checked by the caller)
        value = getattr(obj, f.name)
        if f.metadata.get("inline"):
            inner = plain(value)
            if isinstance(inner, dict):
                out.update(inner)
            elif inner is not None:
                raise TypeError(f"{f.name}: an inlined field must be a dataclass or None")
        elif value is not None or not f.metadata.get("omit_none"):
            out[f.name] = plain(value)
    return out
