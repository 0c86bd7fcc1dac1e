"""The launch tables' line format (tools/launch_tables.py): one flag or category parsed alone is the whole file's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvplan.launch import tables
from kvplan.launch.tables import TABLES

ENGINES = ("vllm", "sglang", "trtllm")


def _whole(engine: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TABLES / f"{engine}.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("engine", ENGINES)
def test_each_entry_read_alone_is_the_whole_files(engine: str) -> None:
    whole = _whole(engine)
    for key, value in whole.items():
        part = tables._part.__wrapped__(engine, key)  # a fresh section: entries parsed one at a time
        if isinstance(part, tables._Section):
            assert all(part[k] == v for k, v in value.items())  # line by line, before any whole parse
            assert list(part) == list(value) and len(part) == len(value) and dict(part) == value
        else:
            assert part == value
    assert tables._part.__wrapped__(engine, "no such key") is None
    with pytest.raises(KeyError):
        tables._part.__wrapped__(engine, "flags")["--no-such-flag"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_package_tables_are_written_as_table_text_writes_them(engine: str) -> None:
    text = (TABLES / f"{engine}.json").read_text(encoding="utf-8")
    assert tables.table_text(_whole(engine)) == text  # tools/launch_tables.py writes them with it


def test_a_release_table_reads_the_whole_files_flags() -> None:
    whole = _whole("vllm")
    table = tables.flag_table("vllm", "0.19.0")
    index = whole["releases"].index("0.19.0")
    expected = {name: next(v for v in variants if any(a <= index <= b for a, b in v["in"]))["dest"]
                for name, variants in whole["flags"].items()
                if any(a <= index <= b for v in variants for a, b in v["in"])}
    assert {name: flag.dest for name, flag in table.flags.items()} == expected
    assert table.serve_only == frozenset(whole["serve_only"].get("0.19.0", ()))
    assert all(table.category(dest) == category for dest, category in whole["categories"].items())
