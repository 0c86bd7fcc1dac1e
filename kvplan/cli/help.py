"""`--help` at 80 columns: flag names and value types are never cut; the help text wraps instead.

A command's help (``format_help``) is kvplan's own compact layout, one row per option under a rule per panel,
each option's help cut to its first clause and this command's notes (under 120 lines at 80 columns; typer's
table gave `capacity --help` 216). ``kvplan --help`` itself is still typer's, drawn with HelpTable:

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


# The compact layout: one row per option, its name (flag and value type) then its help, wrapped under a help
# column NAME_WIDTH in; a longer name pushes its first line right instead of widening the column for every
# option (typer's table gave `capacity --help` a 37-character help column at 80 columns: 216 lines).
NAME_WIDTH = 24


def clauses(text: str) -> list[str]:
    """The help's clauses: split at each '; ' outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", index):
            parts.append(text[start:index])
            start = index + 2
    return [*parts, text[start:]]


def first_clause(text: str, command: str = "") -> str:
    """The terminal's help line: the first clause, and the notes for this command ("fit: ..."); the other
    commands' notes are left to the reference (docs/reference.md holds every option's whole help)."""
    first, *rest = clauses(text)
    kept = "; ".join([first, *(part for part in rest if part.startswith(f"{command}:"))]) if command else first
    return kept if kept.endswith((".", "...")) else f"{kept}."


def _name(param: Any) -> str:
    if param.param_type_name == "argument":
        return str(param.metavar or (param.name or "").upper())
    flags = ", ".join([*param.opts, *param.secondary_opts])
    metavar = "" if param.is_flag or param.metavar == "" else (param.metavar or param.type.name.upper())
    return f"{flags} {metavar}".strip()


def _help(param: Any, command: str) -> str:
    from rich.markup import render

    text = first_clause(render(getattr(param, "help", None) or "").plain, command)
    return f"{text} [required]".strip() if param.required else text


def _row(param: Any, width: int, command: str) -> str:
    import textwrap

    name = _name(param)
    lead = name.ljust(NAME_WIDTH) if len(name) < NAME_WIDTH else f"{name}  "
    return textwrap.fill(_help(param, command) or " ", width=width, initial_indent=lead, subsequent_indent=" " * NAME_WIDTH,
                         break_on_hyphens=False, break_long_words=False)


def panels(command: Any, ctx: Any) -> dict[str, list[Any]]:
    """The command's visible parameters by help panel: Arguments, Options (--help), then the panels in the order
    their first option comes."""
    found: dict[str, list[Any]] = {"Arguments": [], "Options": []}
    for param in command.get_params(ctx):
        if not getattr(param, "hidden", False):
            default = "Arguments" if param.param_type_name == "argument" else "Options"
            found.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(param)
    return {title: params for title, params in found.items() if params}


def format_help(command: Any, ctx: Any) -> None:
    """Print `kvplan COMMAND --help` in the compact layout: each panel a rule with its title, then its rows."""
    import textwrap

    from rich.console import Console
    from rich.rule import Rule
    from rich.text import Text

    console = Console(highlight=False)
    width = min(console.width, 120)
    paragraphs = [command.get_usage(ctx).strip(), *(command.help or "").split("\n\n")]
    text = "\n\n".join(textwrap.fill(part, width=width - 1, initial_indent=" ", subsequent_indent=" ",
                                     break_on_hyphens=False) for part in paragraphs)
    console.print(Text(text + "\n"), width=width)
    for title, params in panels(command, ctx).items():
        console.print(Rule(Text(title, style="bold"), align="left", characters="─"), width=width)
        console.print(Text("\n".join(textwrap.indent(_row(param, width - 2, ctx.info_name), "  ") for param in params)),
                      width=width)
