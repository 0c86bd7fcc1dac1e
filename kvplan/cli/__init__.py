"""kvplan's command line: each command parses, calls the library, and renders the result."""

from __future__ import annotations

import sys

import typer

from kvplan.cli.capacity import capacity, fit
from kvplan.cli.compare import compare
from kvplan.cli.probe import probe
from kvplan.cli.size import models, size
from kvplan.cli.sweep import sweep
from kvplan.cli.waste import waste
from kvplan.errors import KvplanError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Exact KV-cache memory planning for LLM inference.")
app.command()(size)
app.command()(models)
app.command()(capacity)
app.command()(fit)
app.command()(compare)
app.command()(sweep)
app.command()(waste)
app.command()(probe)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: usage errors and KvplanErrors become one stderr line and exit 2.

    Click's exceptions are matched by shape (typer vendors its own click in recent releases).
    """
    try:
        code = app(args=argv, standalone_mode=False, prog_name="kvplan")
    except KvplanError as exc:
        print(f"kvplan: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        kind = type(exc).__name__
        if kind == "Exit":
            return int(getattr(exc, "exit_code", 0))
        if kind == "Abort":
            print("kvplan: aborted", file=sys.stderr)
            return 130
        if hasattr(exc, "format_message"):
            message = " ".join(str(exc.format_message()).split())
            print(f"kvplan: error: {message}", file=sys.stderr)
            return 2
        raise
    return code if isinstance(code, int) else 0
