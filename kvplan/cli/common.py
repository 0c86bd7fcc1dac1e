"""What every command shares: its output (tables or JSON on stdout, notes on stderr)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from kvplan.render import to_json
from kvplan.render.payload import plain


def warn(notes: list[str] | tuple[str, ...]) -> None:
    for note in notes:
        if note.startswith("warning:"):
            print(f"kvplan: {note}", file=sys.stderr)


Notes = Sequence[str | tuple[str, str]]  # a note, or (whose, note): an engine's under --engine all
PIPE_WIDTH = 200  # piped or redirected output: whole rows for files and logs, not the 80 columns of no terminal


def print_notes(notes: Notes, as_json: bool) -> None:
    """Notes on stderr, each once (see kvplan.render.notes); with --json only the warnings (JSON holds the rest)."""
    if not notes:
        return
    from kvplan.render.notes import merge_notes

    labelled = [n if isinstance(n, tuple) else ("", n) for n in notes]
    if as_json:
        labelled = [(label, text) for label, text in labelled if text.startswith("warning:")]
    for line in merge_notes(labelled):
        print(f"kvplan: {line}", file=sys.stderr)


def emit(payload: Any, as_json: bool, tables: Callable[[Any], list[Any]], explain: list[str] | None = None,
         notes: Notes = ()) -> None:
    """Print the payload (typed: kvplan.render.payload) as JSON, or as the tables drawn from it (and the
    explanation); then the notes on stderr. With --explain the JSON object gains an "explain" list. Tables
    draw whole cells at the console's width: the terminal's, or PIPE_WIDTH when piped."""
    if as_json:
        data = plain(payload)
        if explain is not None and isinstance(data, dict):
            data = {**data, "explain": list(explain)}
        print(to_json(data))
        print_notes(notes, as_json)
        return
    from rich.console import Console
    from rich.text import Text

    # A Text (an engine's own message) is never wrapped, so it can be compared with the engine's log line for line.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)
    for table in tables(payload):
        console.print(table, soft_wrap=isinstance(table, Text))
    for line in explain or []:
        console.print(line, markup=False)
    print_notes(notes, as_json)
