"""kvplan.memo.IdentityCache (issue 33): a value per object by identity, never shared by an equal object, bounded;
and the answers the caches built on it serve are those computed afresh."""

from __future__ import annotations

import dataclasses

from kvplan.config import load_model
from kvplan.memo import IdentityCache


def test_a_value_is_computed_once_per_object_and_extra() -> None:
    cache: IdentityCache[int] = IdentityCache(maxsize=8)
    calls: list[int] = []
    a, b = [1, 2], [1, 2]  # equal, not the same object

    def compute(obj: list[int], k: int) -> int:
        calls.append(k)
        return sum(obj) * k

    assert cache.get(a, 1, lambda: compute(a, 1)) == 3
    assert cache.get(a, 1, lambda: compute(a, 1)) == 3
    assert cache.get(b, 1, lambda: compute(b, 1)) == 3  # an equal object is another entry
    assert cache.get(a, 2, lambda: compute(a, 2)) == 6
    assert calls == [1, 1, 2]


def test_a_full_cache_is_cleared_not_grown() -> None:
    cache: IdentityCache[int] = IdentityCache(maxsize=4)
    kept = [object() for _ in range(10)]
    for i, obj in enumerate(kept):
        cache.get(obj, (), lambda i=i: i)
    assert len(cache._entries) <= 4


def test_a_model_with_another_config_reads_its_own_fields() -> None:
    model = load_model("meta-llama/Llama-3.1-8B")
    assert model.field("vocab_size") == 128256
    other = dataclasses.replace(model, raw={**model.raw, "vocab_size": 1000})
    assert other == model  # raw is not compared: the field cache must not key on equality
    assert other.field("vocab_size") == 1000 and model.field("vocab_size") == 128256


def test_a_repeated_capacity_and_fit_answer_as_the_first() -> None:
    import kvplan
    from kvplan.planning.fit import fit

    first = kvplan.capacity("Qwen/Qwen3-Next-80B-A3B-Thinking", gpu="H100", tp=4, max_model_len=32768)
    again = kvplan.capacity("Qwen/Qwen3-Next-80B-A3B-Thinking", gpu="H100", tp=4, max_model_len=32768)
    assert again == first and again.budget_lines == first.budget_lines and again.plan == first.plan
    one = fit("deepseek-ai/DeepSeek-V3", concurrency=64, gpu="H100", max_model_len=32768)
    assert fit("deepseek-ai/DeepSeek-V3", concurrency=64, gpu="H100", max_model_len=32768) == one
