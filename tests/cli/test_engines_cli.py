"""`kvplan engines`: the releases kvplan follows per engine, and what changed in each with its source."""

from __future__ import annotations

import json
import re
from typing import Any


def test_json_lists_every_release_with_its_changes(run_cli: Any) -> None:
    code, out, _ = run_cli("engines", "--json")
    assert code == 0
    engines = {e["engine"]: e["releases"] for e in json.loads(out)["engines"]}
    vllm = {r["name"]: r for r in engines["vllm"]}
    assert {f"vllm@0.{n}" for n in range(8, 34)} <= set(vllm) and vllm["vllm@0.33"]["newest"]
    for name in (f"vllm@0.{n}" for n in range(8, 34)):  # V1 rows: each change names its release's file:line
        assert vllm[name]["changes"] and all(re.search(r"\.py:\d+", c["source"]) for c in vllm[name]["changes"])
    assert [r["name"] for r in engines["vllm"]].index("vllm@0.9.0") < [r["name"] for r in engines["vllm"]].index(
        "vllm@0.9")  # oldest first: 0.9.0, then 0.9 (0.9.2)
    assert {"sglang", "trtllm", "hf"} <= set(engines)  # every engine in the registry, read generically


def test_one_release_and_its_changes(run_cli: Any) -> None:
    code, out, _ = run_cli("engines", "--engine", "vllm@0.20")
    assert code == 0 and "vllm@0.20" in out and "gpu_memory_utilization default 0.92" in out
    assert "config/cache.py:66" in out and "vllm@0.19 " not in out


def test_unknown_release_is_exit_2_naming_the_known_ones(run_cli: Any) -> None:
    code, out, err = run_cli("engines", "--engine", "vllm@0.99")
    assert code == 2 and out == "" and "vllm@0.19" in err and "vllm@0.14" in err


def test_capacity_of_a_release_with_no_row_is_exit_2(run_cli: Any) -> None:
    code, _, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--engine", "vllm@0.34", "--kv-budget", "20GiB")
    assert code == 2 and "unknown engine 'vllm@0.34'" in err and "vllm@0.33" in err
