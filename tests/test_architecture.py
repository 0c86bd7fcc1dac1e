"""The shape of the code: imports run down the layers, no cycles, short functions, one layout builder.

Read from the source with ``ast`` (nothing is imported). Every ``import`` counts, including those
inside functions and under ``TYPE_CHECKING``: a layer may use what is below it, never what is above.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kvplan"
MAX_FUNCTION_LINES = 40

# Bottom to top. A module may import its own layer and the layers below it.
LAYERS = ("errors", "memo", "json_lines", "records", "units", "dtypes", "specs", "config", "formulas", "engines", "planning", "launch",
          "reconcile", "workflows", "api", "probe", "render", "cli")
TOP_LEVEL = {"__init__", "__main__"}  # the public API and `python -m kvplan` may import anything


def modules() -> dict[str, Path]:
    """'kvplan.formulas.layout' -> its file."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = modules()


@cache
def source(path: Path) -> str:
    return path.read_text()


@cache
def tree(path: Path) -> ast.Module:
    """Each file parsed once for the whole run (each test walks every module: 300 parses a test took 19 minutes
    of a loaded 2-core machine)."""
    return ast.parse(source(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(tree(path)))


def imported(path: Path, name: str) -> Iterator[str]:
    """kvplan modules a file imports (absolute, relative, `from pkg import module`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in nodes(path):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("kvplan"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("kvplan"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in MODULES else base


@cache
def graph() -> dict[str, set[str]]:
    return {name: {m for m in imported(path, name) if m in MODULES and m != name} for name, path in MODULES.items()}


def layer(name: str) -> str:
    return name.split(".")[1] if name.count(".") else "__init__"


def test_the_layers_name_every_package() -> None:
    assert {layer(m) for m in MODULES} <= set(LAYERS) | TOP_LEVEL


def test_imports_never_run_up_a_layer() -> None:
    wrong = []
    for name, deps in graph().items():
        here = layer(name)
        if here in TOP_LEVEL:
            continue
        for dep in deps:
            there = layer(dep)
            if there in TOP_LEVEL or LAYERS.index(there) > LAYERS.index(here):
                wrong.append(f"{name} -> {dep}")
    assert not wrong, "imports that run up a layer:\n" + "\n".join(sorted(wrong))


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of modules, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep):], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle() -> None:
    edges = {name: {d for d in deps if not name.startswith(d + ".")} for name, deps in graph().items()}
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@cache
def functions() -> tuple[tuple[str, str, int], ...]:
    return tuple(_functions())


def _functions() -> Iterator[tuple[str, str, int]]:
    for name, path in MODULES.items():
        for node in nodes(path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                yield name, node.name, (node.end_lineno or node.lineno) - start + 1


@pytest.mark.parametrize("name", sorted(MODULES))
def test_functions_are_short(name: str) -> None:
    long = [f"{fn}: {lines} lines" for module, fn, lines in functions() if module == name and lines > MAX_FUNCTION_LINES]
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} lines (decorators and signature included): {long}"


BUILDERS = {"layer_specs", "shard_spec", "build_layout", "kv_cache", "pp_ranges", "pp_stages", "check_parallel"}


def calls(path: Path) -> set[str]:
    names = set()
    for node in nodes(path):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


@pytest.mark.parametrize("name", sorted(m for m in MODULES if layer(m) in ("engines", "render")))
def test_engines_and_renderers_never_build_a_layout(name: str) -> None:
    """Engines plan on the layout they are handed; renderers read frozen results."""
    assert not calls(MODULES[name]) & BUILDERS, f"{name} calls {sorted(calls(MODULES[name]) & BUILDERS)}"


def test_the_library_never_imports_plot_code() -> None:
    plot = {"kvplan.render.plot", "kvplan.render.plot_labels"}
    users = {name for name, deps in graph().items() if deps & plot} - plot
    assert users <= {m for m in MODULES if layer(m) == "cli"}, users


def test_docstrings_cite_nothing_outside_the_repo() -> None:
    outside = ("shared/", "engines.md", "gpus.md", "behaviour.md", "engine-memory.md", "../", "/work/", "research/")
    found = [f"{name}: {word}" for name, path in MODULES.items() for word in outside if word in source(path)]
    assert not found, found


# The layout knobs travel inside the request (kvplan.formulas.request.CacheRequest): they are parameters and
# keywords only of the request type, the CLI option that sets them, and the code that uses them (the layout,
# the specs, the dtype and state-dtype resolution, the probe's kernels, which take the resolved dtype's group).
LAYOUT_KNOBS = {"quant_group", "state_dtype", "ssm_state_dtype", "overrides"}
KNOB_MODULES = {"kvplan.formulas.request", "kvplan.formulas.layout", "kvplan.formulas.layers",
                "kvplan.formulas.per_token", "kvplan.dtypes", "kvplan.cli.options",
                "kvplan.planning.extras.speculative",  # a draft's cache: the target's, without its overrides
                "kvplan.cli.probe",  # the probe's allocation shapes (their resolved dtypes)
                # the public functions: each command's options as keywords, the CLI options' twins (tests/api), put
                # into the request at once (kvplan.api.request)
                "kvplan.api.planning", "kvplan.api.workflows"}


def knob_uses(path: Path) -> set[str]:
    """Knob names a module takes as parameters or passes as keywords."""
    found = set()
    for node in nodes(path):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found |= {a.arg for a in (*node.args.args, *node.args.kwonlyargs)} & LAYOUT_KNOBS
        elif isinstance(node, ast.Call):
            found |= {k.arg for k in node.keywords if k.arg} & LAYOUT_KNOBS
    return found


def test_layout_knobs_travel_in_the_request() -> None:
    between = {name: sorted(uses) for name, path in MODULES.items()
               if (uses := knob_uses(path)) and name not in KNOB_MODULES and layer(name) != "probe"}
    assert not between, f"layout knobs passed loose, not in the request: {between}"


def test_the_knob_check_sees_a_loose_knob(tmp_path: Path) -> None:
    loose = tmp_path / "loose.py"
    loose.write_text("def plan(model, quant_group=8):\n    return build(model, state_dtype='auto')\n")
    assert knob_uses(loose) == {"quant_group", "state_dtype"}


def test_no_command_passes_locals_or_an_option_dict() -> None:
    """Commands build their request objects (kvplan.cli.expand); none hands on locals() or ctx.params."""
    found = []
    for name, path in MODULES.items():
        if layer(name) != "cli":
            continue
        for node in nodes(path):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "locals":
                found.append(f"{name}: locals()")
    assert not found, found
