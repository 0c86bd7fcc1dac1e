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

import subprocess
import sys
from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.engines.sglang.extras import vlm_factor
from kvplan.launch.command import read_command
from kvplan.launch.read import read_launch
from kvplan.planning.capacity import capacity
from kvplan.planning.extras.encoder import tokens_per_image
from kvplan.planning.weights import weight_bytes_by_kind

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


def test_the_encoder_outputs_come_out_of_the_budget(model: Any) -> None:
    # text-only mode also leaves the tower out of the weights (0.15 on); the tower's forward peak (3.1 GiB) stays
    # below the sampler's on an H100, so the activation term is the same
    plain = capacity(GEMMA, engine="vllm", gpu="H100", max_model_len=32768)
    text = capacity(GEMMA, engine="vllm", gpu="H100", max_model_len=32768, settings=Settings.of(limit_mm_per_prompt=0))
    term = next(t for t in plain.budget_terms if t.kind == "encoder_cache")
    assert term.bytes == 88_080_384 and term.exact
    vision = weight_bytes_by_kind(model(GEMMA)).get("vision", 0)
    assert min(text.kv_budget_bytes_per_gpu) - min(plain.kv_budget_bytes_per_gpu) == 88_080_384 + vision


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


def test_qwen35_tower_at_its_largest_image(model: Any) -> None:
    # Qwen3.5-9B: the processor's max_pixels 16,777,216 // (16 × 2)² = 16,384 tokens, × 2² = 65,536 patches (the
    # 0.19 log: "budget of 16384 tokens, and profiled with 1 image items"). Per patch at a layer's peak (h 1,152, tp 1):
    # attention: residual + normed 2h + qkv 3h + the q/k copy and its rotated copy 2 × 2h + the output and its
    # contiguous copy 2h = 11h = 12,672 (the MLP: 2h + fc1 + act 2 × 4,304 = 10,912), + the position embeddings h,
    # × 2 B = 27,648; + the fp32 pixel values 3 × 2 × 16 × 16 × 4 = 6,144 → 33,792 B.
    e = capacity("Qwen/Qwen3.5-9B", engine="vllm@0.19", gpu="L40S", max_model_len=262144,
                 settings=Settings.of(max_num_batched_tokens=8192)).extras.encoder_cache
    assert (e.tokens_per_item, e.patches_per_item, e.budget_tokens, e.items_profiled) == (16384, 65536, 16384, 1)
    assert e.forward_peak_bytes_per_gpu == 65536 * 33_792 == 2_214_592_512
    assert e.bytes_per_gpu == 16384 * 4096 * 2 and "max_pixels 16,777,216" in e.assumed


def test_qwen35_9b_log_vllm_019_profiles_the_tower() -> None:
    # tests/data/logs/vllm-v0190-qwen35-9b-l40s: the tower's 2.06 GiB peak (less the 0.12 GiB its outputs then hold
    # in the cache) exceeds the sampler's 1.03 GiB: the activation term is the encoder's, and the cache stays its own
    r = capacity("Qwen/Qwen3.5-9B", engine="vllm@0.19", gpu="L40S", max_model_len=262144,
                 settings=Settings.of(max_num_batched_tokens=8192))
    act = next(t for t in r.budget_terms if t.kind == "activation")
    assert act.name == "activation peak (encoder forward)" and not act.exact
    assert act.bytes == 2_214_592_512 - 134_217_728
    cache = next(t for t in r.budget_terms if t.kind == "encoder_cache")
    assert cache.bytes == 134_217_728 and not cache.exact  # max_pixels is the processor's, not the config's


def test_qwen36_27b_four_images_stay_below_the_text_forward() -> None:
    # the GB10 run (65,536 batched tokens): 65,536 // 16,384 = 4 images, 4 × 65,536 × 33,792 B = 8.25 GiB of tower
    # peak; the 65,536-token text forward (8.38 GiB) plus the 4 cached outputs (4 × 16,384 × 5,120 × 2 B) is higher
    r = capacity("Qwen/Qwen3.5-27B", engine="vllm@0.23", gpu="GB10", max_model_len=262144, kv_dtype="fp8",
                 settings=Settings.of(max_num_batched_tokens=65536, max_num_seqs=8, gpu_memory_utilization=0.7))
    e = r.extras.encoder_cache
    assert e.items_profiled == 4 and e.forward_peak_bytes_per_gpu == 4 * 65536 * 33_792
    assert e.bytes_per_gpu == 4 * 16384 * 5120 * 2
    act = next(t for t in r.budget_terms if t.kind == "activation")
    assert act.name.startswith("activation peak (forward") and "encoder forward over 4 × 65,536 patches" in act.source


def test_gemma3_siglip_tower_peak() -> None:
    # SigLIP 896 px / 14 = 4,096 patches per image; per patch: attention 7h = 8,064 < MLP 2h + 2 × 4,304 = 10,912,
    # × 2 B = 21,824; pixels fp32 and their bf16 cast 3 × 14 × 14 × (4 + 2) = 3,528 → 25,352 B; 32 images at once
    e = encoder("vllm")
    assert e.patches_per_item == 4096 and e.forward_peak_bytes_per_gpu == 32 * 4096 * 25_352 and e.assumed == ""


@pytest.mark.parametrize(("engine", "tower"), [("vllm@0.15", False), ("vllm@0.14", True)])
def test_text_only_mode_drops_the_tower_from_015(model: Any, engine: str, tower: bool) -> None:
    # every modality at 0: 0.15 on does not build the towers (SupportsMultiModal._mark_tower_model); 0.14 builds them
    plain = capacity(GEMMA, engine=engine, gpu="H100", max_model_len=32768)
    text = capacity(GEMMA, engine=engine, gpu="H100", max_model_len=32768, settings=Settings.of(limit_mm_per_prompt=0))
    vision = weight_bytes_by_kind(model(GEMMA)).get("vision", 0)
    assert vision > 0
    assert plain.weights_bytes_per_gpu - text.weights_bytes_per_gpu == (0 if tower else vision)


@pytest.mark.parametrize(("flags", "limit"), [
    pytest.param(["--language-model-only"], 0, id="language-model-only"),
    pytest.param(["--limit-mm-per-prompt", '{"image": 0, "video": 0}'], 0, id="every-modality-0"),
    pytest.param(["--limit-mm-per-prompt", '{"image": 2}'], 2, id="two-images"),
    pytest.param(["--limit-mm-per-prompt", '{"video": 0}'], None, id="images-unlimited"),
])
def test_launch_flags_set_the_limit(flags: list[str], limit: int | None) -> None:
    launch = read_launch(read_command(["vllm", "serve", "Qwen/Qwen3.5-9B", *flags], "vllm@0.20"))
    assert launch.part("settings").get("limit_mm_per_prompt") == limit
    assert not launch.not_modelled


@pytest.mark.parametrize(("model_id", "tower"), [
    pytest.param("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4_vision_model", id="llama-4"),
    pytest.param("mistralai/Voxtral-Mini-3B-2507", "voxtral_encoder", id="voxtral"),
])
def test_an_unmodelled_tower_is_said(model_id: str, tower: str) -> None:
    r = capacity(model_id, engine="vllm", gpu="H200", max_model_len=8192)
    assert any(f"with the {tower} tower; kvplan does not model" in n for n in r.notes)
    assert r.extras.encoder_cache is None


# Modules only a model with a vision tower, a checkpoint's own headers or kvplan's formula needs (issue 33: start-up)
UNTABLED = {"kvplan.planning.extras.towers", "kvplan.planning.weights.vision", "kvplan.planning.weights.checkpoint",
            "kvplan.planning.weights.parts", "kvplan.planning.weights.derived"}


def _capacity_modules(model: str) -> tuple[bool, set[str]]:
    """(whether the answer has an encoder cache, the kvplan.planning modules imported), in a fresh process."""
    code = ("import sys\nfrom kvplan.planning.capacity import capacity\n"
            "found = capacity(sys.argv[1], gpu='H100', tp=4).extras.encoder_cache is not None\n"
            "print(found, *(m for m in sys.modules if m.startswith('kvplan.planning')))")
    out = subprocess.run([sys.executable, "-c", code, model], check=True, capture_output=True, text=True).stdout.split()
    return out[0] == "True", set(out[1:])


def test_a_text_model_imports_no_vision_tower_tables() -> None:
    encoder, loaded = _capacity_modules("meta-llama/Llama-3.1-70B")
    assert not encoder and not loaded & UNTABLED


def test_a_vision_model_still_sizes_its_tower() -> None:
    encoder, loaded = _capacity_modules("google/gemma-3-27b-it")
    assert encoder and "kvplan.planning.extras.towers" in loaded
