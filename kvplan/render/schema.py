"""JSON Schemas of every command's ``--json``, generated from the typed payloads (``kvplan.render.payload``).

A payload's fields are its JSON keys, so its type hints are its schema: ``int`` -> integer, ``X | None`` -> X or
null, ``tuple[X, ...]`` -> an array of X, a dataclass -> an object of its fields (all required but those marked
``OMIT_NONE``; an ``INLINE`` field's keys in its place), a ``dict[str, X]`` -> an object of X. An object admits no
other key, so a key the payload does not declare fails validation; adding a field to a payload adds it here.
`kvplan schema COMMAND` prints one; docs/reference/schemas/ publishes them (tools/readme_examples.py writes them).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Union

from kvplan.records import Record, materialize

Schema = dict[str, Any]  # a JSON Schema
DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCALARS: dict[Any, Schema] = {int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"},
                                  bool: {"type": "boolean"}, type(None): {"type": "null"}, object: {}, Any: {}}


def _payloads() -> dict[str, tuple[Any, str]]:
    """Command -> (the type its --json writes, what it is)."""
    from kvplan.planning.extras import (  # noqa: F401  # Extras's summaries: their modules load when first named
        EncoderSummary,
        HostMemory,
        HostTier,
        LoraSummary,
        RoleSummary,
        SpeculativeSummary,
    )
    from kvplan.render import workload  # noqa: F401  # the size payload's WorkloadPayload, named for type checking
    from kvplan.render.capacity import CapacityPayload
    from kvplan.render.engines import EnginesPayload
    from kvplan.render.fit import FitPayload
    from kvplan.render.models import ModelRow
    from kvplan.render.probe import ProbePayload
    from kvplan.render.reconcile import ReconcilePayload
    from kvplan.render.report import ReportPayload
    from kvplan.render.size import SizePayload
    from kvplan.render.workflows import CompareRow, SweepRow, WastePayload

    return {
        "size": (SizePayload, "kvplan size --json"),
        "capacity": (CapacityPayload | list[CapacityPayload],
                     "kvplan capacity --json: one answer, or a list of them (several engines or KV dtypes)"),
        "fit": (FitPayload, "kvplan fit --json"), "reconcile": (ReconcilePayload, "kvplan reconcile --json"),
        "compare": (list[CompareRow], "kvplan compare --json"), "models": (list[ModelRow], "kvplan models --json"),
        "engines": (EnginesPayload, "kvplan engines --json"), "probe": (ProbePayload, "kvplan probe --json"),
        "report": (ReportPayload, "kvplan report --json"), "waste": (WastePayload, "kvplan waste --json"),
        "sweep": (SweepRow, "kvplan sweep --json: one object per line (JSON lines)"),
    }


COMMANDS = ("capacity", "compare", "engines", "fit", "models", "probe", "reconcile", "report", "size", "sweep", "waste")
EXPLAINED = {"size": "SizePayload", "capacity": "CapacityPayload"}  # --explain adds a list of lines to the object


def command_schema(command: str) -> Schema:
    """The JSON Schema of `command`'s --json output (KeyError: a command without one)."""
    kind, title = _payloads()[command]
    defs: dict[str, Any] = {}
    root = schema_of(kind, defs)
    if command in EXPLAINED:
        defs[EXPLAINED[command]]["properties"]["explain"] = {"type": "array", "items": {"type": "string"}}
    return {"$schema": DIALECT, "$id": f"urn:kvplan:schema:{command}", "title": title, **root,
            "$defs": dict(sorted(defs.items()))}


def schema_of(kind: Any, defs: dict[str, Any]) -> Schema:
    """The schema of a type hint; a dataclass is defined once in `defs` and referred to."""
    if kind in SCALARS:
        return dict(SCALARS[kind])
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        return {"anyOf": [schema_of(a, defs) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (tuple, list, Sequence) or kind in (tuple, list):
        item = args[0] if args and (len(args) == 1 or args[1] is Ellipsis) else Any
        return {"type": "array", "items": schema_of(item, defs)}
    if origin in (dict, Mapping) or kind is dict:
        return {"type": "object", "additionalProperties": schema_of(args[1] if args else Any, defs)}
    if isinstance(kind, type) and issubclass(kind, Record):
        materialize(kind)  # a record nothing has built yet is a dataclass only from then on
    if dataclasses.is_dataclass(kind) or _is_named_tuple(kind):
        name = kind.__name__
        if name not in defs:
            defs[name] = {}  # a placeholder while its fields refer back to it
            defs[name] = _object(kind, defs)
        return {"$ref": f"#/$defs/{name}"}
    if typing.get_origin(kind) is typing.Annotated:
        return schema_of(args[0], defs)
    if isinstance(kind, typing.TypeAliasType if hasattr(typing, "TypeAliasType") else ()):
        return schema_of(kind.__value__, defs)
    return {}  # JSON data of any shape (a payload's open JsonValue)


def _is_named_tuple(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    """Its fields' types, with names its module imports only for type checking (WorkloadPayload) found among the
    payload modules'."""
    import sys

    payload_types = {name: value for module in list(sys.modules.values())
                     if getattr(module, "__name__", "").startswith("kvplan.render.")
                     for name, value in vars(module).items() if isinstance(value, type)}
    return typing.get_type_hints(kind, globalns=vars(sys.modules[kind.__module__]), localns=payload_types)


def _object(kind: Any, defs: dict[str, Any]) -> Schema:
    """A payload's object: its fields in order, required unless omitted when None; inlined fields' keys merged."""
    if isinstance(kind, type) and issubclass(kind, Record):
        materialize(kind)
    hints = _hints(kind)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields = dataclasses.fields(kind) if dataclasses.is_dataclass(kind) else ()
    metadata: dict[str, Mapping[str, Any]] = {f.name: f.metadata for f in fields}
    for name in (f.name for f in fields) if fields else kind._fields:
        hint = hints[name]
        if metadata.get(name, {}).get("inline"):
            inner = _inline(hint, defs)
            properties.update(inner["properties"])
            required += inner["required"]
            continue
        properties[name] = schema_of(hint, defs)
        if not metadata.get(name, {}).get("omit_none"):
            required.append(name)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _inline(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """An inlined field's keys: those of its dataclass (of any of them, for a union; required: those all share)."""
    options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    shapes = [_object(a, defs) for a in options]
    properties = {k: s for shape in shapes for k, s in shape["properties"].items()}
    required = [k for k in shapes[0]["required"] if all(k in s["required"] for s in shapes)]
    return {"properties": properties, "required": required}
