"""A plain record's dataclass bookkeeping (``__dataclass_fields__``, ``__dataclass_params__``, ``__match_args__``)
without ``dataclasses.dataclass``: most of what that still costs a record is its checks of every string annotation
for ``ClassVar``, ``InitVar`` and ``KW_ONLY`` (two regular-expression matches a field). A class whose annotations
name any of the three, or are not strings, goes through dataclass itself (``declare_fields`` answers None).
"""

from __future__ import annotations

import abc
from dataclasses import _FIELD, _FIELDS, _PARAMS, MISSING, Field, _DataclassParams  # type: ignore[attr-defined]
from types import MemberDescriptorType
from typing import Any


def declare_fields(klass: type, *, kw_only: bool) -> list[Field[Any]] | None:
    """What @dataclass(frozen=True, kw_only=kw_only) records on `klass` about its fields, as it records them; its
    fields, as ``dataclasses.fields`` lists them (None: a class for dataclass itself). Loops rather than generator
    expressions: this runs for every record a run builds."""
    annotations: dict[str, Any] = vars(klass).get("__annotations__", {})
    for hint in annotations.values():
        if type(hint) is not str or "ClassVar" in hint or "InitVar" in hint or "KW_ONLY" in hint:  # for dataclass
            return None
    all_fields, frozen_bases, dataclass_bases = _base_fields(klass)
    if dataclass_bases and not frozen_bases:
        raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
    for name, hint in annotations.items():
        all_fields[name] = _own_field(klass, name, hint, kw_only)
    for name, value in vars(klass).items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    setattr(klass, _FIELDS, all_fields)
    setattr(klass, _PARAMS, _params())
    if "__match_args__" not in vars(klass):
        klass.__match_args__ = tuple(  # type: ignore[attr-defined,misc]
            f.name for f in all_fields.values() if f.init and not f.kw_only)
    abc.update_abstractmethods(klass)
    return [f for f in all_fields.values() if f._field_type is _FIELD]  # type: ignore[attr-defined]


def _base_fields(klass: type) -> tuple[dict[str, Field[Any]], bool, bool]:
    """The bases' fields, base first (a subclass's field of the same name takes its place), and whether any base
    is a frozen dataclass / a dataclass at all."""
    all_fields: dict[str, Field[Any]] = {}
    frozen = has_bases = False
    for base in klass.__mro__[-1:0:-1]:
        base_fields = getattr(base, _FIELDS, None)
        if base_fields is not None:
            has_bases = True
            all_fields.update((f.name, f) for f in base_fields.values())
            frozen = frozen or getattr(base, _PARAMS).frozen
    return all_fields, frozen, has_bases


def _own_field(klass: type, name: str, hint: str, kw_only: bool) -> Field[Any]:
    """dataclass's _get_field for a plain field, and the class attribute it leaves (the default, or none)."""
    default = getattr(klass, name, MISSING)
    declared_field = isinstance(default, Field)  # dataclass reads the attribute twice; it is the same both times
    if isinstance(default, Field):
        made = default
    else:
        if isinstance(default, MemberDescriptorType):  # a slot, not a default
            default = MISSING
        made = Field(default, MISSING, True, True, None, True, None, kw_only)  # type: ignore[arg-type]  # field(default=...)
    made.name, made.type, made._field_type = name, hint, _FIELD  # type: ignore[attr-defined]
    if made.kw_only is MISSING:
        made.kw_only = kw_only
    if made.default.__class__.__hash__ is None:
        raise ValueError(f"mutable default {type(made.default)} for field {name} is not allowed: use default_factory")
    if declared_field:
        if made.default is MISSING:
            delattr(klass, name)
        else:
            setattr(klass, name, made.default)
    return made


def _params() -> Any:
    """The parameters a record has: init, repr, eq and frozen (3.12 adds four more, at their defaults)."""
    try:
        return _DataclassParams(True, True, True, False, False, True)
    except TypeError:
        return _DataclassParams(True, True, True, False, False, True, True, False, False, False)
