"""A table of one-line cells drawn as rich's ``Table`` draws it, segment for segment, without its per-cell layout.

rich lays out every cell as a ``Padding`` around a ``Text``: each measured, wrapped, justified, cropped and padded
through nested ``render_lines`` (two thirds of what `kvplan capacity` spent drawing its tables). A cell that is one
line rich keeps as written, in a column that never wraps, of a table that fits, needs none of it: its width is its
cell length, and it is drawn as rich draws it: `` `` + the text justified to the column + `` ``, in the header's
style on the header row. The console turns these segments into text (colours, or none) as it does rich's own.
``drawable`` says which tables; anything else is rich's (kvplan.render.tables). tests/render/test_table_draw.py
checks the segments are rich's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.segment import Segment
    from rich.style import Style

    from kvplan.render.tables import Column


def _kept(text: str) -> bool:
    """One line that rich's ``Text`` keeps as written: printable (no control code it strips, no tab it expands, no
    newline), no space at either end (a right-justified cell loses its trailing ones)."""
    return text.isprintable() and text == text.strip()


def drawable(columns: Sequence[Column], rows: Sequence[tuple[str, ...]]) -> bool:
    """Whether rich draws the table cell for cell as DrawnTable does: one-line cells kept as written, left or right,
    in columns that never wrap, none empty (rich draws an empty column's cells otherwise)."""
    return bool(columns) and all(not c.wrap and c.justify in ("left", "right") and _kept(c.header) and
                                 (c.header or any(r[i] for r in rows)) for i, c in enumerate(columns)) and \
        all(_kept(cell) for row in rows for cell in row)


class DrawnTable:
    """The rows under their headers, boxed (rich's default HEAVY_HEAD), every column as wide as its widest cell."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[tuple[str, ...]]) -> None:
        self.columns, self.rows = columns, rows

    def widths(self) -> list[int]:
        from rich.cells import cell_len

        return [max([cell_len(c.header), *(cell_len(r[i]) for r in self.rows)]) for i, c in enumerate(self.columns)]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.box import HEAVY_HEAD
        from rich.segment import Segment
        from rich.style import Style

        widths = self.widths()
        box = HEAVY_HEAD.substitute(options, safe=console.safe_box)
        border = console.get_style("") + console.get_style("")  # rich: the table's style + its border style (unset)
        padded = [w + 2 for w in widths]  # rich's padding: one cell each side
        new_line = Segment.line()
        header = console.get_style("table.header") + console.get_style("") + Style.null()
        pad = console.get_style("none")  # Padding's own style
        lines = [(True, [(Segment(" ", header + pad), Segment(_justified(c.header, w, c.justify), header),
                          Segment(" ", header + pad)) for c, w in zip(self.columns, widths, strict=True)])]
        lines += [(False, [(Segment(" ", pad), Segment(_justified(cell, w, c.justify)), Segment(" ", pad))
                           for cell, c, w in zip(row, self.columns, widths, strict=True)]) for row in self.rows]
        yield Segment(box.get_top(padded), border)
        yield new_line
        for index, (is_header, cells) in enumerate(lines):
            edges = box.head_left, box.head_right, box.head_vertical
            if not is_header:
                edges = (box.foot_left, box.foot_right, box.foot_vertical) if index == len(lines) - 1 else \
                    (box.mid_left, box.mid_right, box.mid_vertical)
            yield Segment(edges[0], border)
            for i, cell in enumerate(cells):
                yield from cell
                if i < len(cells) - 1:
                    yield _divider(edges[2], border)
            yield Segment(edges[1], border)
            yield new_line
            if is_header:
                yield Segment(box.get_row(padded, "head", edge=True), border)
                yield new_line
        yield Segment(box.get_bottom(padded), border)
        yield new_line


def _divider(text: str, border: Style) -> Segment:
    """rich styles a whitespace divider with the row's background (a row has none here)."""
    from rich.segment import Segment
    from rich.style import Style

    return Segment(text, border) if text.strip() else Segment(text, Style.null().background_style + border)


def _justified(text: str, width: int, justify: str) -> str:
    from rich.cells import cell_len

    space = " " * (width - cell_len(text))
    return text + space if justify == "left" else space + text
