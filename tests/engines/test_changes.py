"""Release rows compared field by field (kvplan/engines/changes.py) and vLLM's field -> rule map (field_rules.py)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from kvplan.engines import get_engine
from kvplan.engines.changes import chain, field_changes, row_fields, with_field
from kvplan.engines.vllm.field_rules import CHAIN, FIELD_RULES, UNCITED, rules_setting

ROWS = {r.release: r for r in CHAIN if r.release}


@pytest.mark.parametrize(("release", "words"), [(r, w) for r, m in FIELD_RULES.items() for w in m])
def test_each_mapped_rule_is_one_rule_of_its_release(release: str, words: str) -> None:
    assert len([c for c in ROWS[release].changes if words in c.rule]) == 1


def test_each_field_a_release_changes_is_mapped_or_uncited() -> None:
    """A V1 release with several rules says which sets each field it changes (FIELD_RULES), or the field is one
    whose rule the rows do not write in `changes` (UNCITED): a new row field says which rule sets it."""
    missing = []
    for prev, row in pairwise(CHAIN):
        if len(row.changes) < 2:
            continue
        for name in row_fields(row):
            mapped = any(name in names for names in FIELD_RULES.get(row.release, {}).values())
            if getattr(prev, name) != getattr(row, name) and not mapped and name not in UNCITED:
                missing.append((row.release, name))
    assert missing == [], "map these in kvplan/engines/vllm/field_rules.py (FIELD_RULES, or UNCITED)"


def test_an_uncited_field_cites_nothing_and_one_rule_releases_cite_it() -> None:
    assert rules_setting(ROWS["0.30.0"], "kv_dtypes") == ()  # what 0.30 accepts: rows_accepts.py, not `changes`
    assert rules_setting(ROWS["0.31.0"], "absolute_peak") == ROWS["0.31.0"].changes  # one rule, a cited field
    assert rules_setting(ROWS["0.26.0"], "mrv2") == ()  # 0.26's MRV2 list has no rule text


def test_vllm_025_to_029() -> None:
    found = {c.field: c for c in field_changes("vllm", "0.25", "0.29")}
    # the rows' own values: 0.26 drops the TP communicator, 0.29 the 16-token hybrid block rule (rows_late.py)
    assert (found["tp_comm"].before, found["tp_comm"].after) == ("lazy", "none")
    assert [s.release for s in found["mrv2"].steps] == ["0.26", "0.27", "0.29"]
    (rule,) = found["hybrid_block_legacy"].rules
    assert rule.release == "0.29" and rule.source == "0.29.0 platforms/interface.py:883-916"
    assert rules_setting(ROWS["0.29.0"], "hybrid_block_legacy") == (ROWS["0.29.0"].changes[2],)
    assert "gpu_memory_utilization" not in found  # 0.92 in both (set in 0.20)


def test_backwards_cites_the_same_rules_and_equal_rows_nothing() -> None:
    ahead = {c.field: set(c.rules) for c in field_changes("vllm", "0.25", "0.29")}
    back = {c.field: set(c.rules) for c in field_changes("vllm", "0.29", "0.25")}
    assert back == ahead
    assert field_changes("vllm", "0.29", "0.29") == ()
    assert field_changes("vllm", "0.29", "9.99") == ()
    assert field_changes("hf", "5", "5") == ()


def test_sglang_rows_cite_their_one_text() -> None:
    rows = {r.key: r for r in chain("sglang")}
    found = {c.field: c for c in field_changes("sglang", "0.5.2", "0.5.3")}
    assert (found["fraction_rule"].before, found["fraction_rule"].after) == ("tiers", "reserve")
    assert found["fraction_rule"].rules[0].source == rows["0.5.3"].source


def test_with_field_changes_one_field_of_a_copy() -> None:
    profile = get_engine("vllm@0.29")
    changed = with_field(profile, "hybrid_block_legacy", True)
    assert changed.release.hybrid_block_legacy and not profile.release.hybrid_block_legacy  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="no release row field"):
        with_field(profile, "key", "0.30")
