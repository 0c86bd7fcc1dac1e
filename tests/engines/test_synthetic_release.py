"""Adding a vLLM release is one row (CONTRIBUTING.md, "Adding an engine release"; issue 30).

A synthetic vLLM 0.34 is added the way a real row is, ``_after(previous row, key, release, changes)`` in
``rows_late.py`` (its ``_SITES`` entry is 0.33.0's and its rules are 0.33's), with its launch-flag table (which
``tools/launch_tables.py`` writes from the wheel; here 0.33.0's flags carried on) and nothing else. It is then listed
by ``kvplan engines`` as the newest, is what the bare ``vllm`` plans with, is planned by ``capacity`` with 0.33's
numbers (its rules are 0.33's), is accepted by ``--engine vllm@0.34`` and ``vllm@0.34.1``, by ``reconcile`` (a log
that prints 0.34.0 is read with its row) and by the launch reader (a pasted ``vllm serve`` command).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvplan.engines import registry
from kvplan.engines.listing import engine_releases
from kvplan.engines.vllm import rows, rows_late
from kvplan.engines.vllm.row import VllmRelease
from kvplan.launch import tables

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
SAME = ("gpu_memory_bytes", "kv_budget_bytes_per_gpu", "block_size", "page_bytes", "num_blocks", "kv_tokens",
        "max_concurrency")


def _flags_of_034(data: dict[str, Any]) -> dict[str, Any]:
    """vllm.json with a 0.34.0 that has 0.33.0's flags (every variant 0.33.0 has runs on to it)."""
    out = copy.deepcopy(data)
    last = len(out["releases"]) - 1
    out["releases"].append("0.34.0")
    for variants in out["flags"].values():
        for variant in variants:
            variant["in"] = [[a, b + 1 if b == last else b] for a, b in variant["in"]]
    out["serve_only"]["0.34.0"] = out["serve_only"].get("0.33.0", [])
    return out


@pytest.fixture
def v034(monkeypatch: pytest.MonkeyPatch) -> Iterator[VllmRelease]:
    monkeypatch.setitem(rows._SITES, "0.34.0", rows._SITES["0.33.0"])
    row = rows._after(rows_late.V1_033, "0.34", "0.34.0", (
        ("a synthetic release with 0.33's rules", "v1/worker/gpu_worker.py:640-820"),))
    monkeypatch.setitem(rows_late.RELEASES, "0.34", row)
    monkeypatch.setattr(rows_late, "V1_ROWS", (*rows_late.V1_ROWS, row))
    text, read = tables.table_text(_flags_of_034(json.loads(tables._text("vllm")))), tables._text
    monkeypatch.setattr(tables, "_text", lambda engine: text if engine == "vllm" else read(engine))
    _clear_caches()
    yield row
    _clear_caches()


def _clear_caches() -> None:
    registry.cache_clear()
    for cached in (tables.flag_table, tables.releases, tables._part):  # what was read of the tables
        cached.cache_clear()


def _capacity(run_cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("capacity", "--json", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_listed_as_the_newest(v034: VllmRelease) -> None:
    listed = {r.key: r for r in engine_releases(["vllm"])}
    assert listed["0.34"].newest and not listed["0.33"].newest and listed["0.34"].label == "vLLM 0.34"
    assert [c.rule for c in listed["0.34"].changes] == ["a synthetic release with 0.33's rules"]
    assert list(listed)[-1] == "0.34"  # oldest first


def test_planned_and_accepted_by_engine(run_cli: Any, v034: VllmRelease) -> None:
    asked = ("Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "32k")
    new = _capacity(run_cli, *asked, "--engine", "vllm@0.34")
    old = _capacity(run_cli, *asked, "--engine", "vllm@0.33")
    assert new["engine_version"] == "vLLM 0.34" and old["engine_version"] == "vLLM 0.33"
    assert {k: new[k] for k in SAME} == {k: old[k] for k in SAME} and new["kv_tokens"] > 0
    for name in ("vllm", "vllm@0.34.1", "vllm@v0.34.0rc1"):
        assert _capacity(run_cli, *asked, "--engine", name)["engine_version"] == "vLLM 0.34"


def test_a_log_of_the_release_is_read_with_its_row(run_cli: Any, tmp_path: Path, v034: VllmRelease) -> None:
    text = (LOGS / "vllm-v0310-qwen25-7b-instruct-awq-h200.log").read_text()
    assert "(v0.31.0)" in text
    log = tmp_path / "vllm-v0340.log"
    log.write_text(text.replace("(v0.31.0)", "(v0.34.0)"))
    code, out, err = run_cli("reconcile", str(log), "--json")
    assert code in (0, 1), err
    payload = json.loads(out)
    assert (payload["version"], payload["engine_row"]) == ("0.34.0", "vllm@0.34.0")
    assert not any("profile" in note for note in payload["notes"]) and payload["checks"]


def test_the_launch_reader_takes_its_command(run_cli: Any, v034: VllmRelease) -> None:
    pasted = _capacity(run_cli, "--gpu", "H100", "--engine", "vllm@0.34", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                       "--max-model-len", "32768", "--enable-prefix-caching")
    assert pasted["engine_version"] == "vLLM 0.34"
    assert pasted["notes"][0] == "no effect on memory (vLLM 0.34.0): --enable-prefix-caching"
    code, _, err = run_cli("capacity", "--gpu", "H100", "--engine", "vllm@0.34", "--", "vllm", "serve",
                           "Qwen/Qwen3-8B", "--tensor-paralel-size", "2")
    assert code == 2 and "vLLM 0.34.0 has no flag --tensor-paralel-size" in err


def test_without_the_row_it_is_unknown(run_cli: Any) -> None:
    """The same names without the row: the fixture's additions are what makes them work."""
    code, _, err = run_cli("capacity", "Qwen/Qwen3-8B", "--gpu", "H100", "--engine", "vllm@0.34", "--json")
    assert code == 2 and "unknown engine 'vllm@0.34'" in err
