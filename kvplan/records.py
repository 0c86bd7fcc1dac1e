"""Frozen, keyword-only dataclasses whose methods are generated on first use.

A dataclass's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` are written
as source text and compiled when the class is defined (one compile per method on Python 3.11): 0.3-0.8 ms a
class, most of kvplan's own import time. There are twelve layer specs, and a model uses one to four of them (a Llama
only ``FullAttn``). So ``@record`` puts that work off until the class is first instantiated (or unpickled), and a
class that a run never builds never pays for it.

From its first instance on, a record is exactly what ``@dataclass(frozen=True, kw_only=True)`` makes: ``fields``,
``replace`` and ``asdict`` work, and so do equality and hashing. There are two limits, both checked by
tests/test_records.py. First, calling ``dataclasses.fields(cls)`` on a class that nothing has built yet needs
``materialize(cls)`` first. Second, a record's subclasses must be records too, because a plain dataclass would not
see the fields of a base that has not been generated yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # typing has it from 3.11, typing_extensions costs 3 ms to import: type checkers alone read it
    def dataclass_transform(**_: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return lambda decorator: decorator

T = TypeVar("T")
_PENDING = "__record_pending__"


@dataclass_transform(frozen_default=True, kw_only_default=True)
def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, kw_only=True)``, generated when `cls` is first instantiated or unpickled."""

    def first_init(self: Any, *args: Any, **kwargs: Any) -> None:
        materialize(cls)
        cls.__init__(self, *args, **kwargs)  # the generated __init__ from now on

    def first_setstate(self: Any, state: dict[str, Any]) -> None:  # pickle builds instances without __init__
        materialize(type(self))
        self.__dict__.update(state)

    cls.__init__ = first_init  # type: ignore[method-assign]
    cls.__setstate__ = first_setstate  # type: ignore[attr-defined]
    setattr(cls, _PENDING, True)
    return cls


def materialize(cls: type[T]) -> type[T]:
    """Generate the dataclass methods of `cls` and of its record bases now (nothing where they already are)."""
    for klass in reversed(cls.__mro__):  # bases first: a dataclass reads its bases' fields
        if klass.__dict__.get(_PENDING):
            for placeholder in (_PENDING, "__init__", "__setstate__"):  # dataclass() keeps what a class defines
                delattr(klass, placeholder)
            dataclass(frozen=True, kw_only=True)(klass)
    return cls
