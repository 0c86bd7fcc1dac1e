"""The one table every command prints: whole cells at any width.

``Table`` takes the part of rich's ``Table`` API that kvplan uses (a title, ``add_column``,
``add_row`` of strings) and decides how to draw itself when it is printed, from the width the
console offers:

- the table fits with every cell whole (numbers, names and dtypes never wrap; only columns added
  with ``wrap=True``, prose such as reconcile's "why", break between words): a rich table, drawn
  exactly as rich draws it (one of one-line cells and no wrapping column by kvplan.render.table_draw,
  which writes the same output without rich's per-cell layout);
- it does not: a stacked layout. Each row becomes a heading (its first cell) followed by
  ``header: value`` items, as many per line as fit; an item is never split, so no number is cut.

A table of a few rows with one value per column (``capacity --engine all``: quantities down,
engines across) stacks by column instead (``stack="columns"``): one block per engine.

Nothing here imports rich until a table is drawn, so building tables costs nothing on start-up.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.table import Table as RichTable
    from rich.text import Text

    from kvplan.render.table_draw import DrawnTable

Justify = Literal["left", "right", "center"]
INDENT = "  "
SEPARATOR = " · "


class Column:
    """A column's header, its cells' justification, and whether it may wrap: a plain class (a NamedTuple was a
    third of importing this module, which every command does)."""

    __slots__ = ("header", "justify", "wrap")

    def __init__(self, header: str, justify: Justify = "left", wrap: bool = False) -> None:
        self.header, self.justify = header, justify
        self.wrap = wrap  # prose only: may break between words (never inside one)


def cell_width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def min_cell_width(text: str, wrap: bool) -> int:
    """The narrowest a cell can be drawn whole: its longest line, or its longest word when it may wrap."""
    from rich.cells import cell_len

    if not wrap and text.isprintable():  # one line (every line break is unprintable): the usual cell
        return cell_len(text)
    pieces = text.split() if wrap else text.splitlines()
    return max(map(cell_len, pieces), default=0)


class Table:
    """Title, columns and rows of strings; drawn as a rich table when it fits, stacked otherwise."""

    def __init__(self, title: str = "", *, title_justify: Justify = "left",
                 stack: Literal["rows", "columns"] = "rows") -> None:
        self.title = title
        self.title_justify: Justify = title_justify
        self.stack = stack
        self.columns: list[Column] = []
        self.rows: list[tuple[str, ...]] = []

    def add_column(self, header: str = "", *, justify: Justify = "left", wrap: bool = False,
                   no_wrap: bool = True) -> None:
        """``no_wrap`` is accepted for rich's signature; only ``wrap=True`` lets a column wrap."""
        self.columns.append(Column(header, justify, wrap))

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(tuple(cells))

    def column_widths(self) -> list[int]:
        """Each column at its narrowest whole width (its header's and its cells')."""
        return [max([min_cell_width(c.header, c.wrap), *(min_cell_width(r[i], c.wrap) for r in self.rows)])
                for i, c in enumerate(self.columns)]

    def min_width(self, widths: list[int] | None = None) -> int:
        """Columns at their narrowest whole width, plus rich's padding (1 each side) and borders."""
        widths = self.column_widths() if widths is None else widths
        return sum(w + 2 for w in widths) + len(widths) + 1

    def fits(self, width: int) -> bool:
        return self.min_width() <= width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.column_widths()
        fits = self.min_width(widths) <= options.max_width
        if fits and self.title and self.title_justify == "left":
            from rich.text import Text

            yield Text(self.title, style="italic")  # a line of its own: rich wraps a title at the table's width
            yield self.drawn(widths)
        elif fits:
            yield self.rich_table() if self.title else self.drawn(widths)
        else:
            yield from self.stacked(options.max_width)

    def rich_table(self, titled: bool = True) -> RichTable:
        """The rich table, every string as plain text: a ``[name]`` in a cell (a log's ``[gpu_worker.py:462]``) stays
        as written instead of being read as rich markup and dropped."""
        from rich.table import Table as RichTable
        from rich.text import Text

        table = RichTable(title=Text(self.title, style="table.title") if titled and self.title else None,
                          title_justify=self.title_justify)
        for c in self.columns:
            table.add_column(Text(c.header), justify=c.justify, no_wrap=not c.wrap)
        for row in self.rows:
            table.add_row(*map(Text, row))
        return table

    def drawn(self, widths: list[int]) -> DrawnTable | RichTable:
        """The untitled table that fits (`widths`: ``column_widths()``): drawn by kvplan.render.table_draw where rich
        would draw it the same, cell for cell (one-line cells, no wrapping column), without rich's per-cell layout;
        else rich's."""
        from kvplan.render.table_draw import DrawnTable, drawable

        if drawable(self.columns, self.rows, widths):
            return DrawnTable(self.columns, self.rows, widths)
        return self.rich_table(titled=False)

    def blocks(self) -> Iterator[tuple[str, list[str]]]:
        """(heading, items) per row, or per column with stack="columns"."""
        if self.stack == "columns":
            for i, c in enumerate(self.columns[1:], 1):
                yield c.header, _items([(r[0], r[i]) for r in self.rows])
            return
        for row in self.rows:
            yield _items([(self.columns[0].header, row[0])])[0], _items(
                [(c.header, cell) for c, cell in zip(self.columns[1:], row[1:], strict=True)])

    def stacked(self, width: int) -> Iterator[Text]:
        from rich.text import Text

        if self.title:
            yield Text(self.title, style="italic")
        for heading, items in self.blocks():
            yield Text(heading, style="bold")
            for line in pack(items, width - len(INDENT)):
                yield Text(INDENT + line)


def _items(pairs: list[tuple[str, str]]) -> list[str]:
    """`header: value` items; a cell under an empty header continues the item before it (`1,024 (1.00 KiB)`),
    an empty cell is left out, a multi-line cell becomes one line."""
    items: list[str] = []
    for header, cell in pairs:
        value = " ".join(cell.split())
        if not value:
            continue
        if header or not items:
            items.append(f"{header}: {value}" if header else value)
        else:
            items[-1] += f" ({value})"
    return items or [""]


def wrap_line(text: str, width: int, indent: str = "  ") -> list[str]:
    """A long line (an engine's log line, a note, reconcile's rules) cut at spaces into lines of at most `width`
    cells, the rest indented: a number or a path is never split (one longer than a line stands alone)."""
    import textwrap

    out: list[str] = []
    for line in text.splitlines() or [""]:
        lead = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, max(width, 20), subsequent_indent=lead + indent, break_long_words=False,
                             break_on_hyphens=False) or [line]
    return out


class CommandLine(str):
    """A command to paste, after its label (`launch: vllm serve ...`): printed by `shell_lines`, never wrapped by
    the console (a real newline inside it would run half the command)."""

    label: str
    command: str

    def __new__(cls, label: str, command: str) -> CommandLine:
        line = super().__new__(cls, f"{label}: {command}")
        line.label, line.command = label, command
        return line


def shell_lines(line: CommandLine, width: int | None, indent: str = "  ") -> list[str]:
    """The command on one logical line where no width is known (a terminal soft-wraps it, and a copy keeps it
    whole); else cut between shell words, a flag kept with its value, every line but the last ending in ` \\`
    (a shell joins them back). A word longer than a line stands alone on its line."""
    if width is None or cell_width(line) <= width:
        return [str(line)]
    import shlex  # only to cut the command: one line is written as it is
    pieces: list[list[str]] = []
    for word in shlex.split(line.command):
        flag = bool(pieces) and len(pieces[-1]) == 1 and pieces[-1][0].startswith("-")
        pieces[-1:] = [[*pieces[-1], word]] if flag and not word.startswith("-") else [*pieces[-1:], [word]]
    out, current = [], f"{line.label}:"
    for piece in (" ".join(map(shlex.quote, p)) for p in pieces):
        if current.strip() and not current.endswith(":") and cell_width(f"{current} {piece} \\") > width:
            out.append(f"{current} \\")
            current = indent + piece
        else:
            current = f"{current} {piece}" if current.strip() else indent + piece
    return [*out, current]


def pack(items: list[str], width: int) -> list[str]:
    """Items joined by SEPARATOR into lines of at most `width` cells; an item longer than a line stands alone
    (the terminal then wraps it between words)."""
    lines: list[str] = []
    for item in items:
        if lines and cell_width(lines[-1]) + len(SEPARATOR) + cell_width(item) <= width:
            lines[-1] += SEPARATOR + item
        else:
            lines.append(item)
    return lines
