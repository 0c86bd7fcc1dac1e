"""`--help` at 80 columns: flag names and value types are never cut; the help text wraps instead.

typer draws each help panel as a rich table whose columns all wrap; when a panel is narrow rich shrinks its
widest columns together, so a long flag (``--disable-hybrid-kv-cache-manager``, 33 characters) was cut to
``--disable-hybrid-kv-cache-ma…`` beside a long help text. ``install()`` gives typer a table that keeps every
column of single words (flags, metavars, the required mark) whole and lets only the prose wrap. Imported only
when help is asked for (typer's help module costs start-up time).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table


class HelpTable(Table):
    """A table whose columns of one word per cell are never wrapped or cropped."""

    def _calculate_column_widths(self, console: Any, options: Any) -> list[int]:
        for column in self.columns:
            cells = [str(getattr(cell, "plain", cell)) for cell in column._cells]
            column.no_wrap = column.no_wrap or all(" " not in text.strip() for text in cells)
        return super()._calculate_column_widths(console, options)


def install() -> None:
    """Draw typer's help panels with HelpTable (this process)."""
    from typer import rich_utils

    rich_utils.Table = HelpTable  # type: ignore[attr-defined]
