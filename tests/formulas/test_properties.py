"""Properties of the KV-cache formulas, over the bundled models and generated valid configs.

Each property is stated from first principles (what memory must do), not from kvplan's code: the
expected replication factor, for instance, is re-derived here from heads and tp.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import pytest
from catalog import sized_ids
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import mla_doc, valid_docs

import kvplan
from kvplan.config import normalize
from kvplan.formulas.layout import Group
from kvplan.specs import ChunkedAttn, Composite, FullAttn, IndexerCache, LinearState, MLAAttn, SlidingAttn, parts
from kvplan.units import cdiv

TPS = (1, 2, 3, 4, 6, 8, 16, 32, 64, 128)
BLOCK_SIZES = (1, 2, 16, 17, 32, 64, 128, 256, 544)
seq_lens = st.integers(1, 1 << 20)
batches = st.integers(1, 4096)


@cache
def bundled(model_id: str) -> kvplan.ModelConfig:
    return kvplan.load_model(model_id)


def generated(case: tuple[dict[str, Any], Any]) -> kvplan.ModelConfig:
    return normalize(case[0], model_id="generated", source="generated.json")


models = st.sampled_from(sorted(sized_ids())).map(bundled) | valid_docs().map(generated)


def layout_ok(model: kvplan.ModelConfig, **args: Any) -> bool:
    try:
        kvplan.build_layout(model, **args)
    except kvplan.KvplanError:
        return False
    return True


def valid_tps(model: kvplan.ModelConfig) -> list[int]:
    return [tp for tp in TPS if layout_ok(model, tp=tp)]


def with_layers(model: kvplan.ModelConfig, num_layers: int) -> kvplan.ModelConfig:
    """The same model cut to its first `num_layers` layers."""
    return dataclasses.replace(model, num_layers=num_layers, layer_kinds=model.layer_kinds[:num_layers])


def replication(spec: object, tp: int) -> int:
    """Ranks holding the same KV bytes: MLA's latent and the sparse-attention indexer's one K head are on every
    rank; heads repeat once tp > heads; a Mamba-2 state's single B/C group is on every rank (its heads split);
    a layer of several caches repeats bytes if any of its parts does."""
    if isinstance(spec, Composite):
        return max(replication(p, tp) for p in spec.parts)
    if isinstance(spec, (MLAAttn, IndexerCache)):
        return tp
    if isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn)):
        return tp // spec.num_kv_heads if tp > spec.num_kv_heads else 1
    if isinstance(spec, LinearState) and spec.num_groups == 1:
        return tp
    return 1


# ------------------------------------------------------------------------------- monotonicity

@given(models, seq_lens, seq_lens, st.sampled_from((0, *BLOCK_SIZES)))
def test_bytes_never_decrease_as_seq_len_grows(model: kvplan.ModelConfig, a: int, b: int, block_size: int) -> None:
    short, long = sorted((a, b))
    r1 = kvplan.kv_cache(model, max_model_len=short, block_size=block_size)
    r2 = kvplan.kv_cache(model, max_model_len=long, block_size=block_size)
    for name in ("bytes_per_sequence", "bytes_per_sequence_paged", "bytes_per_sequence_per_gpu",
                 "bytes_per_sequence_paged_per_gpu", "total_bytes", "total_bytes_all_gpus"):
        assert getattr(r1, name) <= getattr(r2, name), name


@given(models, batches, batches, seq_lens)
def test_bytes_never_decrease_as_batch_grows(model: kvplan.ModelConfig, a: int, b: int, seq_len: int) -> None:
    small, big = sorted((a, b))
    r1, r2 = (kvplan.kv_cache(model, max_model_len=seq_len, batch=n) for n in (small, big))
    for name in ("total_bytes", "total_bytes_paged", "total_bytes_per_gpu", "total_bytes_paged_per_gpu",
                 "total_bytes_all_gpus"):
        assert getattr(r1, name) <= getattr(r2, name), name
    assert r2.total_bytes == big * r1.bytes_per_sequence  # a batch is that many sequences


@given(models, st.data(), seq_lens)
def test_bytes_never_decrease_as_layers_grow(model: kvplan.ModelConfig, data: st.DataObject, seq_len: int) -> None:
    fewer = data.draw(st.integers(1, model.num_layers))
    more = data.draw(st.integers(fewer, model.num_layers))
    r1, r2 = (kvplan.kv_cache(with_layers(model, n), max_model_len=seq_len) for n in (fewer, more))
    for name in ("bytes_per_token", "bytes_per_sequence", "bytes_per_sequence_paged", "total_bytes_all_gpus"):
        assert getattr(r1, name) <= getattr(r2, name), name


@given(models, st.data(), seq_lens)
def test_per_gpu_bytes_never_increase_with_tp(model: kvplan.ModelConfig, data: st.DataObject, seq_len: int) -> None:
    tps = valid_tps(model)
    small = data.draw(st.sampled_from(tps))
    big = data.draw(st.sampled_from([t for t in tps if t >= small]))
    r1, r2 = (kvplan.kv_cache(model, tp=tp, max_model_len=seq_len) for tp in (small, big))
    for name in ("bytes_per_token_per_gpu", "bytes_per_sequence_per_gpu", "bytes_per_sequence_paged_per_gpu",
                 "total_bytes_per_gpu"):
        assert getattr(r2, name) <= getattr(r1, name), name


mla_models = (st.sampled_from([m for m in sorted(sized_ids()) if kvplan.kv_cache(bundled(m), max_model_len=1).layout.attention == "MLA"]).map(bundled)
              | mla_doc().map(generated))


@given(mla_models, st.sampled_from(TPS), seq_lens)
def test_mla_per_gpu_bytes_are_tp_invariant(model: kvplan.ModelConfig, tp: int, seq_len: int) -> None:
    if not layout_ok(model, tp=tp):  # tp must still divide the attention heads
        return
    r1, r_tp = kvplan.kv_cache(model, max_model_len=seq_len), kvplan.kv_cache(model, tp=tp, max_model_len=seq_len)
    for name in ("bytes_per_token_per_gpu", "bytes_per_sequence_per_gpu", "bytes_per_sequence_paged_per_gpu"):
        assert getattr(r_tp, name) == getattr(r1, name), name
    assert r_tp.total_bytes_all_gpus == tp * r1.total_bytes  # one full copy per rank


# ------------------------------------------------------------------------------- conservation

@given(models, st.data(), seq_lens, st.integers(1, 64))
def test_all_gpu_bytes_cover_the_model_and_exceed_it_only_by_replication(
        model: kvplan.ModelConfig, data: st.DataObject, seq_len: int, batch: int) -> None:
    tp = data.draw(st.sampled_from(valid_tps(model)))
    dcp = data.draw(st.sampled_from([d for d in (1, 2, 4, 8) if layout_ok(model, tp=tp, dcp=d)]))
    result = kvplan.kv_cache(model, tp=tp, dcp=dcp, max_model_len=seq_len, batch=batch)
    assert result.total_bytes_all_gpus >= result.total_bytes
    # DCP turns dcp of the replicas into disjoint token stripes, so only rep / dcp copies remain.
    duplicated = any(replication(g.spec, tp) > dcp for g in result.layout.groups
                     if g.bytes_per_token_per_layer or g.state_bytes_per_layer)
    assert (result.total_bytes_all_gpus == result.total_bytes) == (not duplicated)
    # no GPU holds more than the most loaded one: the sum over the tp × pp GPUs is bounded by it
    assert result.layout.num_gpus * result.total_bytes_per_gpu >= result.total_bytes_all_gpus


@given(models, st.data(), seq_lens, st.sampled_from((0, *BLOCK_SIZES)))
def test_pp_stages_sum_to_the_unsharded_model(model: kvplan.ModelConfig, data: st.DataObject, seq_len: int,
                                              block_size: int) -> None:
    pp = data.draw(st.integers(1, min(model.num_layers, 16)))
    layout = kvplan.build_layout(model, pp=pp, block_size=block_size)
    whole = kvplan.build_layout(model, block_size=block_size).whole
    assert sum(sum(g.stage_layers) for g in layout.groups) == model.num_layers
    assert sum(s.bytes_per_token() for s in layout.stages) == whole.bytes_per_token()
    assert sum(s.sequence_bytes(seq_len) for s in layout.stages) == whole.sequence_bytes(seq_len)
    assert sum(s.sequence_bytes(seq_len, block_size) for s in layout.stages) == whole.sequence_bytes(seq_len,
                                                                                                      block_size)
    result = kvplan.kv_cache(model, pp=pp, max_model_len=seq_len, block_size=block_size)
    assert result.total_bytes_all_gpus == result.total_bytes  # tp 1: no replica anywhere
    assert result.bytes_per_sequence_per_gpu <= result.bytes_per_sequence


@given(models, seq_lens, st.sampled_from(BLOCK_SIZES), st.data())
def test_paging_adds_less_than_one_block_per_layer_group(model: kvplan.ModelConfig, seq_len: int, block_size: int,
                                                         data: st.DataObject) -> None:
    tp = data.draw(st.sampled_from(valid_tps(model)))
    result = kvplan.kv_cache(model, tp=tp, max_model_len=seq_len, block_size=block_size)
    groups = result.layout.groups
    # a cross-attention cache (Whisper) pages its encoder tokens as well: one more partial block per layer
    one_block_each = sum(block_size * g.num_layers * (g.bytes_per_token_per_layer + g.encoder_bytes_per_token_per_layer)
                         for g in groups)
    waste = result.bytes_per_sequence_paged - result.bytes_per_sequence
    assert waste >= 0
    assert waste < one_block_each or one_block_each == 0
    per_gpu_block_each = sum(block_size * g.num_layers * (g.bytes_per_token_per_layer_per_gpu
                                                          + g.encoder_bytes_per_token_per_layer_per_gpu) for g in groups)
    waste_gpu = result.bytes_per_sequence_paged_per_gpu - result.bytes_per_sequence_per_gpu
    assert waste_gpu >= 0
    assert waste_gpu < per_gpu_block_each or per_gpu_block_each == 0
    # the waste is exactly the padding to whole blocks of the tokens each group holds
    padded = sum(_padding_bytes(g, seq_len, block_size) for g in groups)
    assert waste == padded


def _padding_bytes(g: Group, tokens: int, block_size: int) -> int:
    """Bytes one group's layers add when its tokens are rounded up to whole blocks. A composite layer pads each
    cache on its own: a compressed cache (DeepSeek-V4, one entry per `ratio` tokens) holds cdiv(paged, ratio)
    entries instead of cdiv(tokens, ratio), so its padding is not the per-token rate times the padded tokens."""
    encoder = g.num_layers * g.encoder_bytes_per_token_per_layer * (-g.encoder_tokens % block_size)
    if not g.part_loads:
        return encoder + g.num_layers * g.bytes_per_token_per_layer * (-min(tokens, g.token_limit or tokens) % block_size)
    entries = 0
    for part in g.part_loads:
        held = tokens if part.token_limit is None else min(tokens, part.token_limit)
        grown = cdiv(cdiv(held, block_size) * block_size, part.tokens_per_state) - cdiv(held, part.tokens_per_state)
        entries += part.bytes_per_state * grown
    return encoder + g.num_layers * entries


@given(models, seq_lens)
def test_no_paging_is_exact(model: kvplan.ModelConfig, seq_len: int) -> None:
    result = kvplan.kv_cache(model, max_model_len=seq_len, block_size=0)
    assert result.bytes_per_sequence_paged == result.bytes_per_sequence


@given(models, seq_lens, batches, st.data())
def test_fp8_is_half_of_bf16(model: kvplan.ModelConfig, seq_len: int, batch: int, data: st.DataObject) -> None:
    tp = data.draw(st.sampled_from(valid_tps(model)))
    fp8, bf16 = (kvplan.kv_cache(model, tp=tp, max_model_len=seq_len, batch=batch, kv_dtype=d) for d in ("fp8", "bf16"))
    # not for sparse attention: its indexer key is fp8 either way, and vLLM stores an fp8 sparse latent
    # as fp8_ds_mla (656 B, not 576): tests/probe and tests/config/test_kinds.py size those by hand
    assume(not any(isinstance(p, IndexerCache) or getattr(p, "sparse", False)
                   for g in fp8.layout.groups for p in parts(g.spec)))
    state = sum(g.num_layers * g.state_bytes_per_layer for g in fp8.layout.groups)  # linear state keeps its dtype
    assert 2 * fp8.bytes_per_token == bf16.bytes_per_token
    assert 2 * fp8.bytes_per_token_per_gpu == bf16.bytes_per_token_per_gpu
    assert 2 * (fp8.bytes_per_sequence - state) == bf16.bytes_per_sequence - state
    assert 2 * (fp8.total_bytes - batch * state) == bf16.total_bytes - batch * state
    if not any(isinstance(g.spec, LinearState) for g in fp8.layout.groups):
        for name in ("bytes_per_sequence_per_gpu", "bytes_per_sequence_paged", "total_bytes_paged_per_gpu",
                     "total_bytes_all_gpus"):
            assert 2 * getattr(fp8, name) == getattr(bf16, name), name


@pytest.mark.parametrize("model_id", sorted(sized_ids()))
def test_every_bundled_model_satisfies_pp_conservation(model_id: str) -> None:
    """Deterministic sweep: every bundled model at every pp that fits, tp 1, 32k tokens."""
    model = bundled(model_id)
    whole = kvplan.kv_cache(model, max_model_len=32768)
    for pp in range(1, min(model.num_layers, 8) + 1):
        stages = kvplan.build_layout(model, pp=pp).stages
        assert sum(s.sequence_bytes(32768) for s in stages) == whole.bytes_per_sequence, pp


@given(models, st.data(), seq_lens, st.sampled_from((0, *BLOCK_SIZES)))
def test_per_gpu_bytes_are_those_of_the_most_loaded_stage(model: kvplan.ModelConfig, data: st.DataObject,
                                                          seq_len: int, block_size: int) -> None:
    """Exact and paged per-GPU bytes each come from their own most loaded stage: with a window shorter
    than a block, the stage heaviest in exact bytes need not be the heaviest once pages are rounded."""
    pp = data.draw(st.integers(1, min(model.num_layers, 8)))
    result = kvplan.kv_cache(model, pp=pp, max_model_len=seq_len, block_size=block_size)
    stages = result.layout.stages
    assert result.bytes_per_sequence_per_gpu == max(s.sequence_bytes(seq_len) for s in stages)
    assert result.bytes_per_sequence_paged_per_gpu == max(s.sequence_bytes(seq_len, block_size) for s in stages)


def test_paged_per_gpu_bytes_follow_the_stage_heaviest_when_paged() -> None:
    """Regression: stage 0 = 1 full layer + 1 empty, stage 1 = 2 sliding layers of window 1 (pp 2).
    Per layer per token: 2 × 1 KV head × 128 × 2 B = 512 B. At 16 tokens, block 16:
    exact   stage 0 = 512 × 16 = 8,192;      stage 1 = 2 × 512 × 1 = 1,024   -> 8,192
    paged   stage 0 = 512 × 16 = 8,192;      stage 1 = 2 × 512 × 16 = 16,384 -> 16,384 (was 8,192)."""
    doc = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 128,
           "sliding_window": 1, "torch_dtype": "bfloat16",
           "layer_types": ["full_attention", "none", "sliding_attention", "sliding_attention"]}
    result = kvplan.kv_cache(normalize(doc, model_id="t", source="t"), pp=2, max_model_len=16, block_size=16)
    assert result.bytes_per_sequence_per_gpu == 8_192
    assert result.bytes_per_sequence_paged_per_gpu == 16_384
    assert result.total_bytes_paged_per_gpu == 16_384


# ------------------------------------------------------------------------------------ capacity

GIB = 1024**3
budgets = st.integers(0, 192 * GIB)


def _plan_numbers(model: kvplan.ModelConfig, engine: str, tp: int, **budget: Any) -> tuple[float, ...] | None:
    from kvplan.planning.capacity import capacity

    try:
        plan = capacity(model, engine=engine, tp=tp, **budget).plan
    except kvplan.KvplanError:
        return None
    return (plan.kv_tokens, plan.num_blocks or 0, plan.max_concurrency or 0.0, plan.requests_at_max_len)


def assert_not_less(lo: tuple[float, ...] | None, hi: tuple[float, ...] | None) -> None:
    """hi >= lo, element-wise. A refusal (None) counts as no capacity: below any answer, equal to an
    empty one. (kvplan answers an empty plan when the budget is <= 0, and refuses, as vLLM does, when a
    positive budget is too small for one max-length request.)"""
    if hi is None:
        assert lo is None or not any(lo), (lo, hi)
        return
    if lo is not None:
        assert all(x <= y for x, y in zip(lo, hi, strict=True)), (lo, hi)


@given(models, st.data(), budgets, budgets)
def test_capacity_is_monotone_in_the_kv_budget(model: kvplan.ModelConfig, data: st.DataObject, a: int,
                                               b: int) -> None:
    from kvplan.engines import ENGINE_NAMES

    engine = data.draw(st.sampled_from(ENGINE_NAMES))
    tp = data.draw(st.sampled_from(valid_tps(model)))
    small, big = sorted((a, b))
    lo = _plan_numbers(model, engine, tp, kv_budget_bytes=(small,))
    hi = _plan_numbers(model, engine, tp, kv_budget_bytes=(big,))
    assert_not_less(lo, hi)


@given(st.sampled_from(sorted(sized_ids())).map(bundled), st.data(), st.integers(1, 320), st.integers(1, 320))
def test_capacity_is_monotone_in_gpu_memory(model: kvplan.ModelConfig, data: st.DataObject, a: int, b: int) -> None:
    from kvplan.engines import ENGINE_NAMES, Settings

    engine = data.draw(st.sampled_from(ENGINE_NAMES))
    tp = data.draw(st.sampled_from(valid_tps(model)))
    small, big = sorted((a, b))
    # The engines' defaults follow the GPU's memory class (vLLM's max_num_batched_tokens, whose in-flight tokens
    # a sliding layer reserves; SGLang's reserve, 10 GiB from 60 GiB on): fixed here, capacity only grows.
    fixed = Settings.of(max_num_batched_tokens=8192, max_num_seqs=1024, mem_fraction_static=0.85)
    lo = _plan_numbers(model, engine, tp, gpu_memory_bytes=small * GIB, settings=fixed)
    hi = _plan_numbers(model, engine, tp, gpu_memory_bytes=big * GIB, settings=fixed)
    assert_not_less(lo, hi)


@given(models, st.data(), seq_lens, st.sampled_from(["auto", "fp8", "int4", "nvfp4", "fp8_per_token_head"]))
def test_table_rows_add_up_to_the_totals(model: kvplan.ModelConfig, data: st.DataObject, seq_len: int,
                                         kv_dtype: str) -> None:
    """The size payload's per-group rows (what the table prints) sum to its totals, whole and per GPU."""
    from kvplan.render.size import size_payload

    tp = data.draw(st.sampled_from(valid_tps(model)))
    pp = data.draw(st.integers(1, min(model.num_layers, 4)))
    dcp = data.draw(st.sampled_from([d for d in (1, 2, 4) if layout_ok(model, tp=tp, dcp=d)]))
    try:
        result = kvplan.kv_cache(model, tp=tp, pp=pp, dcp=dcp, max_model_len=seq_len, kv_dtype=kv_dtype)
    except kvplan.KvplanError:  # a dtype the heads do not fit (int4 groups, MLA with per-head scales)
        return
    payload = size_payload(result)
    rows = payload.layer_groups
    assert sum(r.num_layers for r in rows) == model.num_layers
    assert sum(r.bytes_per_token for r in rows) == payload.bytes_per_token
    assert sum(r.bytes_per_token_per_gpu for r in rows) == payload.bytes_per_token_per_gpu


@given(models, st.data(), seq_lens)
def test_per_gpu_bytes_never_increase_with_dcp(model: kvplan.ModelConfig, data: st.DataObject, seq_len: int) -> None:
    """Decode context parallelism stripes a sequence's tokens: more ranks, fewer tokens on each."""
    tp = data.draw(st.sampled_from(valid_tps(model)))
    dcps = [d for d in (1, 2, 4, 8, 16) if layout_ok(model, tp=tp, dcp=d)]
    small = data.draw(st.sampled_from(dcps))
    big = data.draw(st.sampled_from([d for d in dcps if d >= small]))
    r1, r2 = (kvplan.kv_cache(model, tp=tp, dcp=d, max_model_len=seq_len) for d in (small, big))
    for name in ("bytes_per_sequence_per_gpu", "bytes_per_sequence_paged_per_gpu", "total_bytes_per_gpu"):
        assert getattr(r2, name) <= getattr(r1, name), name
    assert r2.total_bytes == r1.total_bytes  # the model's cache does not change, only where it lives
