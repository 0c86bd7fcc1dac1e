"""The TensorRT-LLM profile: ceil head split (and its floor estimator), blocks, the budget.
"""

from __future__ import annotations

from typing import Any

from plan_helpers import GIB, budget, plan

from kvplan.engines import Request, get_engine
from kvplan.engines.trtllm import estimator_bytes_per_token
from kvplan.formulas.layers import layer_specs
from kvplan.planning.capacity import engine_layout


def test_trtllm_llama2_70b_tp16_ceil_vs_floor(model: Any) -> None:
    # manager: ceil(8 / 16) = 1 head: 2 × 1 × 128 × 2 B × 80 = 40,960; estimator floor(128·8/16) = 64: 20,480
    m = model("meta-llama/Llama-2-70b-hf")
    layout = engine_layout(get_engine("trtllm"), Request.of(m, tp=16, max_model_len=4096))
    assert layout.stages[0].bytes_per_token() == 40_960
    assert sum(estimator_bytes_per_token(s, 16, layout.kv_dtype.element_bits) for s in layer_specs(m)) == 20_480


def test_trtllm_deepseek_v3_blocks_round_up(model: Any) -> None:
    # K-only latent: 61 × 576 × 2 B = 70,272 B/token on every rank; 40 GiB -> 611,191 tokens,
    # ceil(611,191 / 32) = 19,100 blocks (19,099.7 rounded up)
    p = plan(model, "deepseek-ai/DeepSeek-V3", "trtllm", 40 * GIB, tp=8)
    assert (p.kv_tokens, p.num_blocks, p.block_size) == (611_191, 19_100, 32)


def test_trtllm_budget_fraction_of_free_after_load(model: Any) -> None:
    assert budget(model, "trtllm", 80 * GIB, 20 * GIB, 10 * GIB) == int(50 * GIB * 0.9)  # 0.9 × (80 − 20 − 10)
