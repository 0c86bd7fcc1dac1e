"""kvplan's command line: each command parses, calls the library, and renders the result."""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache
from typing import Any

import typer

from kvplan.errors import KvplanError

# The CLI process skips pydantic's plugin discovery (an importlib.metadata scan of every installed
# distribution, ~3% of `kvplan size`'s start-up); kvplan registers no pydantic plugin.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

# name -> (module, function). Commands are imported only when the app that runs them is built, so
# `kvplan size` neither imports nor builds the parameters of the other commands (start-up time).
COMMANDS: dict[str, tuple[str, str]] = {
    "size": ("kvplan.cli.size", "size"),
    "models": ("kvplan.cli.size", "models"),
    "capacity": ("kvplan.cli.capacity", "capacity"),
    "fit": ("kvplan.cli.capacity", "fit"),
    "compare": ("kvplan.cli.compare", "compare"),
    "sweep": ("kvplan.cli.sweep", "sweep"),
    "waste": ("kvplan.cli.waste", "waste"),
    "probe": ("kvplan.cli.probe", "probe"),
    "reconcile": ("kvplan.cli.reconcile", "reconcile"),
    "report": ("kvplan.cli.report", "report"),
}


@cache
def build_app(names: tuple[str, ...] = tuple(COMMANDS)) -> typer.Typer:
    """A typer app with these commands (the full app by default)."""
    app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def kvplan() -> None:
        """Exact KV-cache memory planning for LLM inference."""

    for name in names:
        module, function = COMMANDS[name]
        app.command(name)(getattr(importlib.import_module(module), function))
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # `from kvplan.cli import app`: the full app, built on first use
        return build_app()
    raise AttributeError(name)


def _app_for(argv: list[str]) -> typer.Typer:
    """Only the command being run, when the first argument names one; else the full app (help, errors)."""
    if argv and argv[0] in COMMANDS:
        return build_app((argv[0],))
    return build_app()


def main(argv: list[str] | None = None) -> int:
    """Console entry point: usage errors and KvplanErrors become one stderr line and exit 2.

    Click's exceptions are matched by shape (typer vendors its own click in recent releases).
    """
    try:
        args = sys.argv[1:] if argv is None else argv
        code = _app_for(args)(args=args, standalone_mode=False, prog_name="kvplan")
    except KvplanError as exc:
        from kvplan.cli.common import error_message

        print(f"kvplan: error: {error_message(exc)}", file=sys.stderr)
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
