"""Reconciliation -> the `kvplan reconcile --json` payload and the table drawn from it.

Contract keys (other tools parse them): ``engine``, ``version``, ``model``, ``checks`` [{``quantity``,
``logged``, ``kvplan``, ``match``, ``explanation``}], ``ok``. Sizes are bytes (ints), counts ints,
concurrency a float; ``kvplan`` is the middle of kvplan's range when the log's rounding leaves one
(``kvplan_min``/``kvplan_max``). Added keys: ``rules``, ``skipped``, ``notes``, ``engine_row`` (the kvplan
release row planned with), per check ``logged_text``, ``workers``, ``lines``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kvplan.reconcile import Check, Number, Reconciliation, Skipped
from kvplan.render.tables import Table
from kvplan.units import GIB

if TYPE_CHECKING:
    from rich.console import RenderableType


def _scalar(value: Fraction, like: Number) -> int | float:
    """A size in bytes or a count as an int; a ratio as a float."""
    if like.unit or not like.decimals:
        return round(value)
    return round(float(value), 6)


def _logged(number: Number) -> int | float:
    return _scalar(number.value * (GIB if number.unit == "GiB" else 1), number)


def check_payload(check: Check) -> dict[str, Any]:
    return {"quantity": check.quantity, "logged": _logged(check.logged),
            "kvplan": _scalar((check.low + check.high) / 2, check.logged), "match": check.match,
            "explanation": check.explanation, "logged_text": _text(check.logged),
            "kvplan_min": _scalar(check.low, check.logged), "kvplan_max": _scalar(check.high, check.logged),
            "workers": list(check.workers), "lines": list(check.lines)}


def skipped_payload(item: Skipped) -> dict[str, Any]:
    return {"quantity": item.quantity, "logged": _logged(item.logged), "logged_text": _text(item.logged),
            "reason": item.reason, "workers": list(item.workers), "lines": list(item.lines)}


def reconcile_payload(result: Reconciliation) -> dict[str, Any]:
    """The `kvplan reconcile --json` contract."""
    return {"engine": result.log.engine, "version": result.log.version, "model": result.model,
            "model_in_log": result.log.setting("model"), "rules": result.rules, "engine_row": result.profile,
            "checks": [check_payload(c) for c in result.checks],
            "skipped": [skipped_payload(s) for s in result.skipped], "notes": list(result.notes), "ok": result.ok}


def _text(number: Number) -> str:
    suffix = {"GiB": " GiB", "B": " B"}.get(number.unit, "x" if number.decimals else "")
    return f"{number.text}{suffix}"


def _kvplan_text(check: dict[str, Any]) -> str:
    """kvplan's value (or range) in the unit and precision the log printed."""
    text = check["logged_text"]
    low, high = check["kvplan_min"], check["kvplan_max"]
    if text.endswith(" GiB"):
        digits = max(2, len(text[:-4].partition(".")[2]))
        values = [f"{v / GIB:,.{digits}f}" for v in (low, high)]
        unit = " GiB"
    elif text.endswith("x"):
        values, unit = [f"{v:,.2f}" for v in (low, high)], "x"
    else:
        values, unit = [f"{v:,}" for v in (low, high)], ""
    return (values[0] if values[0] == values[1] else f"{values[0]}-{values[1]}") + unit


def reconcile_tables(payload: dict[str, Any]) -> list[RenderableType]:
    from rich.text import Text

    version = payload["version"] or "version not printed"
    table = Table(title=f"{payload['engine']} {version}: {payload['model']}", title_justify="left")
    for name, justify in (("quantity", "left"), ("worker", "left"), ("logged", "right"), ("kvplan", "right"),
                          ("match", "center")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    table.add_column("why", wrap=True)  # prose: the one column that may wrap, between words
    for c in payload["checks"]:
        table.add_row(c["quantity"], _workers(c), c["logged_text"], _kvplan_text(c), "yes" if c["match"] else "NO",
                      c["explanation"])
    for s in payload["skipped"]:
        table.add_row(s["quantity"], _workers(s), s["logged_text"], "-", "-", s["reason"])
    matched = sum(c["match"] for c in payload["checks"])
    lines = [f"{matched} of {len(payload['checks'])} recomputed numbers match; {len(payload['skipped'])} not "
             f"recomputed", f"rules: {payload['rules']}", *payload["notes"]]
    return [table, *(Text(line) for line in lines)]


def _workers(row: dict[str, Any]) -> str:
    """The workers a row speaks for; for lines no worker prefix names, how many lines."""
    if row["workers"]:
        return ", ".join(row["workers"])
    return f"{len(row['lines'])} lines" if len(row["lines"]) > 1 else "-"
