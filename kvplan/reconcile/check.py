"""A logged number next to kvplan's: the check, its match rule, and the whole reconciliation.

Match rules, one per kind of number:
- counts the engine computes from integers (blocks, tokens, lengths): exact; when kvplan starts
  from a size the log rounded (10.64 GiB), it gives the range that size allows, and the logged
  count must lie in it;
- sizes and ratios the log rounds (GiB to 2 decimals, "7.27x"): kvplan's value, or range, must
  fall within half a printed digit of the logged one;
- weights: within ``WEIGHTS_TOLERANCE`` (the engine measures allocator memory, buffers included).
A number kvplan cannot recompute from what the log states is listed with the reason, not checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction

from kvplan.reconcile.estimate import loaded_reasons, loaded_weights
from kvplan.reconcile.inputs import Inputs
from kvplan.reconcile.parse import GIB, Number, Record, StartupLog, rank_key
from kvplan.reconcile.rules import WEIGHTS_TOLERANCE


@dataclass(frozen=True, kw_only=True)
class Check:
    quantity: str  # kv_budget_bytes, weights_bytes, num_blocks, kv_tokens, max_concurrency, k/v/kv_size_bytes, ...
    logged: Number
    low: Fraction  # kvplan's value (or range), in bytes for sizes
    high: Fraction
    match: bool
    explanation: str
    workers: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Skipped:
    quantity: str
    logged: Number
    reason: str
    workers: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()


Outcome = Check | Skipped


@dataclass(frozen=True, kw_only=True)
class Reconciliation:
    log: StartupLog
    model: str
    rules: str  # which release's rules the numbers were recomputed with, and why
    checks: tuple[Check, ...]
    skipped: tuple[Skipped, ...]
    notes: tuple[str, ...]
    profile: str = ""  # the kvplan engine row the blocks were planned with (vllm@0.19, sglang, ...)

    @property
    def ok(self) -> bool:
        """Everything checked matches (and something was checked)."""
        return bool(self.checks) and all(c.match for c in self.checks)


def logged_range(logged: Number) -> tuple[Fraction, Fraction]:
    """What the printed number may have been: bytes for sizes, else the value ± half a digit."""
    if logged.unit:
        return logged.bytes_range()
    return logged.value - logged.half_unit, logged.value + logged.half_unit


def compare(quantity: str, record: Record, logged: Number, low: Fraction, high: Fraction, how: str,
            hint: str = "") -> Check:
    """Match when kvplan's range meets what the printed number allows; `how` says how kvplan got it,
    `hint` why they may differ (shown on a mismatch)."""
    lo, hi = logged_range(logged)
    match = low <= hi and lo <= high
    if not match:
        middle = (low + high) / 2
        ratio = f"logged {float((lo + hi) / 2 / middle):.3f}x kvplan's: " if middle else ""
        how = f"{ratio}{how}{'; ' + hint if hint else ''}"
    return Check(quantity=quantity, logged=logged, low=low, high=high, match=match, explanation=how,
                 workers=(record.worker,) if record.worker else (), lines=(record.line,))


def skip(quantity: str, record: Record, logged: Number, reason: str) -> Skipped:
    return Skipped(quantity=quantity, logged=logged, reason=reason,
                   workers=(record.worker,) if record.worker else (), lines=(record.line,))


def weights_checks(log: StartupLog, inputs: Inputs) -> list[Outcome]:
    """Each weights figure against kvplan's weights on the most loaded GPU."""
    found = log.numbers("weights") or log.numbers("used_weights")
    weights = loaded_weights(inputs) if found and not inputs.stand_in and not inputs.uncounted else None
    if weights is None:
        why = (f"{inputs.model.model_id} stands in for {inputs.named}: a different checkpoint" if inputs.stand_in
               else f"kvplan counts no {inputs.uncounted} weights" if inputs.uncounted
               else "kvplan has no weight count for this model")
        return [skip("weights_bytes", r, n, why) for r, n in found]
    low, high = weights * (1 - WEIGHTS_TOLERANCE), weights * (1 + WEIGHTS_TOLERANCE)
    how = (f"{inputs.model.model_id} at tp {inputs.tp} pp {inputs.pp}"
           f"{' with ' + inputs.weights_dtype + ' weights' if inputs.weights_dtype else ''} (checkpoint and what the "
           "release adds at load: rotary cache, padded or absorbed matrices, LoRA slots): "
           f"{weights:,} B ({weights / GIB:.4f} GiB) ± 1%")
    hint = "the weights the engine loaded are not this checkpoint's (quantization, vision tower, extra heads?)"
    unsure = loaded_reasons(inputs)
    how += f"; an estimate: {'; '.join(unsure)}" if unsure else ""
    return [compare("weights_bytes", r, n, Fraction(low), Fraction(high), how, hint) for r, n in found]


def merge(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """Rows that say the same thing for several workers become one row naming them all."""
    out: list[Outcome] = []
    for item in outcomes:
        key = _key(item)
        twin = next((i for i, o in enumerate(out) if _key(o) == key), None)
        if twin is None:
            out.append(item)
        else:
            first = out[twin]
            named = [w for o in (first, item) for w in (o.workers or ("main",))]  # main: the unprefixed process
            workers = sorted(dict.fromkeys(named), key=rank_key) if first.workers or item.workers else []
            out[twin] = replace(first, workers=tuple(workers),
                                lines=first.lines + item.lines)
    return out


def _key(item: Outcome) -> tuple[object, ...]:
    if isinstance(item, Check):
        return "check", item.quantity, item.logged.text, item.low, item.high, item.match, item.explanation
    return "skip", item.quantity, item.logged.text, item.reason
