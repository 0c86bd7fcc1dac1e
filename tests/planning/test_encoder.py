"""The multimodal encoder cache of vLLM's profile run, and SGLang's fraction for a vision tower. Hand-derived.

vLLM: encoder budget = max(max_num_batched_tokens, tokens per item) (0.33 ``v1/core/encoder_cache_manager.py:372-380``,
``config/scheduler.py:307``); items 0.9 ``min(cdiv(budget, t), seqs × limit)`` (``v1/worker/gpu_model_runner.py:2210-2240``),
0.10 on ``max(1, min(budget // t, seqs × max(1, min(limit, max_model_len // t))))`` (``v1/worker/utils.py`` get_max_items;
0.33 ``multimodal/encoder_budget.py:142-182``); outputs held through the profile (0.33 ``v1/worker/gpu/model_runner.py:1022-1032``,
``gpu/mm/encoder_runner.py:111-146``), each expanded to the budget's rows in 0.11 (``gpu_model_runner.py:3369-3388``).
Gemma-3-27B: 256 tokens per image (``mm_tokens_per_image``), text hidden 5,376, bf16. H100 ``vllm serve`` defaults:
8,192 batched tokens, 1,024 sequences. SGLang: ``server_args.py:2513-2550`` (0.5.2), ``arg_groups/memory_hook.py:417-462``
(0.5.23).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.engines.sglang.extras import vlm_factor
from kvplan.planning.capacity import capacity
from kvplan.planning.extras.encoder import tokens_per_image

GIB = 2**30
GEMMA = "google/gemma-3-27b-it"


def encoder(engine: str, **settings: Any) -> Any:
    return capacity(GEMMA, engine=engine, kv_budget_bytes=(20 * GIB,), max_model_len=32768,
                    settings=Settings.of(**settings)).extras.encoder_cache


def test_vllm_033_gemma3_holds_32_images() -> None:
    # budget max(8,192, 256) = 8,192; items max(1, min(8,192 // 256 = 32, 1,024 × max(1, min(999, 32,768 // 256))))
    e = encoder("vllm")
    assert (e.budget_tokens, e.items_profiled, e.rows_per_item) == (8192, 32, 256)
    assert e.bytes_per_gpu == 32 * 256 * 5376 * 2 == 88_080_384


def test_vllm_011_pads_every_output_to_the_budget() -> None:
    # each of the 32 outputs is expanded to 8,192 rows: 32 × 8,192 × 5,376 × 2 B (2.62 GiB, 32× the 0.33 figure)
    e = encoder("vllm@0.11")
    assert (e.items_profiled, e.rows_per_item) == (32, 8192)
    assert e.bytes_per_gpu == 32 * 8192 * 5376 * 2 == 2_818_572_288


@pytest.mark.parametrize(("engine", "items"), [
    # budget max(1,000, 256) = 1,000: 0.9 takes cdiv(1,000, 256) = 4 items, 0.10 on 1,000 // 256 = 3
    pytest.param("vllm@0.9", 4, id="0.9-cdiv"), pytest.param("vllm@0.10", 3, id="0.10-floor"),
    pytest.param("vllm", 3, id="0.33-floor"),
])
def test_items_by_release(engine: str, items: int) -> None:
    # max_num_seqs is given: before 0.10.1 vLLM does not cap its default (1,024) by max_num_batched_tokens and refuses
    # 1,000 < 1,024 (config/scheduler.py _verify_args); 256 leaves the items uncapped (256 × 999 ≥ 4)
    e = encoder(engine, max_num_batched_tokens=1000, max_num_seqs=256)
    assert e.items_profiled == items and e.bytes_per_gpu == items * 256 * 5376 * 2


def test_the_decoder_limit_caps_the_items() -> None:
    # 16 sequences × max(1, min(1 image per prompt, 128)) = 16 < 32 encoder items
    assert encoder("vllm", max_num_seqs=16, limit_mm_per_prompt=1).items_profiled == 16


def test_text_only_profiles_no_encoder() -> None:
    assert encoder("vllm", limit_mm_per_prompt=0) is None


def test_the_encoder_outputs_come_out_of_the_budget() -> None:
    plain = capacity(GEMMA, engine="vllm", gpu="H100", max_model_len=32768)
    text = capacity(GEMMA, engine="vllm", gpu="H100", max_model_len=32768, settings=Settings.of(limit_mm_per_prompt=0))
    term = next(t for t in plain.budget_terms if t.kind == "encoder_cache")
    assert term.bytes == 88_080_384 and term.exact
    assert min(text.kv_budget_bytes_per_gpu) - min(plain.kv_budget_bytes_per_gpu) == 88_080_384


def test_tokens_per_image(model: Any) -> None:
    # llava-1.5: CLIP at 336 px, 14 px patches: (336 // 14)² = 576; Gemma-3: 256; a text model: none
    assert tokens_per_image(model("tests/data/llava-1.5-7b-hf.config.json")) == 576
    assert tokens_per_image(model(GEMMA)) == 256
    assert tokens_per_image(model("meta-llama/Llama-3.1-8B")) is None


def test_sglang_scales_the_fraction_for_the_vision_tower(model: Any) -> None:
    # SigLIP in Gemma-3: 27 layers × 1,152² over ViT-L/14's 24 × 1,024² = 1.423828125;
    # 0.95 × clamp(1 − 0.1 × 0.423828125, 0.8, 1.05) = 0.909736328125. CLIP-L (llava): ratio 1 -> 0.95
    assert vlm_factor(model(GEMMA)) == pytest.approx(0.909736328125)
    assert vlm_factor(model("tests/data/llava-1.5-7b-hf.config.json")) == pytest.approx(0.95)
    assert vlm_factor(model("meta-llama/Llama-3.1-8B")) == 1.0
    # 0.5.2 on an H100 (81,559 MiB), tp 1: round((81,559 − 10,240) / 81,559, 3) = 0.874, then × the factor
    r = capacity(GEMMA, engine="sglang@0.5.2", gpu="H100", max_model_len=32768)
    assert r.settings.sglang.mem_fraction_static == pytest.approx(0.874 * 0.909736328125)
    assert r.extras.encoder_cache is None  # SGLang's rule is the fraction, not a profiled cache
