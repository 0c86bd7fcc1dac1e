"""The public functions take every option of their command as a typed keyword with the command's default, under
the CLI's spellings: checked against the one option definition (kvplan.cli.options, kvplan.cli.engine_options),
so the library and the CLI cannot drift."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

import kvplan
from kvplan.api.docs import PARAMETERS
from kvplan.api.keywords import ALIASES, keyword_of
from kvplan.cli.capacity import capacity as capacity_command
from kvplan.cli.compare import compare as compare_command
from kvplan.cli.diff import diff as diff_command
from kvplan.cli.fit import fit as fit_command
from kvplan.cli.options import FLAG_ALIASES
from kvplan.cli.reconcile import reconcile as reconcile_command
from kvplan.cli.size import size as size_command
from kvplan.cli.sweep import sweep as sweep_command
from kvplan.errors import InputError

# (library function, command): the function answers the command's question
PAIRS = [
    pytest.param(kvplan.kv_cache, size_command, id="size"),
    pytest.param(kvplan.capacity, capacity_command, id="capacity"),
    pytest.param(kvplan.capacity_all, capacity_command, id="capacity_all"),
    pytest.param(kvplan.fit, fit_command, id="fit"),
    pytest.param(kvplan.sweep, sweep_command, id="sweep"),
    pytest.param(kvplan.compare, compare_command, id="compare"),
    pytest.param(kvplan.reconcile, reconcile_command, id="reconcile"),
    pytest.param(kvplan.diff, diff_command, id="diff"),
]
# The command's output, its positional arguments, and what shapes only the printed answer.
NOT_LIBRARY = {"json", "explain", "plot", "format", "csv", "kvplan_context", "model", "models", "logfile"}
ONLY_PRINTED = {
    ("kv_cache", "shared_prefix"): "the workload section: kvplan.workflows.prefix_sharing answers it",
    ("kv_cache", "beam_width"): "the workload section: kvplan.workflows.beam_search answers it",
    ("kv_cache", "prompt_len"): "the workload section: kvplan.workflows.beam_search answers it",
    ("kv_cache", "allocator"): "the workload section's allocator shown",
    ("capacity", "gpus_per_node"): "the nodes of the launch command printed (a CapacityResult holds no command)",
    ("capacity_all", "gpus_per_node"): "the nodes of the launch command printed",
}
# The CLI's None stands for this (kvplan.cli.options.listed's default).
NONE_MEANS = {"engine": "vllm", "kv_dtype": "auto"}
OTHER_DEFAULT = {
    ("capacity_all", "engine"): "every engine's newest release: what capacity_all is for",
    **{("reconcile", k): "None: the log's value (the CLI's default stands for it until the flag is given)"
       for k in ("tp", "pp", "dcp", "dp", "ep")},
}


def cli_options(command: Any) -> dict[str, inspect.Parameter]:
    return {name: p for name, p in inspect.signature(command).parameters.items() if name not in NOT_LIBRARY}


def library_keywords(function: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(function).parameters)


@pytest.mark.parametrize(("function", "command"), PAIRS)
def test_no_catch_all_keywords(function: Callable[..., Any], command: Any) -> None:
    kinds = {p.kind for p in library_keywords(function).values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds


@pytest.mark.parametrize(("function", "command"), PAIRS)
def test_every_cli_option_is_a_keyword_with_the_same_default(function: Callable[..., Any], command: Any) -> None:
    keywords, name = library_keywords(function), function.__name__
    missing, differ = [], []
    for option, p in cli_options(command).items():
        if (name, option) in ONLY_PRINTED:
            continue
        if option not in keywords:
            missing.append(option)
            continue
        cli = NONE_MEANS.get(option) if p.default is None and keywords[option].default is not None else p.default
        if keywords[option].default != cli and (name, option) not in OTHER_DEFAULT:
            differ.append(f"{option}: library {keywords[option].default!r}, CLI {p.default!r}")
    assert not missing, f"{name} lacks the CLI's {missing}"
    assert not differ, differ


@pytest.mark.parametrize(("function", "command"), PAIRS)
def test_every_flag_spelling_is_a_keyword(function: Callable[..., Any], command: Any) -> None:
    """--tensor-parallel-size, --tp, --tp-size, -tp, --kv-cache-dtype, --gpu-mem, ... -> the keyword the CLI maps
    them to."""
    keywords, flags = library_keywords(function), command.flags
    wrong = []
    for option, flag in flags.items():
        if option in NOT_LIBRARY or (function.__name__, option) in ONLY_PRINTED:
            continue
        spellings = [flag, *(alias for alias, target in FLAG_ALIASES.items() if target == flag)]
        for spelling in spellings:
            name = spelling.lstrip("-").replace("-", "_")
            if keyword_of(name, keywords) != option:
                wrong.append(f"{spelling} -> {keyword_of(name, keywords)} (the CLI: {option})")
    assert not wrong, wrong


def test_the_aliases_name_keywords() -> None:
    known = {k for p in PAIRS for k in library_keywords(p.values[0])}
    assert set(ALIASES.values()) <= known


@pytest.mark.parametrize(("function", "command"), PAIRS)
def test_the_docstring_lists_every_parameter(function: Callable[..., Any], command: Any) -> None:
    doc = inspect.getdoc(function) or ""
    for name in library_keywords(function):
        assert f"\n    {name}" in doc and PARAMETERS.get(name), name


def test_dir_lists_the_exports() -> None:
    assert set(kvplan.__all__) <= set(dir(kvplan))
    assert {"capacity", "capacity_all", "fit", "kv_cache", "size", "sweep", "compare", "reconcile"} <= set(dir(kvplan))


def test_a_remembered_kv_cache_answer_is_never_given_to_another_spelling() -> None:
    # kv_cache answers plain keywords from a dictionary keyed by the values and their types (issue 33): True and
    # 2.0 equal 1 and 2 as keys, and must still be refused as the readers refuse them once 1 or 2 was asked
    model = kvplan.load_model("meta-llama/Llama-2-70b")
    first = kvplan.kv_cache(model, tp=2, max_model_len=4096, batch=8)
    assert kvplan.kv_cache(model, tp=2, max_model_len=4096, batch=8) is first
    for wrong in (True, 2.0):
        with pytest.raises(InputError, match="tp must be an int"):
            kvplan.kv_cache(model, tp=wrong, max_model_len=4096, batch=8)
    assert kvplan.kv_cache(model, tp="2", max_model_len="4k", batch=8) == first  # read, then the same answer
    assert kvplan.kv_cache("meta-llama/Llama-2-70b", tp=2, max_model_len=4096, batch=8) == first
    with pytest.raises(InputError, match="no keyword 'tpp'"):  # the keyword is refused before the model is read
        kvplan.kv_cache("no-such/model-xyz", tpp=2)
