"""TP head split and replication, MLA replication, PP layer split, DCP token split."""

from __future__ import annotations

import pytest

import kvplan
from kvplan.errors import ShardingError
from kvplan.formulas.sharding import kv_heads_per_rank, pp_layer_counts


@pytest.mark.parametrize(("heads", "tp", "expected"), [
    pytest.param(8, 1, 8, id="no-tp"),
    pytest.param(8, 4, 2, id="split"),
    pytest.param(8, 8, 1, id="one-each"),
    pytest.param(8, 16, 1, id="replicated-x2"),  # max(1, 8 // 16): never 0 heads
    pytest.param(1, 8, 1, id="mqa-replicated"),
])
def test_kv_heads_per_rank(heads: int, tp: int, expected: int) -> None:
    assert kv_heads_per_rank(heads, tp) == expected


@pytest.mark.parametrize(("heads", "tp"), [(10, 8), (8, 12), (6, 4)])
def test_uneven_heads_are_refused(heads: int, tp: int) -> None:
    with pytest.raises(ShardingError):
        kv_heads_per_rank(heads, tp)


def test_replicated_heads_double_the_cluster_total() -> None:
    # Llama-2-70B, tp 16: each of the 8 heads lives on 2 GPUs -> all-GPU bytes = 2 × unsharded
    r = kvplan.kv_cache("meta-llama/Llama-2-70b", tp=16, max_model_len=4096)
    assert r.total_bytes_all_gpus == 2 * r.total_bytes == 2 * 1_342_177_280
    exact = kvplan.kv_cache("meta-llama/Llama-2-70b", tp=8, max_model_len=4096)
    assert exact.total_bytes_all_gpus == exact.total_bytes  # no replication at tp = kv heads


def test_mla_is_replicated_on_every_rank() -> None:
    # DeepSeek-V3: 61 × 576 × 2 B = 70,272 B/token on each of 8 GPUs -> 8× in the cluster
    r = kvplan.kv_cache("deepseek-ai/DeepSeek-V3", tp=8, max_model_len=1000)
    assert r.bytes_per_sequence_per_gpu == 70_272 * 1000
    assert r.total_bytes_all_gpus == 8 * 70_272 * 1000


@pytest.mark.parametrize(("layers", "pp", "expected"), [
    (80, 1, (80,)),
    (80, 4, (20, 20, 20, 20)),
    (80, 3, (27, 27, 26)),  # 80 // 3 = 26, remainder 2 -> stages -2 and -3 get one more; the last is spared
    (61, 4, (15, 15, 16, 15)),  # remainder 1 -> stage -2
    (5, 5, (1, 1, 1, 1, 1)),
])
def test_pp_split_follows_vllm(layers: int, pp: int, expected: tuple[int, ...]) -> None:
    assert pp_layer_counts(layers, pp) == expected
    assert sum(expected) == layers


def test_pp_per_gpu_is_the_heaviest_stage() -> None:
    # DeepSeek-V3 pp 4: heaviest stage holds 16 layers × 1,152 B = 18,432 B/token
    r = kvplan.kv_cache("deepseek-ai/DeepSeek-V3", pp=4, max_model_len=100)
    assert r.bytes_per_token_per_gpu == 16 * 1152
    assert r.heaviest_stage == 2
    # stages together hold the unsharded model exactly once
    assert r.total_bytes_all_gpus == r.total_bytes


def test_tp_and_pp_combine() -> None:
    # Llama-2-70B tp 4 pp 2: 40 layers × 2 heads × (128 + 128) × 2 B = 40,960
    assert kvplan.kv_cache("meta-llama/Llama-2-70b", tp=4, pp=2, max_model_len=10).bytes_per_token_per_gpu == 40_960


def test_dcp_splits_tokens_of_replicated_mla() -> None:
    # engines.md §6: DeepSeek-V3 tp 8 dcp 8 -> 70,272 / 8 = 8,784 B/token/GPU; no duplication left
    r = kvplan.kv_cache("deepseek-ai/DeepSeek-V3", tp=8, dcp=8, max_model_len=8000)
    assert r.bytes_per_token_per_gpu == 8_784
    assert r.bytes_per_sequence_per_gpu == 70_272 * 1000
    assert r.total_bytes_all_gpus == r.total_bytes


@pytest.mark.parametrize(("model_id", "tp", "pp", "dcp"), [
    pytest.param("meta-llama/Llama-2-70b", 3, 1, 1, id="tp-not-dividing-heads"),
    pytest.param("microsoft/phi-4", 8, 1, 1, id="tp-not-dividing-10-kv-heads"),
    pytest.param("tiiuae/falcon-7b", 2, 1, 1, id="falcon-71-heads"),
    pytest.param("meta-llama/Llama-3.2-1B", 1, 17, 1, id="pp-more-than-layers"),
    pytest.param("openai/gpt-oss-20b", 8, 1, 2, id="dcp-with-sliding-window"),
    pytest.param("deepseek-ai/DeepSeek-V3", 8, 1, 3, id="dcp-not-dividing-tp"),
    pytest.param("meta-llama/Llama-2-70b", 8, 1, 2, id="dcp-without-replicated-heads"),
    pytest.param("meta-llama/Llama-2-70b", 0, 1, 1, id="tp-zero"),
])
def test_layouts_the_engines_refuse(model_id: str, tp: int, pp: int, dcp: int) -> None:
    with pytest.raises(ShardingError):
        kvplan.kv_cache(model_id, tp=tp, pp=pp, dcp=dcp, max_model_len=100)
