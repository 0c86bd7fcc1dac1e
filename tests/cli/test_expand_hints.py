"""The command builder reads each option's annotation by name (kvplan.cli.expand._type_hints): the same types
typing's get_type_hints gives, for every command and every builder it expands."""

from __future__ import annotations

import importlib
from typing import get_type_hints

import pytest

from kvplan.cli import COMMANDS
from kvplan.cli.expand import _expand_of, _type_hints


def _functions() -> list[object]:
    found: list[object] = []
    for module, name in COMMANDS.values():
        command = getattr(importlib.import_module(module), name)
        function = getattr(command, "__wrapped__", command)
        found.append(function)
        hints = get_type_hints(function, include_extras=True)
        found += [e.builder for hint in hints.values() if (e := _expand_of(hint)) is not None]
    return list({id(f): f for f in found}.values())


@pytest.mark.parametrize("function", _functions(), ids=lambda f: getattr(f, "__qualname__", "?"))
def test_hints_by_name_are_typings(function: object) -> None:
    expected = get_type_hints(function, include_extras=True)
    expected.pop("return", None)
    found = _type_hints(function)  # type: ignore[arg-type]
    found.pop("return", None)  # typing's own answer, for an annotation it evaluates (report's typer.Context)
    assert found == expected
