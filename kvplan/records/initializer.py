"""A record's ``__init__``, made with as little compiling as it can be (see kvplan.records).

Most records' fields are all keyword arguments with a plain default or none: their ``__init__`` is one code object
compiled with this module, renamed per class (``code.replace``: its parameters are the fields), that stores its
``locals()`` in the instance's dict. Nothing is parsed per class. A record with a default factory or a field left
out of ``__init__`` gets a compiled ``__init__`` instead, from a source shorter than dataclass's.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import _HAS_DEFAULT_FACTORY, MISSING, Field  # type: ignore[attr-defined]
from types import FunctionType
from typing import Any


def _store_values(self: Any, values: dict[str, Any]) -> None:
    """The fields' values, in their order (the parameters'), as a frozen dataclass's __init__ sets them."""
    del values["self"]
    self.__dict__.update(values)


def _store_values_then_post_init(self: Any, values: dict[str, Any]) -> None:
    del values["self"]
    self.__dict__.update(values)
    self.__post_init__()


def _template(self: Any, *, field: Any) -> None:  # its code, renamed: `field` becomes the fields (and their kinds)
    _store_values(self, locals())


_PLAIN_GLOBALS = {"_store_values": _store_values, "__builtins__": builtins}
_POST_INIT_GLOBALS = {"_store_values": _store_values_then_post_init, "__builtins__": builtins}


def init_fn(klass: type, all_fields: Sequence[Field[Any]]) -> Callable[..., None]:
    """dataclass's ``__init__`` for `klass`: the same parameters (positional ones first, then keyword-only ones),
    defaults and annotations."""
    positional = [f for f in all_fields if f.init and not f.kw_only]
    keyword = [f for f in all_fields if f.init and f.kw_only]
    _check_default_order(positional)
    if [*positional, *keyword] == list(all_fields) and all(f.default_factory is MISSING for f in all_fields):
        init = _renamed_template(klass, positional, keyword)
    else:
        init = _compiled(klass, all_fields, positional)
    init.__annotations__ = {**{f.name: f.type for f in (*positional, *keyword)}, "return": None}
    return init


def _check_default_order(positional: list[Field[Any]]) -> None:
    """dataclass's own check: a positional parameter without a default after one with a default."""
    seen_default = False
    for f in positional:
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _renamed_template(klass: type, positional: list[Field[Any]], keyword: list[Field[Any]]) -> Callable[..., None]:
    names = tuple(f.name for f in (*positional, *keyword))
    code = _template.__code__.replace(co_varnames=("self", *names), co_nlocals=len(names) + 1,
                                      co_argcount=len(positional) + 1, co_kwonlyargcount=len(keyword),
                                      co_name="__init__", co_qualname=f"{klass.__qualname__}.__init__")  # type: ignore[call-arg]
    # (co_qualname: Python 3.11 on, as the short path)
    globals_ = _POST_INIT_GLOBALS if hasattr(klass, "__post_init__") else _PLAIN_GLOBALS
    init = FunctionType(code, globals_, "__init__", tuple(f.default for f in positional if f.default is not MISSING)
                        or None)
    init.__kwdefaults__ = {f.name: f.default for f in keyword if f.default is not MISSING} or None
    return init


def _compiled(klass: type, all_fields: Sequence[Field[Any]], positional: list[Field[Any]]) -> Callable[..., None]:
    """The __init__ compiled from source: values stored in order straight into the instance's dict (a frozen
    dataclass's object.__setattr__ calls, one line a field, do the same)."""
    defaults: list[Any] = []
    params: dict[str, str] = {}
    stored = []
    for f in all_fields:
        if f.default_factory is not MISSING:
            defaults.append(f.default_factory)
            made = f"__d[{len(defaults) - 1}]()"
            if f.init:
                params[f.name] = f"{f.name}=__F"
                stored.append(f"{f.name}={made} if {f.name} is __F else {f.name}")
            else:
                stored.append(f"{f.name}={made}")
        elif f.init:
            if f.default is MISSING:
                params[f.name] = f.name
            else:
                defaults.append(f.default)
                params[f.name] = f"{f.name}=__d[{len(defaults) - 1}]"
            stored.append(f"{f.name}={f.name}")
    body = [f"  self.__dict__.update({','.join(stored)})"] if stored else []
    if hasattr(klass, "__post_init__"):
        body.append("  self.__post_init__()")
    first = [params.pop(f.name) for f in positional]
    signature = ",".join(["self", *first, *(["*", *params.values()] if params else [])])
    source = (f"def __create_fn__(__d,__F):\n def __init__({signature}):\n"
              + ("\n".join(body) or "  pass") + "\n return __init__")
    namespace: dict[str, Any] = {}
    exec(source, {}, namespace)  # the field names come from the class body, as dataclass's source does
    init: Callable[..., None] = namespace["__create_fn__"](defaults, _HAS_DEFAULT_FACTORY)
    return init
