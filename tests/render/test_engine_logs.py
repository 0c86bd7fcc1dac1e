"""The start-up lines the report says each engine will print, and the budget terms it draws.

The lines are checked against kvplan's own log reader: `kvplan reconcile` must recognize every one
of them and find each number it recomputes consistent with the plan."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kvplan.engines.base import BudgetTerm
from kvplan.planning.capacity import capacity
from kvplan.reconcile import Options, parse_log, reconcile
from kvplan.render.capacity import capacity_payload
from kvplan.render.engine_logs import engine_log_lines
from kvplan.render.report import report_payload
from kvplan.workflows.report import report

GIB = 2**30
CASES = [
    pytest.param("meta-llama/Llama-3.1-70B", {"gpu": "H100", "tp": 4, "max_model_len": 32768}, id="llama70b-tp4"),
    pytest.param("deepseek-ai/DeepSeek-V3", {"gpu": "H200", "tp": 8, "kv_dtype": "fp8"}, id="dsv3-mla-fp8"),
    pytest.param("Qwen/Qwen3-8B", {"kv_budget_bytes": (20 * GIB,), "max_model_len": 40960}, id="qwen3-8b-budget"),
]


@pytest.mark.parametrize(("model", "kwargs"), CASES)
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_reconcile_reads_the_lines_and_agrees(model: str, kwargs: dict[str, Any], engine: str) -> None:
    p = capacity_payload(capacity(model, engine=engine, **kwargs))
    lines = engine_log_lines(p)
    assert lines
    log = parse_log("\n".join(lines), engine)
    assert len(log.records) == len(lines)  # every line is one the engine's format table knows
    options = Options(model=model, tp=kwargs.get("tp", 1), max_model_len=p.max_model_len, kv_dtype=p.kv_dtype,
                      gpu=kwargs.get("gpu"))
    checks = reconcile(log, options).checks
    assert checks and all(c.match for c in checks), [(c.quantity, c.explanation) for c in checks]


def test_the_vllm_lines() -> None:
    # 20 GiB // 2,359,296 B blocks = 9,102 blocks: 145,632 tokens, 3.56 requests of 40,960 tokens (README)
    p = capacity_payload(capacity("Qwen/Qwen3-8B", engine="vllm", kv_budget_bytes=(20 * GIB,), max_model_len=40960))
    assert engine_log_lines(p) == [
        "Available KV cache memory: 20.0 GiB",  # vLLM prints round(x, 2): 20.0, not 20.00
        "GPU KV cache size: 145,632 tokens, Maximum concurrency for 40,960 tokens per request: 3.56x"]


def test_transformers_and_errors_print_nothing() -> None:
    p = capacity_payload(capacity("Qwen/Qwen3-8B", engine="hf", kv_budget_bytes=(20 * GIB,)))
    assert engine_log_lines(p) == []
    assert engine_log_lines(replace(p, engine="vllm", error="refused")) == []


def test_a_payload_that_lists_its_own_lines_and_terms_is_taken_as_it_is() -> None:
    p = capacity_payload(capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100"))
    own = BudgetTerm(name="activations", bytes=1, exact=False, source="the profile", kind="activation")
    assert engine_log_lines(replace(p, log_lines=("a line",))) == ["a line"]
    assert replace(p, budget_terms=(own,)).budget_terms == (own,)


def test_the_reports_budgets_are_the_capacity_payloads_terms() -> None:
    """The page draws section 3 from `budgets`: each entry is its capacity answer's terms, not a copy made apart."""
    payload = report_payload(report("Qwen/Qwen3-8B", gpu="H100", engines=("vllm", "sglang")))
    assert [b.terms for b in payload.budgets] == [p.budget_terms for p in payload.capacity]
    assert all(b.terms for b in payload.budgets)


def test_budget_terms_are_the_payloads() -> None:
    p = capacity_payload(capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100"))
    terms = p.budget_terms
    assert terms[0].name == "weights (checkpoint)" and terms[0].bytes == p.weights_bytes_per_gpu
    assert sum(t.bytes for t in terms[1:]) == p.overhead_bytes_per_gpu  # rotary cache included
    assert [t.exact for t in terms][:2] == [True, True] and not all(t.exact for t in terms)
    given = capacity_payload(capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100", overhead_bytes=3 * GIB))
    assert [(t.name, t.bytes, t.exact) for t in given.budget_terms][1:] == [("overhead (given)", 3 * GIB, True)]
    budget = capacity_payload(capacity("Qwen/Qwen3-8B", engine="vllm", kv_budget_bytes=(8 * GIB,)))
    assert budget.budget_terms == ()  # the budget was given: nothing was subtracted
