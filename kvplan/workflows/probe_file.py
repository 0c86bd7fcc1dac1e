"""A `kvplan probe --json` file read back: its shape checked, and its rows set against a size answer.

A probe row allocated ``num_blocks`` blocks of ``block_size`` tokens on every paged layer (plus
per-sequence state on linear layers), so its measured paged bytes divided by
``num_blocks × block_size`` is the bytes one token takes on that rank, measured. Where the row's
model has this model's layers and the same KV dtype, that number must equal kvplan's bytes per
token: the whole model's at tp 1, the most loaded GPU's at the report's TP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kvplan.errors import InputError
from kvplan.formulas import KvCacheResult
from kvplan.specs import LinearState, NoKV

PER_SEQUENCE_KINDS = (LinearState.kind, NoKV.kind)  # groups that hold state per sequence, not pages
RESULT_KEYS = {"model": str, "kv_dtype": str, "tp": int, "num_blocks": int, "block_size": int,
               "predicted_bytes": int, "measured_bytes": int, "groups": list}
GROUP_KEYS = {"kind": str, "predicted_bytes": int, "measured_bytes": int}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeCheck:
    """One probe row next to this report's size answer."""

    probe: int  # index of the probe file
    result: int  # index of the row in its results
    same_model: bool | None  # the row's model has this model's layers (None: its config is not available)
    measured_bytes_per_token: float | None  # measured paged bytes / (num_blocks × block_size)
    kvplan_bytes_per_token: int | None  # the size answer it must equal (None: not comparable)
    compared_with: str  # which size number, or why none


def _check_keys(row: Any, keys: dict[str, type], where: str) -> None:
    if not isinstance(row, dict):
        raise InputError(f"{where} is not an object")
    for key, kind in keys.items():
        value = row.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InputError(f"{where} has no {kind.__name__} {key!r}")


def check_probe(data: Any, name: str) -> dict[str, Any]:
    """The parsed file, if it has the shape of `kvplan probe --json`; else one InputError naming it."""
    where = f"probe file {name}"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError(f"{where} is not the output of `kvplan probe --json` (no 'results' list)")
    for i, row in enumerate(data["results"]):
        _check_keys(row, RESULT_KEYS, f"{where}: results[{i}]")
        for j, group in enumerate(row["groups"]):
            _check_keys(group, GROUP_KEYS, f"{where}: results[{i}].groups[{j}]")
        if row["num_blocks"] <= 0 or row["block_size"] <= 0:
            raise InputError(f"{where}: results[{i}] has no blocks")
    return data


def measured_bytes_per_token(row: dict[str, Any]) -> float | None:
    """Measured bytes of the paged groups per token slot (an int when it divides evenly)."""
    paged = sum(g["measured_bytes"] for g in row["groups"] if g["kind"] not in PER_SEQUENCE_KINDS)
    if not paged:
        return None
    per_token = Fraction(paged, row["num_blocks"] * row["block_size"])
    return int(per_token) if per_token.denominator == 1 else float(per_token)


def _expected(row: dict[str, Any], sizes: Sequence[KvCacheResult], tp: int) -> tuple[int | None, str]:
    size = next((s for s in sizes if s.layout.kv_dtype.name == row["kv_dtype"]), None)
    if size is None:
        return None, f"this report has no {row['kv_dtype']} KV cache"
    if row["tp"] == 1:
        return size.bytes_per_token, "bytes_per_token (tp 1: the whole model on one GPU)"
    if row["tp"] == tp:
        return size.bytes_per_token_per_gpu, f"bytes_per_token_per_gpu (tp {tp})"
    return None, f"the probe ran at tp {row['tp']}, this report at tp {tp}"


def probe_checks(probes: Sequence[dict[str, Any]], sizes: Sequence[KvCacheResult], tp: int,
                 same_model: Callable[[str], bool | None]) -> tuple[ProbeCheck, ...]:
    """Every probe row: is it this model, and does its measured bytes per token equal kvplan's?"""
    out = []
    for i, probe in enumerate(probes):
        for j, row in enumerate(probe["results"]):
            same = same_model(row["model"])
            expected, why = _expected(row, sizes, tp) if same else (None, "another model")
            out.append(ProbeCheck(probe=i, result=j, same_model=same, measured_bytes_per_token=
                                  measured_bytes_per_token(row), kvplan_bytes_per_token=expected, compared_with=why))
    return tuple(out)
