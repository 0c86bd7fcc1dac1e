"""One timeline per engine: what changes by release is a field of that engine's release row, never a comparison of
versions elsewhere (issue 30).

Read from the source with ``ast`` over every module of ``kvplan/``: outside the rows, no call of ``at_least`` or
``below``, no ordering comparison of a version (``rel.version < (0, 30)``, ``x >= (0, 8)``, anything named
``version``, a release's place in a list), and no string that is a release (``"0.18"``). The rows modules are where
the releases live. Versions that are no engine's are passed by the scan itself (kvplan's ``__version__``, Python's
``sys.version_info``, a GPU's compute capability). ``PENDING`` (empty) would list a site still outside the rows with its
reason; an entry that is no longer found fails too, so the list only shrinks.
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
    "engines/vllm/field_rules.py",  # which of a row's rules sets which of its fields, per release (kvplan diff)
    # vLLM's architectures by release (registry.json: first listed, first refused), compared with a row's key
    "engines/vllm/served.py",
    "engines/sglang/row.py", "engines/sglang/rows.py",  # SGLang's rows
    "engines/trtllm.py",  # TensorRT-LLM's rows
    "engines/__init__.py",  # the registry of names: SGLang's and TRT-LLM's releases are listed there
    # reconcile's timeline: how each vLLM release printed its numbers (VLLM_RULES, BUDGET_RULES, with file:line),
    # patch releases with no planner row among them (0.8.4, 0.10.2, 0.20.1); compared only in its holds()
    "reconcile/rules.py",
}
RELEASE = re.compile(r"^v?\d\.\d+(\.\d+)*$")  # 0.18, 0.8.5, 1.2 (not 127.0.0.1)
# a compared value that is a version: x.version, Version.parse(...), a release or its place in a list of releases
# (order.index(table.release)); not len({... version ...})
VERSIONED = re.compile(r"^(?!len\().*(\bversion\b|\bVersion\.parse\b|\brelease\b|\.index\()")
# compared values that are versions but no engine's: Python's (sys.version_info) and a GPU's compute capability
NOT_RELEASES = re.compile(r"^(sys\.version_info\b|.*\bget_device_capability\()")

# (module, what) still outside the rows, and why. Remove an entry when its site moves into a row.
PENDING: dict[tuple[str, str], str] = {
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
        if any(NOT_RELEASES.match(ast.unparse(s)) for s in sides):
            return None
        if any(_int_tuple(s) or VERSIONED.match(ast.unparse(s)) for s in sides):
            return "version comparison"
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
            and RELEASE.match(node.value):
        return f"release {node.value!r}"
    return None


def _own_version(tree: ast.AST) -> set[int]:
    """The constant of ``__version__ = "..."``: kvplan's own release, not an engine's."""
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)}


def findings(package: Path = PACKAGE) -> Iterator[tuple[str, str, int]]:
    """(module relative to kvplan/, what, line) outside the rows."""
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module in ROWS:
            continue
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree) | _own_version(tree)
        for node in ast.walk(tree):
            if (what := _what(node, docstrings)) is not None:
                yield module, what, getattr(node, "lineno", 0)


def test_no_release_comparison_outside_the_rows() -> None:
    found = list(findings())
    new = sorted(f"kvplan/{m}:{line}: {what}" for m, what, line in found if (m, what) not in PENDING)
    assert not new, "release-gated code outside the engines' rows (make it a row field):\n" + "\n".join(new)
    gone = sorted(f"{m}: {what}" for m, what in PENDING if not any((m, what) == (f[0], f[1]) for f in found))
    assert not gone, "no longer found: remove from PENDING:\n" + "\n".join(gone)


@pytest.mark.parametrize("source", [
    pytest.param("import sys\nx = sys.version_info < (3, 11)\n", id="python"),
    pytest.param("x = torch.cuda.get_device_capability(device) >= (8, 9)\n", id="compute-capability"),
    pytest.param("__version__ = '0.1.0'\n", id="own-version"),
])
def test_the_scan_passes_what_is_no_engines_release(tmp_path: Path, source: str) -> None:
    (tmp_path / "planning").mkdir()
    (tmp_path / "planning" / "gate.py").write_text(source)
    assert list(findings(tmp_path)) == []


@pytest.mark.parametrize(("source", "what"), [
    pytest.param("if at_least(rel.key, FIRST):\n    pass\n", "call at_least", id="at_least"),
    pytest.param("x = rel.version < (0, 30)\n", "version comparison", id="version-tuple"),
    pytest.param("x = at >= (0, 8)\n", "version comparison", id="int-tuple"),
    pytest.param("x = Version.parse(key) >= Version.parse(bound)\n", "version comparison", id="Version"),
    pytest.param("FIRST = '0.8.5'\n", "release '0.8.5'", id="literal"),
    pytest.param("x = order.index(table.release) >= order.index(first)\n", "version comparison", id="index"),
])
def test_the_scan_finds_each_kind(tmp_path: Path, source: str, what: str) -> None:
    (tmp_path / "planning").mkdir()
    (tmp_path / "planning" / "gate.py").write_text('"""A docstring naming 0.18 is prose."""\n' + source)
    assert [(m, w) for m, w, _ in findings(tmp_path)] == [("planning/gate.py", what)]
