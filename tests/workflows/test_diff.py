"""kvplan.diff: two setups of one question, each change put down to the release that makes it."""

from __future__ import annotations

import kvplan
from kvplan.engines.changes import field_changes

QUESTION = {"gpu": "H100", "tp": 4, "max_model_len": 32768}
MODEL = "Qwen/Qwen3-Next-80B-A3B-Thinking"


def test_the_named_release_is_where_the_tokens_move() -> None:
    d = kvplan.diff(MODEL, engines=("vllm@0.25", "vllm@0.29"), **QUESTION)
    assert kvplan.Diff is type(d)
    top = max(d.causes_of("kv_tokens"), key=lambda c: abs(c.moves["kv_tokens"][1] - c.moves["kv_tokens"][0]))
    assert (top.field, top.release) == ("tp_comm", "0.26")
    # independently: the same question on the releases before and after it, as capacity answers them; 0.26 drops
    # the TP communicator term (rows_late.py V1_026 tp_comm="none") and holds more tokens for it
    before, after = (kvplan.capacity(MODEL, engine=f"vllm@{r}", **QUESTION) for r in ("0.25", "0.26"))
    names = ({t.name for t in before.budget_terms}, {t.name for t in after.budget_terms})
    assert "TP communicator created in the profile run" in names[0] - names[1]
    assert after.plan.kv_tokens > before.plan.kv_tokens
    assert {c.field for c in field_changes("vllm", "0.25", "0.26")} >= {"tp_comm"}


def test_backwards_is_the_mirror() -> None:
    ahead = kvplan.diff(MODEL, engines=("vllm@0.25", "vllm@0.29"), **QUESTION)
    back = kvplan.diff(MODEL, engines=("vllm@0.29", "vllm@0.25"), **QUESTION)
    assert {(k, b, a) for k, a, b in ahead.quantities if k != "log_lines"} == {q for q in back.quantities if q[0] != "log_lines"}
    assert set(ahead.changed) == set(back.changed)
    assert {c.field for c in back.causes if "kv_tokens" in c.moves} >= {"tp_comm"}
