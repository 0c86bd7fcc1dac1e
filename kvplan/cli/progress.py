"""A progress bar on stderr for work that can take over a second (sweeps, fit, the probe).

Silent when stderr is not a terminal (pipes, files, CI logs, tests), and then rich.progress is not
even imported. The bar is transient: it disappears when the work is done, leaving the answer.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Step:
    """step(done, total): what the library calls as it goes (a Callable[[int, int], None]); silent here."""

    def __call__(self, done: int, total: int) -> None:
        del done, total

    def describe(self, text: str) -> None:
        """What is being done now (the probe: the model)."""
        del text


class BarStep(Step):
    def __init__(self, bar: Any, task: Any) -> None:
        self.bar, self.task = bar, task

    def __call__(self, done: int, total: int) -> None:
        self.bar.update(self.task, completed=done, total=total)

    def describe(self, text: str) -> None:
        self.bar.update(self.task, description=text)


@contextmanager
def progress(description: str) -> Iterator[Step]:
    """with progress("sweeping") as step: ... step(done, total) ..."""
    if not sys.stderr.isatty():
        yield Step()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        yield BarStep(bar, bar.add_task(description, total=None))
