"""`kvplan report`'s typed JSON payload: the size and capacity payloads unchanged, plus what the page adds.

The page (``kvplan.render.html``) is drawn from this payload alone and embeds its JSON, so a reader can
check every number against the page. Its ``size`` items are `kvplan size --json` objects, one per KV
dtype, and its ``capacity`` items `kvplan capacity --json` objects, one per KV dtype × engine; the other
keys are ``inputs`` (``report_inputs``), ``curves`` (``report_curves``), ``explain``, ``engine_logs``,
``budgets``, ``probe`` (the `kvplan probe --json` files given, as read), ``probe_checks``, ``warnings``
and ``notes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvplan.engines.base import BudgetTerm
from kvplan.render.capacity import CapacityPayload, capacity_payload, explain_lines
from kvplan.render.engine_logs import engine_log_lines
from kvplan.render.explain import GroupExplain, explained
from kvplan.render.report_curves import ContextCurve, CurvesPayload, curves_payload
from kvplan.render.report_inputs import InputsPayload, inputs_payload
from kvplan.render.size import SizePayload, size_payload
from kvplan.workflows.report import Report

# A `kvplan probe --json` file as the user gave it (its shape checked by kvplan.workflows.probe_file): external
# JSON, possibly from another kvplan release, embedded as read; the page reads it with typed accessors.
ProbeFile = Mapping[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeExplain:
    kv_dtype: str
    groups: tuple[GroupExplain, ...]
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityExplain:
    engine: str
    kv_dtype: str | None
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplainPayload:
    """--explain of every size (per group: the formula with its values) and every capacity answer."""

    size: tuple[SizeExplain, ...]
    capacity: tuple[CapacityExplain, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetEntry:
    """What an engine subtracts before the KV cache (none when the KV budget was given)."""

    engine: str
    kv_dtype: str
    terms: tuple[BudgetTerm, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineLog:
    engine: str
    kv_dtype: str
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeCheckRow:
    probe: int
    result: int
    model: str
    kv_dtype: str
    tp: int
    same_model: bool | None
    measured_bytes_per_token: float | None
    kvplan_bytes_per_token: int | None
    compared_with: str
    match: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportPayload:
    """The `kvplan report --json` object, which the page embeds."""

    model: str
    inputs: InputsPayload
    size: tuple[SizePayload, ...]
    capacity: tuple[CapacityPayload, ...]  # KV dtype major, engine minor
    budgets: tuple[BudgetEntry, ...]
    engine_logs: tuple[EngineLog, ...]
    curves: CurvesPayload
    explain: ExplainPayload
    probe: tuple[ProbeFile, ...]
    probe_checks: tuple[ProbeCheckRow, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]


def explain_payload(report: Report) -> ExplainPayload:
    sizes = tuple(SizeExplain(kv_dtype=s.layout.kv_dtype.name, groups=groups, lines=tuple(lines))
                  for s in report.sizes for groups, lines in (explained(s),))
    capacities = tuple(CapacityExplain(engine=c.engine, kv_dtype=c.plan.kv_dtype if not c.error else None,
                                       lines=tuple(explain_lines(c))) for c in report.capacities)
    return ExplainPayload(size=sizes, capacity=capacities)


def _notes(sizes: Sequence[SizePayload], capacities: Sequence[CapacityPayload],
           curves: Sequence[ContextCurve]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(warnings, notes) of every answer, each text once with the KV dtypes it came from; warnings are
    refusals, errors and `warning:` notes."""
    versions = {p.engine: p.engine_version for p in capacities}
    found: dict[tuple[str, str], list[str]] = {}
    for where, kv_dtype, text in (
            *(("kvplan size", p.kv_dtype, n) for p in sizes for n in p.notes),
            *((versions[p.engine], p.kv_dtype, n) for p in capacities for n in p.notes),
            *((versions[p.engine], p.kv_dtype, f"warning: refuses to start: {p.refusal}")
              for p in capacities if p.refusal),
            *((versions[c.engine], c.kv_dtype, n) for p, c in zip(capacities, curves, strict=True)  # same order
              for n in c.notes if not p.error)):  # a refusal is said once, not per point
        found.setdefault((where, text), []).append(kv_dtype)
    warnings: list[str] = []
    notes: list[str] = []
    for (where, text), dtypes in found.items():
        line = where + (f" (KV {', '.join(dict.fromkeys(dtypes))})" if len(sizes) > 1 else "") + f": {text}"
        (warnings if text.startswith(("warning:", "error:")) else notes).append(line)
    return tuple(warnings), tuple(notes)


def probe_check_rows(report: Report) -> tuple[ProbeCheckRow, ...]:
    rows = []
    for c in report.probe_checks:
        row = report.request.probes[c.probe]["results"][c.result]  # model, kv_dtype, tp: checked by check_probe
        rows.append(ProbeCheckRow(
            probe=c.probe, result=c.result, model=str(row["model"]), kv_dtype=str(row["kv_dtype"]), tp=int(row["tp"]),
            same_model=c.same_model, measured_bytes_per_token=c.measured_bytes_per_token,
            kvplan_bytes_per_token=c.kvplan_bytes_per_token, compared_with=c.compared_with,
            match=None if c.kvplan_bytes_per_token is None else c.measured_bytes_per_token == c.kvplan_bytes_per_token))
    return tuple(rows)


def report_payload(report: Report) -> ReportPayload:
    """The `kvplan report --json` object, which the page embeds."""
    sizes, capacities = tuple(map(size_payload, report.sizes)), tuple(map(capacity_payload, report.capacities))
    curves = curves_payload(report)
    warnings, notes = _notes(sizes, capacities, curves.concurrency_vs_context)
    return ReportPayload(
        model=report.model.model_id, inputs=inputs_payload(report), size=sizes, capacity=capacities,
        budgets=tuple(BudgetEntry(engine=p.engine, kv_dtype=p.kv_dtype, terms=p.budget_terms) for p in capacities),
        engine_logs=tuple(EngineLog(engine=p.engine, kv_dtype=p.kv_dtype, lines=tuple(engine_log_lines(p)))
                          for p in capacities),
        curves=curves, explain=explain_payload(report), probe=report.request.probes,
        probe_checks=probe_check_rows(report), warnings=warnings, notes=notes)
