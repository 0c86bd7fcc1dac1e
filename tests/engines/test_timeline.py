"""One timeline per engine: what changes by release is a field of that engine's release row, never a comparison of
versions elsewhere (issue 30).

Read from the source with ``ast`` over every module of ``kvplan/``: outside the rows, no call of ``at_least`` or
``below``, no ordering comparison of a version (``rel.version < (0, 30)``, ``x >= (0, 8)``, anything named
``version``), and no string that is a release (``"0.18"``). The rows modules are where the releases live. What is
still outside them is listed in ``PENDING`` with the reason; an entry that is no longer found fails too, so the list
only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kvplan"

# The release rows, the one Version type, and the engines' own tables keyed by release.
ROWS = {
    "engines/version.py",  # the Version type: the comparisons themselves
    "engines/vllm/row.py", "engines/vllm/rows.py", "engines/vllm/rows_late.py", "engines/vllm/rows_accepts.py",
    # vLLM's architectures by release (registry.json: first listed, first refused), compared with a row's key
    "engines/vllm/served.py",
    "engines/sglang/row.py", "engines/sglang/rows.py",  # SGLang's rows
    "engines/trtllm.py",  # TensorRT-LLM's rows
    "engines/__init__.py",  # the registry of names: SGLang's and TRT-LLM's releases are listed there
}
RELEASE = re.compile(r"^v?\d\.\d+(\.\d+)*$")  # 0.18, 0.8.5, 1.2 (not 127.0.0.1)
# a compared value that is a version: x.version, sys.version_info, Version.parse(...) (not len({... version ...}))
VERSIONED = re.compile(r"^(?!len\().*(\bversion\b|version_info|\bVersion\.parse\b)")

# (module, what) still outside the rows, and why. Remove an entry when its site moves into a row.
PENDING: dict[tuple[str, str], str] = {
    ("__init__.py", "release '0.1.0'"): "kvplan's own version, not an engine's",
    ("config/aliases.py", "release '0.17.0'"): "the vLLM release an unmodelled architecture's source was read from",
    ("config/aliases.py", "release '0.26.0'"): "the same: a source citation",
    ("config/aliases.py", "release '0.28.0'"): "the same: a source citation",
    ("config/aliases.py", "release '0.29.0'"): "the same: a source citation",
    ("config/aliases.py", "release '0.30.0'"): "the same: a source citation",
    ("config/aliases.py", "release '0.33.0'"): "the same: a source citation",
    ("engines/rules.py", "release '0.11'"): "a row's tp_comm_measured_on: whose logs size the NCCL term (a label)",
    ("engines/rules.py", "release '0.19'"): "the same label",
    ("planning/budget.py", "release '0.11'"): "the same label",
    ("engines/vllm/refusals.py", "release '0.33'"): "a row's refusal style (RefusalStyle): a wording's label",
    ("engines/sglang/spelling.py", "release '0.5.5'"): "the launch spelling's entry points by release",
    ("engines/sglang/spelling.py", "release '0.5.16'"): "the same",
    ("engines/trtllm_launch.py", "release '0.20'"): "TRT-LLM's launch-flag table by release",
    ("engines/trtllm_launch.py", "release '0.18.2'"): "the same",
    ("reconcile/rules.py", "release '0.8.0'"): "reconcile's VLLM_RULES/BUDGET_RULES: logs of patch releases with no "
                                               "row (0.8.4, 0.10.2); not yet row fields",
    ("reconcile/rules.py", "version comparison"): "the same table: a logged version placed among its rows",
    ("reconcile/inputs.py", "version comparison"): "which V0 row a V0 log's release takes",
    ("reconcile/inputs.py", "release '0.7'"): "the same",
    ("probe/check.py", "version comparison"): "a CUDA compute capability (8, 9), not a release",
    ("planning/prices.py", "version comparison"): "Python's sys.version_info, not an engine's",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _int_tuple(node: ast.expr) -> bool:
    return isinstance(node, ast.Tuple) and bool(node.elts) and all(
        isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts)


def _what(node: ast.AST, docstrings: set[int]) -> str | None:
    """What a node compares by release, or None."""
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return f"call {name}" if name in ("at_least", "below") else None
    if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for o in node.ops):
        sides = [node.left, *node.comparators]
        if any(_int_tuple(s) or VERSIONED.match(ast.unparse(s)) for s in sides):
            return "version comparison"
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
            and RELEASE.match(node.value):
        return f"release {node.value!r}"
    return None


def findings(package: Path = PACKAGE) -> Iterator[tuple[str, str, int]]:
    """(module relative to kvplan/, what, line) outside the rows."""
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module in ROWS:
            continue
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (what := _what(node, docstrings)) is not None:
                yield module, what, getattr(node, "lineno", 0)


def test_no_release_comparison_outside_the_rows() -> None:
    found = list(findings())
    new = sorted(f"kvplan/{m}:{line}: {what}" for m, what, line in found if (m, what) not in PENDING)
    assert not new, "release-gated code outside the engines' rows (make it a row field):\n" + "\n".join(new)
    gone = sorted(f"{m}: {what}" for m, what in PENDING if not any((m, what) == (f[0], f[1]) for f in found))
    assert not gone, "no longer found: remove from PENDING:\n" + "\n".join(gone)


@pytest.mark.parametrize(("source", "what"), [
    pytest.param("if at_least(rel.key, FIRST):\n    pass\n", "call at_least", id="at_least"),
    pytest.param("x = rel.version < (0, 30)\n", "version comparison", id="version-tuple"),
    pytest.param("x = at >= (0, 8)\n", "version comparison", id="int-tuple"),
    pytest.param("x = Version.parse(key) >= Version.parse(bound)\n", "version comparison", id="Version"),
    pytest.param("FIRST = '0.8.5'\n", "release '0.8.5'", id="literal"),
])
def test_the_scan_finds_each_kind(tmp_path: Path, source: str, what: str) -> None:
    (tmp_path / "planning").mkdir()
    (tmp_path / "planning" / "gate.py").write_text('"""A docstring naming 0.18 is prose."""\n' + source)
    assert [(m, w) for m, w, _ in findings(tmp_path)] == [("planning/gate.py", what)]
