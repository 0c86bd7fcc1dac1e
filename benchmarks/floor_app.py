"""The framework's floor for `kvplan size`: a minimal typer app that reads one config.json and
prints one rich table. kvplan's start-up is measured against this (benchmarks/bench_startup.py)."""

from __future__ import annotations

import json

import typer

app = typer.Typer(add_completion=False)


@app.command()
def size(path: str, tp: int = 1) -> None:
    from rich.console import Console
    from rich.table import Table

    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    table = Table(title=path)
    table.add_column("field")
    table.add_column("value", justify="right")
    for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size"):
        table.add_row(key, str(config.get(key)))
    table.add_row("tp", str(tp))
    Console().print(table)


if __name__ == "__main__":
    app()
