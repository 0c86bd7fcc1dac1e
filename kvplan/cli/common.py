"""What every command shares: its output (tables or JSON on stdout, notes on stderr)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TextIO

from kvplan import memo
from kvplan.render import to_json
from kvplan.render.payload import plain


def long_lived() -> AbstractContextManager[None]:
    """Around a command's lazy imports: their modules and classes live as long as the process, so no collection
    runs while they are made, and frozen, none scans them afterwards (as main() does while it builds the command;
    a capacity run imports its planning and rendering modules only inside the command, ~40 collections of them)."""
    return memo.long_lived(freeze=True)


def terminal_width(stream: TextIO) -> int | None:
    """The columns of the terminal `stream` writes to; None when it is a pipe or a file."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns if stream.isatty() else 0
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's buffer), or not a terminal
        return None
    return columns or None


def note_line(text: str) -> None:
    """`kvplan: text` on stderr; on a terminal wrapped at spaces at its width, never inside a number or a path."""
    from kvplan.render.tables import wrap_line

    width = terminal_width(sys.stderr)
    for line in wrap_line(f"kvplan: {text}", width) if width else [f"kvplan: {text}"]:
        print(line, file=sys.stderr)


def warn(notes: list[str] | tuple[str, ...]) -> None:
    for note in notes:
        if note.startswith("warning:"):
            note_line(note)


Notes = Sequence[str | tuple[str, str]]  # a note, or (whose, note): an engine's under --engine all
PIPE_WIDTH = 200  # output with no terminal at all: whole rows for files and logs, not the 80 columns of none


def print_notes(notes: Notes, as_json: bool) -> None:
    """Notes on stderr, each once (see kvplan.render.notes); with --json only the warnings (JSON holds the rest)."""
    if not notes:
        return
    from kvplan.render.notes import merge_notes

    labelled = [n if isinstance(n, tuple) else ("", n) for n in notes]
    if as_json:
        labelled = [(label, text) for label, text in labelled if text.startswith("warning:")]
    for line in merge_notes(labelled):
        note_line(line)


def emit(payload: Any, as_json: bool, tables: Callable[[Any], list[Any]], explain: list[str] | None = None,
         notes: Notes = ()) -> None:
    """Print the payload (typed: kvplan.render.payload) as JSON, or as the tables drawn from it (and the
    explanation); then the notes on stderr. With --explain the JSON object gains an "explain" list. Tables
    draw whole cells at the console's width: the terminal's; piped (`kvplan models | head`), the width of the
    terminal stderr still shows, or PIPE_WIDTH where there is none. Where a terminal's width is known, the lines
    of prose (an engine's log line, reconcile's rules) are wrapped at spaces, never inside a number or a path;
    with no terminal they stay whole, line for line as the engine logs them."""
    if as_json:
        data = plain(payload)
        if explain is not None and isinstance(data, dict):
            data = {**data, "explain": list(explain)}
        print(to_json(data))
        print_notes(notes, as_json)
        return
    with long_lived():  # rich's modules (a table that rich lays out imports rich.table itself)
        from rich.console import Console
        from rich.text import Text

        from kvplan.render.tables import CommandLine, shell_lines, wrap_line

    width = None if sys.stdout.isatty() else terminal_width(sys.stderr)
    console = Console(highlight=False, emoji=False, width=width if width or sys.stdout.isatty() else PIPE_WIDTH)
    known = sys.stdout.isatty() or width is not None
    for table in tables(payload):
        if isinstance(table, Text) and known:
            table = Text("\n".join(wrap_line(table.plain, console.width)), style=table.style)
        console.print(table, soft_wrap=isinstance(table, Text))
    for line in explain or []:
        if isinstance(line, CommandLine):  # a command to paste: whole, or cut with ` \` continuations
            for part in shell_lines(line, console.width if known else None):
                console.print(part, markup=False, soft_wrap=True)
        else:
            console.print(line, markup=False)
    print_notes(notes, as_json)
