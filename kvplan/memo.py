"""Small caches for work repeated on the same frozen objects (issue 33): a capacity answer reads one resolved
request's budget rules three times, and every capacity of one model pages the same cached layout again.

``IdentityCache`` keys on the identity of the objects a result is computed from, not on their hash: a layout or a
request is a tree of frozen dataclasses whose hash walks every layer spec on each lookup, more work than some of the
results it would find. Each entry holds the objects it was keyed on, so no id in a live key can be reused by another
object, and a hit is checked to be the same objects. Bounded: a full cache is cleared, never grown.

A cached value is shared by every caller that gets it: callers read it, never mutate it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class IdentityCache(Generic[T]):
    """Values computed from `objects` (by identity) and small hashable `extra` values (by equality)."""

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._entries: dict[tuple[Hashable, ...], tuple[tuple[Any, ...], T]] = {}

    def get(self, objects: tuple[Any, ...], extra: tuple[Hashable, ...], compute: Callable[[], T]) -> T:
        key = (*map(id, objects), *extra)
        hit = self._entries.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], objects, strict=True)):
            return hit[1]
        value = compute()
        if len(self._entries) >= self.maxsize:
            self._entries.clear()
        self._entries[key] = (objects, value)
        return value

    def clear(self) -> None:
        self._entries.clear()
