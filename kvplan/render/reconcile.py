"""Reconciliation -> the typed `kvplan reconcile --json` payload and the table drawn from it.

Contract keys (other tools parse them): ``engine``, ``version``, ``model``, ``checks`` [{``quantity``,
``logged``, ``kvplan``, ``match``, ``explanation``}], ``ok``. Sizes are bytes (ints), counts ints,
concurrency a float; ``kvplan`` is the middle of kvplan's range when the log's rounding leaves one
(``kvplan_min``/``kvplan_max``). Added keys: ``rules``, ``skipped``, ``notes``, ``engine_row`` (the kvplan
release row planned with), per check ``logged_text``, ``workers``, ``lines``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

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


def _text(number: Number) -> str:
    suffix = {"GiB": " GiB", "B": " B"}.get(number.unit, "x" if number.decimals else "")
    return f"{number.text}{suffix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckPayload:
    """One logged number recomputed: kvplan's value is the middle of its range (kvplan_min..kvplan_max)."""

    quantity: str
    logged: int | float
    kvplan: int | float
    match: bool
    explanation: str
    logged_text: str
    kvplan_min: int | float
    kvplan_max: int | float
    workers: tuple[str, ...]
    lines: tuple[int, ...]


def check_payload(check: Check) -> CheckPayload:
    return CheckPayload(quantity=check.quantity, logged=_logged(check.logged),
                        kvplan=_scalar((check.low + check.high) / 2, check.logged), match=check.match,
                        explanation=check.explanation, logged_text=_text(check.logged),
                        kvplan_min=_scalar(check.low, check.logged), kvplan_max=_scalar(check.high, check.logged),
                        workers=check.workers, lines=check.lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedPayload:
    """A logged number kvplan does not recompute, and why."""

    quantity: str
    logged: int | float
    logged_text: str
    reason: str
    workers: tuple[str, ...]
    lines: tuple[int, ...]


def skipped_payload(item: Skipped) -> SkippedPayload:
    return SkippedPayload(quantity=item.quantity, logged=_logged(item.logged), logged_text=_text(item.logged),
                          reason=item.reason, workers=item.workers, lines=item.lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcilePayload:
    """The `kvplan reconcile --json` contract."""

    engine: str
    version: str | None
    model: str
    model_in_log: str | None
    rules: str
    engine_row: str  # the kvplan release row the numbers were planned with (vllm@0.19, sglang, ...)
    checks: tuple[CheckPayload, ...]
    skipped: tuple[SkippedPayload, ...]
    notes: tuple[str, ...]
    ok: bool


def reconcile_payload(result: Reconciliation) -> ReconcilePayload:
    return ReconcilePayload(engine=result.log.engine, version=result.log.version, model=result.model,
                            model_in_log=result.log.setting("model"), rules=result.rules, engine_row=result.profile,
                            checks=tuple(check_payload(c) for c in result.checks),
                            skipped=tuple(skipped_payload(s) for s in result.skipped), notes=result.notes,
                            ok=result.ok)


def _kvplan_text(check: CheckPayload) -> str:
    """kvplan's value (or range) in the unit and precision the log printed."""
    text, low, high = check.logged_text, check.kvplan_min, check.kvplan_max
    if text.endswith(" GiB"):
        digits = max(2, len(text[:-4].partition(".")[2]))
        values = [f"{v / GIB:,.{digits}f}" for v in (low, high)]
        unit = " GiB"
    elif text.endswith("x"):
        values, unit = [f"{v:,.2f}" for v in (low, high)], "x"
    else:
        values, unit = [f"{v:,}" for v in (low, high)], ""
    return (values[0] if values[0] == values[1] else f"{values[0]}-{values[1]}") + unit


def reconcile_tables(payload: ReconcilePayload) -> list[RenderableType]:
    from rich.text import Text

    version = payload.version or "version not printed"
    table = Table(title=f"{payload.engine} {version}: {payload.model}", title_justify="left")
    for name in ("quantity", "worker", "logged", "kvplan"):
        table.add_column(name, justify="left" if name in ("quantity", "worker") else "right")
    table.add_column("match", justify="center")
    table.add_column("why", wrap=True)  # prose: the one column that may wrap, between words
    for c in payload.checks:
        table.add_row(c.quantity, _workers(c), c.logged_text, _kvplan_text(c), "yes" if c.match else "NO",
                      c.explanation)
    for s in payload.skipped:
        table.add_row(s.quantity, _workers(s), s.logged_text, "-", "-", s.reason)
    matched = sum(c.match for c in payload.checks)
    lines = [f"{matched} of {len(payload.checks)} recomputed numbers match; {len(payload.skipped)} not "
             f"recomputed", f"rules: {payload.rules}", *payload.notes]
    return [table, *(Text(line) for line in lines)]


def _workers(row: CheckPayload | SkippedPayload) -> str:
    """The workers a row speaks for; for lines no worker prefix names, how many lines."""
    if row.workers:
        return ", ".join(row.workers)
    return f"{len(row.lines)} lines" if len(row.lines) > 1 else "-"
