"""Small HTML pieces: escaping, tables, numbers with their units, sections.

Text is escaped unless it is ``Html`` (markup this package built). Numbers are printed in full
with thousands separators, bytes with their binary size beside them, so that every number of the
JSON answer can be found on the page as text.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from kvplan.render import human_bytes


class Html(str):
    """Markup built here: inserted as it is."""

    __slots__ = ()


Cell = str | int | float | None
WIDE = 9  # columns from which a table does not fit a printed page: its rows print as cards
WIDE_HEADER_CHARS = 80  # ... or header text from which it does not (long engine release names)


def esc(value: Cell) -> str:
    return value if isinstance(value, Html) else html.escape("" if value is None else str(value))


def join(parts: Iterable[str]) -> Html:
    return Html("".join(parts))


def tag(name: str, body: Cell, cls: str = "", **attrs: str) -> Html:
    extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{html.escape(v)}"' for k, v in attrs.items())
    klass = f' class="{cls}"' if cls else ""
    return Html(f"<{name}{klass}{extra}>{esc(body)}</{name}>")


def num(value: int | float | None, digits: int = 2) -> str:
    """1,234 for ints (and whole floats), 12.35 for the rest, - for None."""
    if value is None:
        return "-"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def size(num_bytes: int | None) -> Html:
    """The bytes in full, and below them in binary units (GiB, MiB, KiB)."""
    if num_bytes is None:
        return Html("-")
    human = human_bytes(abs(num_bytes))
    unit = "" if human.endswith(" B") else f'<span class="u">{"−" if num_bytes < 0 else ""}{human}</span>'
    return Html(f"{num_bytes:,}{unit}")


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], numeric: Iterable[int] = (),
          cls: str = "", row_classes: Sequence[str] = ()) -> Html:
    """A table in a horizontally scrolling box; `numeric` columns are right-aligned. On a phone (and, for a
    table too wide for paper: WIDE columns or more, or long headers) each row becomes a card of
    "header: value" lines: the headers ride along as data-label."""
    right = set(numeric)
    head = join(tag("th", h, "n" if i in right else "") for i, h in enumerate(headers))
    marks = list(row_classes)
    body = join(_tr(join(_td(headers[i] if i < len(headers) else "", v, i in right) for i, v in enumerate(row)),
                    marks[k] if k < len(marks) else "") for k, row in enumerate(rows))
    wide = len(headers) >= WIDE or sum(len(str(h)) for h in headers) > WIDE_HEADER_CHARS
    classes = " ".join(c for c in ("cards", "wide" if wide else "", cls) if c)
    return Html(f'<div class="wrap"><table class="{classes}"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>")


def _td(label: str, value: Cell, numeric: bool) -> str:
    klass = ' class="n"' if numeric else ""
    return f'<td{klass} data-label="{html.escape(label)}"><div>{esc(value)}</div></td>'


def _tr(cells: str, cls: str) -> str:
    return f'<tr class="{cls}">{cells}</tr>' if cls else f"<tr>{cells}</tr>"


def badge(exact: bool) -> Html:
    return Html('<span class="badge exact">exact</span>' if exact else '<span class="badge est">estimate</span>')


def section(anchor: str, number: int, title: str, lead: str, body: Iterable[str]) -> Html:
    return Html(f'<section id="{anchor}"><h2><span class="n">{number}.</span>{esc(title)}</h2>'
                f'<p class="lead">{esc(lead)}</p>{join(body)}</section>')


def items(lines: Iterable[str], cls: str = "") -> Html:
    found = list(lines)
    return tag("ul", join(tag("li", line) for line in found), cls) if found else Html("")


def pre(lines: Iterable[str], cls: str = "log") -> Html:
    return tag("pre", "\n".join(lines), cls)
