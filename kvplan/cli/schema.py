"""`kvplan schema COMMAND`: the JSON Schema of a command's --json output, generated from its typed payload."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.expand import command
from kvplan.errors import InputError

Name = Annotated[str, typer.Argument(help="A command with --json: capacity, compare, engines, fit, models, probe, "
                                          "reconcile, report, size, sweep (one line's), waste.", metavar="COMMAND",
                                     show_default=False)]


@command
def schema(name: Name) -> None:
    """The JSON Schema (draft 2020-12) of a command's --json output, generated from the typed payload it writes:
    other tools validate what they parse against it (docs/reference/schemas/ publishes them)."""
    import json

    from kvplan.render.schema import COMMANDS, command_schema

    if name not in COMMANDS:
        raise InputError(f"{name!r} has no --json output; schemas: {', '.join(COMMANDS)}")
    print(json.dumps(command_schema(name), indent=2))
