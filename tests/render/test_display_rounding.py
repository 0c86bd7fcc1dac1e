"""Counts shown with decimals are cut, never rounded up (issue 25): `fit` printed "requests/replica 71.00 ·
requests 70" for 70.995 requests per replica, a figure that contradicts the whole requests beside it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from kvplan.planning.fit import Candidate, Load, replicate
from kvplan.render.fit import SetupPayload, _row
from kvplan.render.workflows import _count, _engine_cells
from kvplan.units import format_floor


def test_format_floor_cuts_at_the_shown_digit() -> None:
    assert format_floor(70.995) == "70.99"  # {:.2f} gave "71.00"
    assert format_floor(0.995) == "0.99"  # "1.00" for a request that does not fit
    assert format_floor(0.29) == "0.29"  # read from its repr: 0.29 * 100 is 28.999... in binary
    assert format_floor(1234.5678) == "1,234.56"
    assert format_floor(70.995, 0) == "70"
    assert format_floor(71.0) == "71.00"


def setup(per_replica: float) -> SetupPayload:
    return SetupPayload(gpu="H100", tp=1, pp=1, replicas=1, gpus_per_replica=1, num_gpus=1, kv_dtype="auto",
                        kv_budget_bytes_per_gpu=2**30, kv_tokens_per_replica=1000, requests_per_replica=per_replica,
                        requests=int(per_replica), price_per_gpu_hour=None, cost_per_hour=None, fits=True, reason="")


def test_fit_row_never_shows_more_requests_per_replica_than_it_serves() -> None:
    cells = _row(1, setup(70.995), priced=False, why=False, shown=(False, False, False))
    assert "70.99x" in cells and "70" in cells and "71.00x" not in cells


@pytest.mark.parametrize("value", [0.995, 0.999999])
def test_fit_reason_for_less_than_one_request_does_not_read_one(value: float) -> None:
    c = replicate(Candidate(gpu="H100", tp=1, pp=1, kv_dtype="auto", requests_per_replica=value),
                  Load(context=131072, concurrency=1, max_gpus=8, max_replicas=None))
    assert "(0.99 per replica)" in c.reason, c.reason


def test_sweep_and_compare_cells_are_cut() -> None:
    assert _count(70.995) == "70.99" and _count(70.995, "x") == "70.99x" and _count(None) == "-"
    from kvplan.render.workflows import SweepRow

    fields = {name: 0 for name in SweepRow._fields}
    row = SweepRow(**{**fields, "engine": "vllm", "kv_budget_bytes_per_gpu": 2**30, "kv_tokens": 1,
                      "max_concurrency": 70.995, "requests_at_max_len": 70.995, "fits": True})
    assert _engine_cells(row)[3:5] == ("70.99x", "70.99")


def test_fit_table_drawn() -> None:
    from kvplan.render.fit import FitPayload, fit_tables

    best = setup(70.995)
    payload = FitPayload(model="m", engine="vllm", gpus=("H100",), context=1000, concurrency=70, gpus_per_node=8,
                         max_gpus=8, max_replicas=None, ranking="r", num_evaluated=1, fits=True, best=best,
                         alternatives=(best,), notes=())
    buf = io.StringIO()
    console = Console(file=buf, width=60, highlight=False)
    for part in fit_tables(payload):
        console.print(part)
    assert "concurrency/replica: 70.99x · requests: 70" in buf.getvalue()
