"""An engine release's version: the one parser of version text in kvplan, and how a row's version compares.

Text is read for the dotted numbers it starts with (after a ``v``): ``v0.10.1.1`` -> 0.10.1.1, ``0.19.1rc1.dev5`` -> 0.19.1 (what
follows a number that is not a number ends the release), ``0.6.4.dev26+g92d86da2`` -> 0.6.4, ``0.8-v0`` -> 0.8
(its ``-v0`` kept as the suffix: the V0 row of 0.8 sorts before 0.8.0); text that starts with no number has
none (``x0.19`` -> no version). A release row's
key covers every patch release it stands for: ``at_least``/``below`` compare on as many parts as the row's key has
(the row ``0.10`` stands for every 0.10.x, so it is at least 0.10.2). Comparisons of versions belong to the
engines' release rows (``tests/engines/test_timeline.py`` finds any elsewhere).
"""

from __future__ import annotations

from operator import itemgetter

_NUMBERS = r"v?(\d+(?:\.\d+)*)(\S*)"  # compiled on first parse (re's cache): most runs parse no version


class Version(tuple[tuple[int, ...], str]):
    """A release's numbers and what follows them (``rc1``, ``-v0``, ``.dev26+g92d86da2``; "" for none).

    The pair (parts, suffix) as a tuple, compared and hashed as one (what ``NamedTuple`` made of it, without the
    code ``namedtuple`` compiles at import)."""

    __slots__ = ()
    parts: tuple[int, ...] = property(itemgetter(0))  # type: ignore[assignment]
    suffix: str = property(itemgetter(1))  # type: ignore[assignment]

    def __new__(cls, parts: tuple[int, ...], suffix: str = "") -> Version:
        return tuple.__new__(cls, (parts, suffix))

    def __getnewargs__(self) -> tuple[tuple[int, ...], str]:
        return self.parts, self.suffix

    def __repr__(self) -> str:
        return f"Version(parts={self.parts!r}, suffix={self.suffix!r})"

    @classmethod
    def parse(cls, text: str) -> Version:
        """The dotted numbers `text` starts with (``Version(())`` where there are none)."""
        import re  # imported already by then (kvplan.cli); the pattern is compiled once, into re's cache

        found = re.match(_NUMBERS, text.strip())
        if found is None:
            return cls(())
        return cls(tuple(int(p) for p in found.group(1).split(".")), found.group(2))

    def __str__(self) -> str:
        return ".".join(map(str, self.parts))

    def at_least(self, bound: str | Version) -> bool:
        """This row's version ≥ bound, on this version's parts ('0.10' ≥ '0.10.2': the 0.10 row holds 0.10.2)."""
        other = bound if isinstance(bound, Version) else Version.parse(bound)
        return self.parts >= other.parts[: len(self.parts)]

    def below(self, bound: str | Version) -> bool:
        return not self.at_least(bound)

    def prefixes(self) -> tuple[str, ...]:
        """'0.19.1' -> ('0.19.1', '0.19', '0'): the rows a release may fall to, longest first."""
        return tuple(".".join(map(str, self.parts[:end])) for end in range(len(self.parts), 0, -1))

    def order(self) -> tuple[tuple[int, int, str], ...]:
        """A sort key: by the numbers, a row with a suffix (0.8-v0) before the plain row of its numbers (0.8)."""
        last = len(self.parts) - 1
        return tuple((n, 0 if i == last and self.suffix.startswith("-") else 1, self.suffix if i == last else "")
                     for i, n in enumerate(self.parts))


def below(row: str, bound: str) -> bool:
    """The row key's version < bound, on the key's parts (``Version.below``)."""
    return Version.parse(row).below(bound)


def listed_from(order: tuple[str, ...], release: str, first: str) -> bool:
    """`release` is `first` (or a patch of it) or later, in `order`: an engine's releases as its tables list them."""
    return order.index(release) >= next(i for i, r in enumerate(order) if r.startswith(first))
