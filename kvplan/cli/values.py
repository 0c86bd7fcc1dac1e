"""Option values the library parses and the CLI checks once more: --kv-budget."""

from __future__ import annotations

from kvplan.units import check_memory_size


def kv_budget(text: str) -> tuple[int, ...]:
    """--kv-budget: `20GiB`, or one size per PP stage (`12.13GiB,11GiB`), each at least 1 MiB (or 0)."""
    from kvplan.planning.budget import parse_budget

    budget = parse_budget(text)
    for part, value in zip(text.split(","), budget, strict=True):
        check_memory_size(value, part, "kv_budget")
    return budget
