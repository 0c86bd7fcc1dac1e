"""The engine protocol (issue 30): what planning, launch, reconcile and render ask of an engine is a method or an
attribute of the engine, never a comparison with its name; a capacity question is resolved once and its cache
question built once."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvplan.engines import ENGINE_NAMES, Request, get_engine
from kvplan.engines.base import Resolved
from kvplan.engines.settings import Settings
from kvplan.formulas.request import CacheRequest
from kvplan.planning.capacity import capacity

PACKAGE = Path(__file__).resolve().parents[2] / "kvplan"
# Where an engine's name may be compared: the engines themselves (the host tiers an engine takes are its
# host_tiers and native_host_tier, issue 31).
ALLOWED = ("engines/",)
NAMES = frozenset((*ENGINE_NAMES, "tensorrt-llm", "trt-llm", "transformers"))


def _names_in(node: ast.expr) -> Iterator[str]:
    """The engine names a comparison's operand spells: a string, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for item in node.elts:
            yield from _names_in(item)


def name_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, name) of every comparison with an engine's name (==, !=, in, not in), every subscript and `.get` by
    one: asking for an engine by its name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        operands: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            operands = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            operands = list(node.args[:1])
        found += [(node.lineno, name) for operand in operands for name in _names_in(operand)]
    return found


def test_the_check_finds_what_it_forbids() -> None:
    source = ('if engine == "vllm": pass\nif "sglang" in engines: pass\nx = FLAGS["trtllm"]\ny = HOW.get("hf")\n'
              'z = e in ("vllm", "sglang")\nif layout == VLLM_LAYOUT: pass\ncapacity(m, engine="vllm")\n')
    assert name_comparisons(source) == [(1, "vllm"), (2, "sglang"), (3, "trtllm"), (4, "hf"), (5, "vllm"),
                                        (5, "sglang")]


def test_no_engine_name_is_compared_outside_the_engines() -> None:
    found = [f"{path.relative_to(PACKAGE)}:{line}: {name!r}" for path in sorted(PACKAGE.rglob("*.py"))
             if not str(path.relative_to(PACKAGE)).startswith(ALLOWED)
             for line, name in name_comparisons(path.read_text(encoding="utf-8"))]
    assert not found, "engine names compared outside kvplan/engines (make it an engine method):\n" + "\n".join(found)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of every engine's resolve and of CacheRequest's and Settings' validation while a test runs."""
    counts: Counter[str] = Counter()

    def counting(cls: Any, method: str, key: str) -> None:
        original = getattr(cls, method)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return original(self, *args, **kwargs)
        monkeypatch.setattr(cls, method, wrapper)

    for name in ENGINE_NAMES:
        counting(type(get_engine(name)), "resolve", "resolve")
    counting(CacheRequest, "__post_init__", "cache")
    counting(Settings, "__post_init__", "settings")
    return counts


SPECULATIVE = {"speculative_method": "ngram", "num_speculative_tokens": 3}
CASES = [*((e, {}) for e in (*ENGINE_NAMES, "vllm@0.11", "vllm@0.7", "sglang@0.4.3")),
         *((e, {"kv_budget_bytes": 20 * 2**30}) for e in ("vllm", "vllm@0.11", "sglang", "trtllm")),
         *((e, SPECULATIVE) for e in ("vllm", "vllm@0.11", "sglang", "trtllm"))]


@pytest.mark.parametrize(("engine", "options"), CASES, ids=[f"{e}-{'-'.join(o) or 'estimated'}" for e, o in CASES])
def test_one_capacity_call_resolves_once_and_builds_its_cache_once(counted: Counter[str], engine: str,
                                                                  options: dict[str, Any]) -> None:
    result = capacity("meta-llama/Llama-3.1-8B", engine=engine, gpu="H100", tp=2, max_model_len=8192, **options)
    assert result.plan.kv_tokens > 0
    # before issue 30: vLLM resolved 5 times (plan_capacity, again with the draft, budget_rules, plan, the
    # given budget's rules) and the cache question was built 3 times (asked, its length, unpaged for the layout)
    assert (counted["resolve"], counted["cache"]) == (1, 1)


def test_the_budget_and_the_plan_take_a_resolved_request() -> None:
    engine = get_engine("sglang")
    asked = Request.of(load("Qwen/Qwen3-8B"), tp=2, max_model_len=8192)
    found = engine.resolve(asked)
    assert isinstance(found, Resolved) and not isinstance(asked, Resolved)
    assert engine.resolve(found) == found  # its defaults are filled in: resolving again changes nothing


def load(model_id: str) -> Any:
    from kvplan.config import load_model

    return load_model(model_id)
