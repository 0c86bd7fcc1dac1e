"""Files a command writes (--csv FILE): checked before any work, written without a traceback.

A folder that does not exist, a path that is a folder, or a write the OS refuses is bad input:
one line on stderr and exit 2, like any other (plots: kvplan.render.plot.check_plot_path).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO

from kvplan.errors import InputError


def check_output_file(path: str, flag: str) -> Path:
    """Refuse, before the work, a file that cannot be created: its folder is missing, or it is a folder."""
    out = Path(path)
    if not out.parent.is_dir():
        raise InputError(f"{flag} {path}: the folder {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise InputError(f"{flag} {path} is a folder; give a file name")
    return out


def write_text_file(path: str, flag: str, write: Callable[[IO[str]], None]) -> None:
    """Open `path` for writing and hand it to `write`; an OS refusal becomes one line naming the flag."""
    try:
        with open(check_output_file(path, flag), "w", newline="") as out:
            write(out)
    except OSError as exc:
        raise InputError(f"cannot write {flag} {path}: {exc.strerror or exc}") from None
