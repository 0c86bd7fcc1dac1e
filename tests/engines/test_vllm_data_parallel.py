"""vLLM data parallel and expert parallel as the engine runs them (kvplan.engines.vllm.parallel).

-dp D -tp T: D engines of T GPUs, each planning its own KV pool at TP T (0.33 v1/engine/core.py:1545-1555,
v1/core/kv_cache_planning.py:1580-1594); attention and dense weights cut by T and whole across DP ranks; the MoE at
TP D·T, or whole experts over EP = D·T ranks with --enable-expert-parallel (0.33 fused_moe/config.py:1198-1230).
"""

from __future__ import annotations

from typing import Any

import pytest

import kvplan
from kvplan.errors import InputError
from kvplan.planning.weights import weight_bytes_by_kind

# DeepSeek-V3's MLA latent, bf16: (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B × 61 layers = 70,272 B per token on
# every GPU (MLA is not split by TP); a 16-token block of all 61 layers = 1,124,352 B.
PAGE_BYTES = 16 * 576 * 2 * 61


def _capacity(**layout: int) -> Any:
    return kvplan.capacity("deepseek-ai/DeepSeek-V3", gpu="H200", max_model_len=32768, **layout)


def test_deepseek_v3_dp8_ep_vs_tp8_on_eight_h200s() -> None:
    """The same 8 GPUs: -tp 8 keeps one pool whose latent is replicated on the 8 GPUs; -dp 8 -tp 1
    --enable-expert-parallel keeps 8 pools of disjoint requests, each GPU with the whole attention weights."""
    tp8, dp8 = _capacity(tp=8), _capacity(tp=1, dp=8, ep=8)
    assert (tp8.plan.page_bytes, dp8.plan.page_bytes) == (PAGE_BYTES, PAGE_BYTES)
    # both plan 8 GPUs per replica; vLLM logs one pool per DP rank
    assert (tp8.plan.gpus, tp8.plan.pools, dp8.plan.gpus, dp8.plan.pools) == (8, 1, 8, 8)
    # every other budget term is the same: the KV budget shrinks by exactly the extra weights of TP 1
    extra_weights = dp8.weights_bytes_per_gpu - tp8.weights_bytes_per_gpu
    assert min(tp8.kv_budget_bytes_per_gpu) - min(dp8.kv_budget_bytes_per_gpu) == extra_weights > 0
    # tokens per pool = whole blocks of the budget × 16
    for r in (tp8, dp8):
        assert r.plan.kv_tokens == min(r.kv_budget_bytes_per_gpu) // PAGE_BYTES * 16
    assert (tp8.plan.kv_tokens, dp8.plan.kv_tokens) == (707_024, 483_600)
    # latent tokens per GPU: TP 8 holds its 707,024 tokens on all 8 GPUs (88,378 distinct per GPU), DP 8 holds
    # 483,600 distinct tokens on each: 8 × 483,600 / 707,024 = 5.47× the replica's tokens
    replica = 8 * dp8.plan.kv_tokens
    assert replica == 3_868_800 and round(replica / tp8.plan.kv_tokens, 2) == 5.47
    assert dp8.plan.requests_at_max_len == 8 * (dp8.plan.max_concurrency or 0)  # max_concurrency: per DP rank


def test_deepseek_v3_expert_bytes_do_not_depend_on_the_split() -> None:
    """256 routed experts: EP 8 puts 32 whole experts on a GPU, MoE TP 8 cuts all 256 eight ways; same bytes. The
    attention weights are whole at TP 1. Per layer, fp8 (1 B a weight, scales aside): replicated under TP,
    q_a_proj 7168×1536 + kv_a_proj_with_mqa 7168×576 = 15,138,816 B; split, q_b_proj 1536×24576 + kv_b_proj
    512×32768 + o_proj 16384×7168 = 171,966,464 B. TP 1 / TP 8 = 187,105,280 / (15,138,816 + 21,495,808) = 5.1."""
    m = kvplan.load_model("deepseek-ai/DeepSeek-V3")
    ep = weight_bytes_by_kind(m, tp=1, ep=8)
    tp = weight_bytes_by_kind(m, tp=8)
    assert ep["moe_experts"] == tp["moe_experts"]
    assert round(ep["attention"] / tp["attention"], 1) == 5.1


def test_moe_without_expert_parallel_runs_at_tp_dp_times_tp() -> None:
    """-dp 2 -tp 1 without EP: every GPU holds all experts cut 2 ways (MoE TP 2), the attention whole."""
    m = kvplan.load_model("Qwen/Qwen3-30B-A3B")
    dp2 = _weights(m, tp=1, dp=2)
    assert dp2["moe_experts"] == weight_bytes_by_kind(m, tp=2)["moe_experts"]
    assert dp2["attention"] == weight_bytes_by_kind(m, tp=1)["attention"]


def _weights(model: Any, **layout: int) -> dict[str, int]:
    from kvplan.engines import Request, get_engine
    from kvplan.planning.weights import weight_bytes_per_stage

    split = get_engine("vllm").weight_split(Request.of(model, **layout))
    assert (split.tp, split.ep, split.expert_tp) == (layout["tp"], 1, layout["dp"] * layout["tp"])
    total = weight_bytes_per_stage(model, tp=split.tp, ep=split.ep, expert_tp=split.expert_tp)[0]
    experts = weight_bytes_by_kind(model, tp=split.expert_tp)["moe_experts"]
    return {"moe_experts": experts, "attention": weight_bytes_by_kind(model, tp=split.tp)["attention"], "total": total}


def test_max_num_seqs_is_per_dp_rank() -> None:
    """--max-num-seqs applies per DP rank (0.33 config/scheduler.py:99-103): the note says so with the value."""
    r = kvplan.capacity("Qwen/Qwen3-30B-A3B", gpu="H100", tp=1, dp=4, ep=4, max_num_seqs=64, max_model_len=8192)
    assert any("--max-num-seqs 64 applies per DP rank" in n for n in r.plan.notes)
    assert r.plan.gpus == 4 and r.plan.pools == 4


@pytest.mark.parametrize(("engine", "layout", "message"), [
    ("vllm", dict(tp=2, dp=2, ep=2), r"EP = DP 2 × TP 2 = 4"),
    ("sglang", dict(tp=8, dp=3), r"dp 3 must divide tp 8"),
    ("sglang", dict(tp=8, ep=3), r"ep 3 must divide tp 8"),
    ("trtllm", dict(tp=8, dp=8), r"dp 8: kvplan plans TensorRT-LLM without attention DP"),
    ("hf", dict(ep=2), r"ep 2: transformers serves from one process"),
])
def test_layouts_an_engine_does_not_take(engine: str, layout: dict[str, int], message: str) -> None:
    with pytest.raises(InputError, match=message):
        kvplan.capacity("Qwen/Qwen3-30B-A3B", engine=engine, gpu="H100", max_model_len=8192, **layout)


def test_sglang_dp_attention_stays_inside_tp() -> None:
    """SGLang --tp 8 --dp 8 --enable-dp-attention: 8 GPUs, attention TP 1, 8 pools; the attention weights whole."""
    r = kvplan.capacity("deepseek-ai/DeepSeek-V3", engine="sglang", gpu="H200", tp=8, dp=8, ep=8, max_model_len=32768)
    plain = kvplan.capacity("deepseek-ai/DeepSeek-V3", engine="sglang", gpu="H200", tp=8, ep=8, max_model_len=32768)
    assert (r.plan.pools, r.plan.gpus or 8) == (8, 8)
    m = kvplan.load_model("deepseek-ai/DeepSeek-V3")
    extra = weight_bytes_by_kind(m, tp=1)["attention"] - weight_bytes_by_kind(m, tp=8)["attention"]
    assert r.weights_bytes_per_gpu - plain.weights_bytes_per_gpu == extra
