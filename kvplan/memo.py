"""Small caches for work repeated on the same frozen objects (issue 33): a capacity answer reads one resolved
request's budget rules three times, and every capacity of one model pages the same cached layout again.

``IdentityCache`` keys on the identity of the objects a result is computed from, not on their hash: a layout or a
request is a tree of frozen dataclasses whose hash walks every layer spec on each lookup, more work than some of the
results it would find. Each entry holds the object it was keyed on, so no id in a live key can be reused by another
object. Bounded: a full cache is cleared, never grown.

A cached value is shared by every caller that gets it: callers read it, never mutate it.

``long_lived`` pauses the garbage collector while objects the process keeps are made (the CLI's imports, a parsed
table); the command line also freezes them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class IdentityCache(Generic[T]):
    """Values computed from one object (by identity) and a small hashable `extra` value (by equality)."""

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._entries: dict[tuple[int, object], tuple[Any, T]] = {}

    def get(self, obj: Any, extra: object, compute: Callable[[], T]) -> T:
        """The value for (obj, extra), computed once. An entry holds its object, so while it is here no other object
        can have that id: a key found is the same object."""
        key = (id(obj), extra)
        hit = self._entries.get(key)
        if hit is not None:
            return hit[1]
        value = compute()
        if len(self._entries) >= self.maxsize:
            self._entries.clear()
        self._entries[key] = (obj, value)
        return value

    def clear(self) -> None:
        self._entries.clear()


@contextmanager
def long_lived(*, freeze: bool = False) -> Iterator[None]:
    """Around making objects the process keeps (modules imported for good, a parsed table cached): no collection runs
    while they are made, for none would free them. `freeze` (the command line's, never a library call's: it takes
    every live object): frozen, later collections skip them too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
