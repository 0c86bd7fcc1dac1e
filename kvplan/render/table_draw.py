"""A table of one-line cells drawn as rich's ``Table`` draws it, without its per-cell layout.

rich lays out every cell as a ``Padding`` around a ``Text``: each measured, wrapped, justified, cropped and padded
through nested ``render_lines`` (two thirds of what `kvplan capacity` spent drawing its tables). A cell that is one
line rich keeps as written, in a column that never wraps, of a table that fits, needs none of it: its column is as
wide as its widest cell, and it is drawn as rich draws it: `` `` + the text justified to the column + `` ``, in the
header's style on the header row. The console writes an unstyled segment's text as it is, so a run of unstyled
pieces (borders, body cells, line ends) is one segment; a styled piece is its own, as rich's (its style is written
around it). ``drawable`` says which tables; anything else is rich's (kvplan.render.tables). tests/render/
test_table_draw.py checks the output, and the segments, are rich's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Protocol

    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.segment import Segment
    from rich.style import Style

    class Column(Protocol):  # kvplan.render.tables.Column (which imports this module)
        @property
        def header(self) -> str: ...
        @property
        def justify(self) -> str: ...
        @property
        def wrap(self) -> bool: ...

Piece = tuple[str, "Style | None"]


def _kept(text: str) -> bool:
    """One line that rich's ``Text`` keeps as written: printable (no control code it strips, no tab it expands, no
    newline), no space at either end (a right-justified cell loses its trailing ones)."""
    return text.isprintable() and text == text.strip()


def drawable(columns: Sequence[Column], rows: Sequence[tuple[str, ...]], widths: Sequence[int]) -> bool:
    """Whether rich draws the table cell for cell as DrawnTable does (`widths`: each column's widest cell): one-line
    cells kept as written, left or right, in columns that never wrap, none empty (rich gives one a width of its
    own)."""
    return bool(columns) and all(widths) and all(not c.wrap and c.justify in ("left", "right") and _kept(c.header)
                                                 for c in columns) and all(_kept(cell) for row in rows for cell in row)


class DrawnTable:
    """The rows under their headers, boxed (rich's default HEAVY_HEAD), each column `widths` cells wide."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[tuple[str, ...]], widths: Sequence[int]) -> None:
        self.columns, self.rows, self.widths = columns, rows, widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.box import HEAVY_HEAD
        from rich.cells import cell_len
        from rich.style import Style

        box = HEAVY_HEAD.substitute(options, safe=console.safe_box)
        border = console.get_style("") + console.get_style("")  # rich: the table's style + its border style (unset)
        pad = console.get_style("none")  # the style of rich's Padding around each cell
        header = console.get_style("table.header") + console.get_style("") + Style.null()
        padded = [w + 2 for w in self.widths]  # rich's padding: one cell each side

        def cells(texts: Iterable[str], style: Style | None, pad_style: Style) -> list[tuple[Piece, ...]]:
            return [((" ", pad_style), (_justified(text, w, c.justify, cell_len), style), (" ", pad_style))
                    for text, c, w in zip(texts, self.columns, self.widths, strict=True)]

        lines = [cells((c.header for c in self.columns), header, header + pad)]
        lines += [cells(row, None, pad) for row in self.rows]
        pieces: list[Piece] = [(box.get_top(padded), border), ("\n", None)]
        for index, line in enumerate(lines):
            edges = (box.head_left, box.head_right, box.head_vertical) if index == 0 else \
                (box.foot_left, box.foot_right, box.foot_vertical) if index == len(lines) - 1 else \
                (box.mid_left, box.mid_right, box.mid_vertical)
            divider = edges[2], border if edges[2].strip() else Style.null().background_style + border
            pieces.append((edges[0], border))
            for i, cell in enumerate(line):
                pieces += [divider, *cell] if i else cell
            pieces += [(edges[1], border), ("\n", None)]
            if index == 0:
                pieces += [(box.get_row(padded, "head", edge=True), border), ("\n", None)]
        pieces += [(box.get_bottom(padded), border), ("\n", None)]
        yield from merged(pieces)


def merged(pieces: Iterable[Piece]) -> Iterator[Segment]:
    """Each styled piece a segment; each run of unstyled ones one segment (written as the same text)."""
    from rich.segment import Segment

    run: list[str] = []
    for text, style in pieces:
        if style:
            if run:
                yield Segment("".join(run))
                run = []
            yield Segment(text, style)
        else:
            run.append(text)
    if run:
        yield Segment("".join(run))


def _justified(text: str, width: int, justify: str, cell_len: Callable[[str], int]) -> str:
    space = " " * (width - cell_len(text))
    return text + space if justify == "left" else space + text
