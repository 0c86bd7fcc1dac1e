"""MkDocs hook (mkdocs.yml `hooks:`): pages that hold generated reference get it from kvplan itself at
build time, so it cannot drift from the code.

    <!-- kvplan: help -->          `kvplan --help`, then `kvplan COMMAND --help` for every command the app has
    <!-- kvplan: help size -->     one command's help
    <!-- kvplan: gpus -->          the GPU catalog (kvplan/planning/gpus.py) as a table
    <!-- kvplan: run engines -->   a command and what it prints now, for long listings that change with the data
                                   (`kvplan engines`, `kvplan models`)

Help is what a 120-column terminal shows, then a table of every option's help in full (`--help` prints each
option's first clause) (tools/readme_examples.py runs it the same way). Shown examples
with their output are not generated here: they live in the pages and tests/test_readme.py checks them.
"""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import readme_examples  # noqa: E402  (a sibling script, found through the path above)

MARKER = re.compile(r"<!-- kvplan: (help|gpus|run)((?: [a-z0-9@.=-]+)*) -->")


def command_names() -> list[str]:
    """Every command of the app, in the order `kvplan --help` lists them."""
    import typer

    from kvplan.cli import app

    group: Any = typer.main.get_command(app)
    return list(group.list_commands(None))


def help_block(command: str) -> str:
    shown = f"kvplan {command} --help" if command else "kvplan --help"
    block = f"```\n$ {shown}\n{readme_examples.run(shown)}```\n"
    return f"{block}\n{options_table(command)}" if command else block


def options_table(command: str) -> str:
    """Every option's whole help: `--help` shows each option's first clause and this command's notes
    (kvplan.cli.help), the rest (other commands' notes, defaults by release, the values in full) is here."""
    import typer
    from rich.markup import render

    from kvplan.cli import app

    group: Any = typer.main.get_command(app)
    rows = ["| option | help in full |", "|---|---|"]
    for param in group.commands[command].params:
        text = render(getattr(param, "help", None) or "").plain.replace("|", "\\|")
        if not getattr(param, "hidden", False) and text:
            names = ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])
            rows.append(f"| {names} | {text} |")
    return "\n".join(rows) + "\n"


def help_section() -> str:
    names = command_names()
    with ThreadPoolExecutor(max_workers=4) as pool:
        blocks = list(pool.map(help_block, ["", *names]))
    parts = [blocks[0]]
    parts += [f"## kvplan {name}\n\n{block}" for name, block in zip(names, blocks[1:], strict=True)]
    return "\n".join(parts)


def gpu_table() -> str:
    from kvplan.planning.gpus import GPUS

    rows = ["| name | memory (B) | GiB | nvidia-smi MiB | bandwidth (GB/s) | source of the memory figure |",
            "|---|---:|---:|---:|---:|---|"]
    for gpu in GPUS.values():
        smi = f"{gpu.smi_memory_mib:,}" if gpu.smi_memory_mib else "-"
        rows.append(f"| {gpu.name} | {gpu.memory_bytes:,} | {gpu.memory_bytes / 2**30:.2f} | {smi} | "
                    f"{gpu.bandwidth_bytes_per_s / 10**9:,.0f} | {gpu.source.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def expand(match: re.Match[str]) -> str:
    what, args = match.group(1), match.group(2).split()
    if what == "gpus":
        return gpu_table()
    if what == "run":
        shown = " ".join(["kvplan", *args])
        return f"```\n$ {shown}\n{readme_examples.run(shown)}```\n"
    return help_block(args[0]) if args else help_section()


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(expand, markdown)
