"""Weights as an engine holds them: expert parallelism, the formats beyond the first catalog's (NVFP4,
bitsandbytes, compressed-tensors regex ignores), the MXFP4 kernel layouts, the per-stage cache.

Hand derivations in the comments; logged figures quoted from tests/data/vllm-memory-profiles.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvplan.config.hf import normalize
from kvplan.engines.base import BudgetRules
from kvplan.errors import InputError
from kvplan.planning.weights import (
    weight_bytes,
    weight_bytes_by_kind,
    weight_bytes_per_gpu,
    weight_bytes_per_stage,
    weight_format,
)
from kvplan.planning.weights.counts import _stages
from kvplan.planning.weights.formats import NVFP4, WeightFormat, tensor_bytes
from kvplan.planning.weights.loaded import loaded_extras
from kvplan.planning.weights.mxfp4_layouts import layout_bytes

GIB = 2**30
PROFILES = {p["id"]: p for p in json.loads((Path(__file__).resolve().parents[1] / "data" /
                                             "vllm-memory-profiles.json").read_text())}


# --------------------------------------------------------------------------------------------- expert parallelism


def test_ep_splits_experts_whole_over_ranks(model: Any) -> None:
    # Mixtral-8x7B: 32 layers × 8 experts of gate_up 28,672 × 4,096 + down 4,096 × 14,336 (bf16).
    m = model("mistralai/Mixtral-8x7B-v0.1")
    expert = 3 * 14336 * 4096
    # ep 3: ceil(8 / 3) = 3 whole experts on the most loaded rank (expert TP = tp // ep = 1)
    assert weight_bytes_by_kind(m, tp=4, ep=3)["moe_experts"] == 32 * 3 * expert * 2
    # ep 2 within tp 4 (SGLang's --ep-size below --tp): 4 experts, each cut by tp // ep = 2
    assert weight_bytes_by_kind(m, tp=4, ep=2)["moe_experts"] == 32 * 4 * expert // 2 * 2
    # ep 1 (TP only): all 8 experts, each cut to 14,336 / 4 = 3,584 rows / columns
    assert weight_bytes_by_kind(m, tp=4)["moe_experts"] == 32 * 8 * expert // 4 * 2
    # where experts divide evenly the two agree: ep 8 = 1 expert whole, tp 8 = 8 experts / 8
    assert weight_bytes_by_kind(m, tp=8, ep=8)["moe_experts"] == weight_bytes_by_kind(m, tp=8)["moe_experts"]
    # attention and the rest are cut by tp whatever ep is
    assert weight_bytes_by_kind(m, tp=8, ep=8)["attention"] == weight_bytes_by_kind(m, tp=8)["attention"]


def test_bad_ep(model: Any) -> None:
    with pytest.raises(InputError, match="ep must be a positive integer"):
        weight_bytes_per_gpu(model("mistralai/Mixtral-8x7B-v0.1"), tp=2, ep=0)


# --------------------------------------------------------------------------------------------- formats


def test_nvfp4_tensor_bytes() -> None:
    # 1536 × 7168: e2m1 values 5,505,024 B + one e4m3 byte per 16 inputs (1536 × 448 = 688,128) + weight_scale_2
    # and input_scale (2 × fp32) = 6,193,160
    fmt = WeightFormat(name="nvfp4", base_bits=16, **NVFP4)  # type: ignore[arg-type]
    assert tensor_bytes((1536, 7168), 1, fmt, quantized=True) == 6_193_160


def test_modelopt_nvfp4_checkpoint(model: Any) -> None:
    # Gemma-4-31B-IT-NVFP4: quant_method modelopt, quant_algo NVFP4; its ignore list keeps every self_attn, the
    # vision tower and lm_head in bf16
    m = model("nvidia/Gemma-4-31B-IT-NVFP4")
    fmt = weight_format(m)
    assert fmt.name == "nvfp4 (modelopt)" and fmt.block == (1, 16) and fmt.scale_bits == 8
    assert not fmt.is_quantized("model.language_model.layers.7.self_attn.q_proj")
    assert fmt.is_quantized("model.language_model.layers.7.mlp.down_proj")
    assert not fmt.is_quantized("model.vision_tower.encoder.layers.0.mlp.fc1")
    assert 0.25 * weight_bytes(m, "bf16") < weight_bytes(m) < 0.6 * weight_bytes(m, "bf16")


def test_modelopt_fp8_and_unknown_algo(model: Any) -> None:
    m = model("meta-llama/Llama-3.1-8B")
    fp8 = normalize({**m.raw, "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8"}},
                    model_id="x", source="x.json")
    # 1 B per linear weight + fp32 weight_scale + fp32 input_scale per tensor (224 tensors: 32 layers × 7)
    assert weight_bytes(fp8) == 6_979_321_856 + 224 * 8 + 2_101_878_784
    odd = normalize({**m.raw, "quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_MAGIC"}},
                    model_id="x", source="x.json")
    with pytest.raises(InputError, match=re.escape("quant_algo 'W4A8_MAGIC' is not supported")):
        weight_bytes(odd)


def test_modelopt_sidecar_beside_config(tmp_path: Path) -> None:
    # NVIDIA's DeepSeek-V3.1-NVFP4 keeps its quantization in hf_quant_config.json (ModelOpt <= 0.29), which vLLM
    # reads when config.json has no quantization_config (0.33 transformers_utils/config.py:951-962). A folder with
    # the sidecar gets NVFP4 weights; the bundled config (no sidecar) says why it counts bf16, and weights_dtype
    # nvfp4 gives the same count as the sidecar (its only exclusion, lm_head, is never quantized by the override).
    from kvplan.config import load_model

    bundled = load_model("nvidia/DeepSeek-V3.1-NVFP4")
    (tmp_path / "config.json").write_bytes(Path(bundled.source).read_bytes())
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.29.0"},
         "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                          "exclude_modules": ["lm_head"]}}))
    folder = load_model(str(tmp_path))
    assert weight_format(folder).name == "nvfp4 (modelopt)"
    assert any("no quantization_config and no hf_quant_config.json" in note for note in bundled.notes)
    assert not any("hf_quant_config.json" in note for note in folder.notes)
    assert weight_format(bundled).name == "bf16"
    assert weight_bytes(folder) == weight_bytes(bundled, "nvfp4") < 0.3 * weight_bytes(bundled)


@pytest.mark.parametrize(("quant", "expected"), [
    # LLM.int8: 1 B per weight + one fp32 SCB per output row (32 × 43,008 rows × 4 B = 5,505,024)
    pytest.param({"load_in_8bit": True}, 6_979_321_856 + 5_505_024, id="int8"),
    # nf4: half a byte + one fp32 absmax per 64 values (1/16 B per weight)
    pytest.param({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, 6_979_321_856 // 2 + 6_979_321_856 // 16,
                 id="nf4"),
    # double quantization: the absmax in one byte
    pytest.param({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True},
                 6_979_321_856 // 2 + 6_979_321_856 // 64, id="nf4-double-quant"),
])
def test_bitsandbytes(model: Any, quant: dict[str, Any], expected: int) -> None:
    m = model("meta-llama/Llama-3.1-8B")
    bnb = normalize({**m.raw, "quantization_config": {"quant_method": "bitsandbytes", **quant}},
                    model_id="x", source="x.json")
    assert weight_bytes(bnb) == expected + 2_101_878_784  # embedding, lm_head and norms stay bf16


def test_compressed_tensors_regex_ignores(model: Any) -> None:
    # Kimi-K3: `ignore: ["re:.*self_attn.*", "re:.*shared_experts.*", ...]` are regexes (vLLM re.match), and its
    # MXFP4 group scales are uint8 (scale_dtype torch.uint8): 4 bits + 1 byte per 32
    fmt = weight_format(model("moonshotai/Kimi-K3"))
    assert (fmt.linear_bits, fmt.block, fmt.scale_bits) == (4, (1, 32), 8)
    assert not fmt.is_quantized("model.layers.3.self_attn.q_proj")
    assert not fmt.is_quantized("model.layers.3.mlp.shared_experts.down_proj")
    assert fmt.is_quantized("model.layers.3.mlp.experts.gate_up_proj")


# --------------------------------------------------------------------------------------------- MXFP4 layouts

# gpt-oss-120b, one GPU: 36 MoE layers of 128 experts, I = h = 2,880. Block scales per layer as loaded:
# 128 × (5,760 × 90 + 2,880 × 90) = 99,532,800 B. triton_kernels on Hopper swizzles them into rows padded to 256:
# 128 × (5,888 × 90 + 3,072 × 90) = 103,219,200 B; the expert biases (128 × 8,640) become fp32: +2,211,840 B.
TRITON_0_33 = 36 * (103_219_200 - 99_532_800 + 2_211_840)  # the original scales deleted (0.25 on)
TRITON_0_14 = 36 * (103_219_200 + 2_211_840)  # the original scales kept beside the swizzled ones (0.14-0.24)


def test_triton_layout_hand_derived(model: Any) -> None:
    m = model("openai/gpt-oss-120b")
    assert layout_bytes(m, "triton", 1, 36) == TRITON_0_33 == 212_336_640
    assert layout_bytes(m, "triton", 1, 36, keeps_scales=True) == TRITON_0_14 == 3_795_517_440


def _loaded_gib(m: Any, backend: str, keeps: bool = False) -> float:
    rules = BudgetRules(profile=None, non_torch=(), mxfp4_backend=backend, mxfp4_keeps_scales=keeps)
    extras = sum(t.bytes for t in loaded_extras(m, rules, 1, 36))
    return (weight_bytes_per_gpu(m) + extras) / GIB


def test_gpt_oss_120b_marlin_and_triton_against_the_logs(model: Any) -> None:
    # vllm#23278 (~0.10.1, Marlin): "Model loading took 65.9651 GiB"; vllm#33155 (0.14.1, Triton): 64.38 GiB
    m = model("openai/gpt-oss-120b")
    marlin = PROFILES["vllm23278-gpt-oss-120b-h100"]["weights_gib"]
    triton = PROFILES["vllm33155-gpt-oss-120b-h100-v0141"]["weights_gib"]
    assert abs(_loaded_gib(m, "marlin") - marlin) / marlin < 0.001
    assert abs(_loaded_gib(m, "triton", keeps=True) - triton) / triton < 0.001
    assert layout_bytes(m, "marlin", 1, 36) > TRITON_0_14 > TRITON_0_33


# --------------------------------------------------------------------------------------------- the cache


def test_per_stage_bytes_are_computed_once_per_model_and_split(model: Any) -> None:
    m = model("deepseek-ai/DeepSeek-V3")
    _stages.cache_clear()
    for _ in range(3):
        weight_bytes_per_gpu(m, tp=8, pp=2)
        weight_bytes_by_kind(m, tp=8, pp=2)
    info = _stages.cache_info()
    assert (info.misses, info.hits) == (1, 5)


# --------------------------------------------------------------------------------------------- towers, no weights


def test_towers_on_the_first_stage_every_stage_or_none(model: Any) -> None:
    # Gemma-3-27B's SigLIP tower and projector: 423,060,336 params (test_weights.py), bf16
    m = model("google/gemma-3-27b-it")
    first = weight_bytes_per_stage(m, pp=2)
    every = weight_bytes_per_stage(m, pp=2, towers="every")  # vLLM's V1 runner builds them on every stage
    none = weight_bytes_per_stage(m, pp=2, towers="none")  # text only (limit_mm_per_prompt 0)
    assert (first[0] - none[0], first[1] - none[1]) == (2 * 423_060_336, 0)
    assert (every[0], every[1] - first[1]) == (first[0], 2 * 423_060_336)


def test_no_table_and_no_formula_says_what_to_pass(model: Any) -> None:
    raw = {k: v for k, v in model("meta-llama/Llama-3.1-8B").raw.items() if k != "vocab_size"} | {"model_type": "x"}
    with pytest.raises(InputError, match=re.escape("pass --kv-budget, or a folder with the checkpoint's "
                                                   "safetensors index (no tensor table matches this config)")):
        weight_bytes_per_gpu(normalize(raw, model_id="x", source="x.json"))
