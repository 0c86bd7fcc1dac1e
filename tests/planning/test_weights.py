"""Parameter counts and weight bytes against transformers (meta device), published totals and hand
derivations; TP/PP splitting; weight formats; errors.

transformers builds every in-library architecture on the ``meta`` device (no memory, no download,
never trust_remote_code): its parameter count is an independent reference for kvplan's, which is
read from the config alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from catalog import weights_ids

from kvplan.config.hf import normalize
from kvplan.config.resolve import bundled_index
from kvplan.errors import InputError, KvplanError
from kvplan.planning.weights import (
    param_count,
    weight_bytes,
    weight_bytes_by_kind,
    weight_bytes_per_gpu,
    weight_bytes_per_stage,
)
from kvplan.planning.weights.formats import WeightFormat, tensor_bytes, weight_format

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here downloads; make sure of it
GIB = 2**30

# ---------------------------------------------------------------------------------------------
# 1. Parameter counts vs transformers on the meta device

ROOT = Path(__file__).resolve().parents[2]
_LAYER_INDEX = re.compile(r"\.(?:layers|h)\.(\d+)\.")
_TOWERS = ("vision_tower", "multi_modal_projector", "visual", "vision_model", "audio_tower", "model.encoder.",
           "embed_vision")  # counted in total, not in the decoder layers


def weight_tool() -> Any:
    """tools/weight_tensors.py: the class a config builds (architectures[0], what vLLM loads; a remote-code
    model_type as the in-library class of the same architecture, ``IN_LIBRARY_AS``)."""
    spec = importlib.util.spec_from_file_location("weight_tensors_tool", ROOT / "tools" / "weight_tensors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hf_counts(model_id: str) -> tuple[int, Counter[int]]:
    """(every tensor a checkpoint stores, per decoder layer) of transformers' meta-device build."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tool = weight_tool()
    tool._quiet()
    built = tool.build(json.loads(bundled_index()[model_id].read_text()))
    assert not isinstance(built, str), built
    hf = built[0]
    total, per_layer = 0, Counter[int]()
    tensors = [(n, p.numel()) for n, p in hf.named_parameters()]
    # Persistent buffers are checkpoint tensors too (DeepSeek-V3 / Kimi-K2 / GLM-4.5's router
    # e_score_correction_bias; every engine loads them), but for the ones a model computes at load (MiniMax).
    for mod_name, module in hf.named_modules():
        tensors += [(f"{mod_name}.{k}", b.numel()) for k, b in module._buffers.items()
                    if b is not None and k not in module._non_persistent_buffers_set and k not in tool.COMPUTED_BUFFERS]
    for name, numel in tensors:
        total += numel
        if (match := _LAYER_INDEX.search(name)) and not any(v in name for v in _TOWERS):
            per_layer[int(match.group(1))] += numel
    return total, per_layer


@pytest.mark.parametrize("model_id", weights_ids())
def test_param_count_matches_transformers_on_meta(model, model_id: str) -> None:
    hf_total, hf_layers = _hf_counts(model_id)
    counted = param_count(model(model_id))
    # Exact: every tensor of the class its architectures name, towers included (Gemma-3's SigLIP tower and
    # projector, 423,060,336 params; Whisper's encoder). MTP modules (DeepSeek-V3/R1, GLM-4.5) are not built by
    # transformers and are not in `total` either.
    assert counted.total == hf_total
    assert tuple(layer.total for layer in counted.layers) == tuple(hf_layers[i] for i in range(len(counted.layers)))


def test_chatglm3_hand_derived(model) -> None:
    # ChatGLM3-6B. h=4096, 28 layers, 32 heads × 128, 2 KV groups, ffn 13696,
    # padded vocab 65024, qkv bias, RMSNorm, separate output layer. Per layer:
    #   query_key_value (4096 + 2·2·128 = 4608) × 4096 = 18,874,368   + bias 4,608
    #   dense 4096 × 4096 = 16,777,216
    #   dense_h_to_4h 2·13696 × 4096 = 112,197,632;  dense_4h_to_h 13696 × 4096 = 56,098,816
    #   2 RMSNorms 2 × 4096 = 8,192                        -> 203,960,832 per layer
    # 28 × 203,960,832 = 5,710,903,296; + embedding 65024 × 4096 = 266,338,304, + output layer the same,
    # + final norm 4,096 = 6,243,584,000 (transformers' Glm port agrees: the meta-device test above).
    counted = param_count(model("THUDM/chatglm3-6b"))
    assert {layer.total for layer in counted.layers} == {203_960_832}
    assert counted.embedding == counted.lm_head == 266_338_304
    assert counted.total == 6_243_584_000


@pytest.mark.parametrize("model_id", weights_ids())
def test_breakdown_adds_up(model, model_id: str) -> None:
    counted = param_count(model(model_id))
    kinds = (counted.embedding + counted.lm_head + counted.attention + counted.mlp_dense + counted.moe_experts
             + counted.moe_shared_experts + counted.router + counted.norms + counted.vision + counted.mixer
             + counted.audio)
    final_norm = counted.norms - sum(layer.norms for layer in counted.layers)
    assert kinds == counted.total
    assert sum(layer.total for layer in counted.layers) + counted.embedding + counted.lm_head + final_norm \
        + counted.vision + counted.audio == counted.total
    if model_id in FINAL_EXTRAS:
        assert final_norm == FINAL_EXTRAS[model_id]
    else:
        assert 0 < final_norm <= 2 * model(model_id).hidden_size


# Parameters outside the decoder layers that count as norms besides the final norm (transformers' meta-device
# tables): DeepSeek-V4's hyper-connection head, model.norm 4096 + hc_head.hc_fn 4 × 16384 + hc_base 4 + hc_scale 1.
FINAL_EXTRAS = {"deepseek-ai/DeepSeek-V4-Flash": 4096 + 4 * 16384 + 4 + 1}


def test_counts_follow_the_config_content_not_the_cache_key(model) -> None:
    # ModelConfig's equality ignores raw, so two configs that differ only in vocab_size compare equal;
    # the weight inventory must still tell them apart (128 more rows in embedding and lm_head).
    m = model("meta-llama/Llama-3.1-8B")
    bigger = normalize({**m.raw, "vocab_size": 128256 + 128}, model_id=m.model_id, source=m.source)
    assert bigger == m
    assert param_count(bigger).total - param_count(m).total == 2 * 128 * 4096


# ---------------------------------------------------------------------------------------------
# 2. Published totals


def test_published_llama_totals(model) -> None:
    # Meta publishes Llama-2-70B as 68.98B (2 decimals: ±0.005B) and Llama-3.1-405B as 405.9B
    # (1 decimal: ±0.05B); the tolerances are the rounding of the published figures.
    assert abs(param_count(model("meta-llama/Llama-2-70b-hf")).total / 1e9 - 68.98) <= 0.005
    assert abs(param_count(model("meta-llama/Llama-3.1-405B")).total / 1e9 - 405.9) <= 0.05


def test_published_deepseek_v3_total(model) -> None:
    # DeepSeek: "685B on Hugging Face = 671B main model + 14B MTP module". Whole billions, so the
    # main model is 671B ± 0.5B. The 685B is Hugging Face's safetensors count, which also counts the
    # fp32 block scales (one per 128×128 fp8 block, about 0.04B), and 14B is 685 − 671: the MTP
    # module (one MoE layer, eh_proj, norms, its own embedding and head copies: 13.46B) and the sum
    # are held to ±1B.
    counted = param_count(model("deepseek-ai/DeepSeek-V3"))
    assert abs(counted.total / 1e9 - 671) <= 0.5
    assert abs(counted.mtp / 1e9 - 14) <= 1.0
    assert abs(counted.total_with_mtp / 1e9 - 685) <= 1.0


@pytest.mark.parametrize(("model_id", "gib"), [("openai/gpt-oss-120b", 60.8), ("openai/gpt-oss-20b", 12.8)])
def test_published_gpt_oss_checkpoint_size(model, model_id: str, gib: float) -> None:
    # OpenAI's gpt-oss model card gives checkpoint sizes of 60.8 GiB and 12.8 GiB (MXFP4 experts,
    # everything in modules_to_not_convert in bf16). One decimal: ±0.05 GiB.
    assert abs(weight_bytes(model(model_id)) / GIB - gib) <= 0.05


def test_gpt_oss_20b_bytes_hand_derived(model) -> None:
    # Experts per layer: 32 × gate_up (5760 × 2880) and down (2880 × 2880), MXFP4: half a byte per
    # value + one 1-byte scale per 32 inputs (2880 / 32 = 90 per row):
    #   gate_up 5760·2880/2 + 5760·90 = 8,812,800;  down 2880·2880/2 + 2880·90 = 4,406,400
    #   32 × 13,219,200 = 423,014,400 bytes per layer; 24 layers = 10,152,345,600.
    # Everything else in bf16: 20,914,757,184 params − 24 × 32 × (16,588,800 + 8,294,400) expert
    # weights = 1,804,459,584 params = 3,608,919,168 bytes. Total 13,761,264,768.
    m = model("openai/gpt-oss-20b")
    assert param_count(m).total == 20_914_757_184
    assert weight_bytes(m) == 13_761_264_768


# ---------------------------------------------------------------------------------------------
# 3. TP / PP splitting, hand-checked

# Llama-3.1-8B, bf16: h 4096, 32 heads, 8 KV heads × 128, ffn 14336, vocab 128256 (= 64 × 2004, so
# vLLM's vocab padding adds nothing), untied. One layer: q 4096² = 16,777,216; k, v 1024 × 4096 =
# 4,194,304 each; o 16,777,216; gate/up/down 3 × 14336 × 4096 = 176,160,768; 2 norms 8,192
# -> 218,112,000. Embedding = lm_head = 128256 × 4096 = 525,336,576; final norm 4,096.
LLAMA8_LAYER = 218_112_000
LLAMA8_VOCAB = 525_336_576


def test_llama31_8b_unsplit(model) -> None:
    m = model("meta-llama/Llama-3.1-8B")
    total = 32 * LLAMA8_LAYER + 2 * LLAMA8_VOCAB + 4096
    assert param_count(m).total == total == 8_030_261_248
    assert weight_bytes(m) == weight_bytes_per_gpu(m) == 2 * total


def test_llama31_8b_tp2(model) -> None:
    # Everything halves except the 65 replicated norms (2 per layer + final): 65 × 4096 / 2 = 133,120.
    m = model("meta-llama/Llama-3.1-8B")
    per_rank = 8_030_261_248 // 2 + 65 * 4096 // 2
    assert weight_bytes_per_gpu(m, tp=2) == 2 * per_rank == 8_030_527_488


def test_llama31_8b_tp16_replicates_kv_projections(model) -> None:
    # tp 16 > 8 KV heads: each rank keeps 1 KV head (k, v 128 × 4096 = 524,288 each), 2 query heads
    # (q, o 256 × 4096 = 1,048,576 each), ffn 14336/16 = 896 (3 × 896 × 4096 = 11,010,048), norms 8,192
    # -> 14,163,968 per layer; vocab 128256/16 = 8016 rows × 4096 = 32,833,536 twice; final norm 4,096.
    m = model("meta-llama/Llama-3.1-8B")
    per_rank = 32 * (2 * 1_048_576 + 2 * 524_288 + 11_010_048 + 8_192) + 2 * 32_833_536 + 4096
    assert weight_bytes_per_gpu(m, tp=16) == 2 * per_rank == 1_037_836_288


def test_llama31_8b_pp3_stages(model) -> None:
    # pp_layer_counts(32, 3) = (11, 11, 10): the remainder goes to the stages before the last.
    m = model("meta-llama/Llama-3.1-8B")
    stages = (11 * LLAMA8_LAYER + LLAMA8_VOCAB, 11 * LLAMA8_LAYER, 10 * LLAMA8_LAYER + 4096 + LLAMA8_VOCAB)
    assert weight_bytes_per_stage(m, pp=3) == tuple(2 * s for s in stages)
    assert weight_bytes_per_gpu(m, pp=3) == 2 * stages[0]


def test_llama31_8b_tp2_by_kind(model) -> None:
    # Per rank at tp 2: embedding and lm_head 64128 rows × 4096 × 2 B = 525,336,576 each; 65 norms of
    # 4096 replicated = 532,480 B; attention 32 × (q 2048 + k 512 + v 512 + o) × 4096 × 2 B.
    m = model("meta-llama/Llama-3.1-8B")
    kinds = weight_bytes_by_kind(m, tp=2)
    assert kinds["embedding"] == kinds["lm_head"] == 525_336_576
    assert kinds["norms"] == 532_480
    assert kinds["attention"] == 32 * (2048 + 512 + 512 + 2048) * 4096 * 2
    assert kinds["mlp_dense"] == 32 * 3 * 7168 * 4096 * 2
    assert sum(kinds.values()) == weight_bytes_per_gpu(m, tp=2)


def test_by_kind_picks_the_heaviest_stage_and_names_mtp(model) -> None:
    m = model("deepseek-ai/DeepSeek-V3")
    stages = weight_bytes_per_stage(m, tp=8, pp=2, include_mtp=True)
    kinds = weight_bytes_by_kind(m, tp=8, pp=2, include_mtp=True)
    assert sum(kinds.values()) == max(stages) == stages[1]
    assert kinds["mtp"] > 0 and "embedding" not in kinds
    assert sum(weight_bytes_by_kind(m, tp=8, pp=2, stage=0).values()) == stages[0]
    with pytest.raises(InputError, match=re.escape("stage must be in 0..1")):
        weight_bytes_by_kind(m, pp=2, stage=2)


def test_tied_embedding_is_copied_to_the_last_stage(model) -> None:
    # Llama-3.2-1B ties lm_head to the embedding: one copy unsplit, one on each end stage with pp 2.
    m = model("meta-llama/Llama-3.2-1B")
    vocab_bytes = 2 * 128256 * 2048
    assert param_count(m).lm_head == 0
    assert sum(weight_bytes_per_stage(m, pp=2)) == weight_bytes(m) + vocab_bytes


# DeepSeek-V3 at tp 8 (bf16 to keep the arithmetic plain): h 7168, 128 heads, q_lora 1536,
# kv_lora 512, rope 64, nope 128, v 128. Per rank, one layer's attention:
#   replicated: q_a 1536 × 7168 = 11,010,048; q_a_layernorm 1,536; kv_a (512 + 64) × 7168 = 4,128,768;
#               kv_a_layernorm 512
#   split by 8: q_b (16 heads × 192) × 1536 = 4,718,592; kv_b (16 × 256) × 512 = 2,097,152;
#               o 7168 × (16 × 128) = 14,680,064
DSV3_ATTN = 11_010_048 + 1_536 + 4_128_768 + 512 + 4_718_592 + 2_097_152 + 14_680_064
DSV3_NORMS = 2 * 7168
# Dense layers 0-2: ffn 18432 / 8 = 2304 -> 3 × 2304 × 7168.
DSV3_DENSE = 3 * 2304 * 7168
# MoE layers 3-60: 256 experts, width 2048 / 8 = 256 per rank: gate_up 512 × 7168, down 7168 × 256;
# one shared expert 3 × 256 × 7168; replicated router 256 × 7168 + e_score_correction_bias 256.
DSV3_MOE = 256 * (512 * 7168 + 7168 * 256) + 3 * 256 * 7168 + 256 * 7168 + 256
# Vocab 129280 = 64 × 2020 -> 16160 rows per rank, embedding and lm_head; final norm 7168.
DSV3_VOCAB = 16160 * 7168
DSV3_SCORE_BIAS_FP32_EXTRA = 256 * 2  # bytes: 256 params at 4 B instead of 2 per MoE layer


def test_deepseek_v3_tp8_bf16(model) -> None:
    m = model("deepseek-ai/DeepSeek-V3")
    per_rank = (3 * (DSV3_ATTN + DSV3_DENSE + DSV3_NORMS) + 58 * (DSV3_ATTN + DSV3_MOE + DSV3_NORMS)
                + 2 * DSV3_VOCAB + 7168)
    # + the 256-element e_score_correction_bias of each MoE layer: kept in fp32 (4 B, not 2) by vLLM
    # (0.33 model_executor/models/deepseek_v2.py:328-329, torch.float32) and transformers (_keep_in_fp32_modules_strict)
    assert weight_bytes_per_gpu(m, tp=8, weights_dtype="bf16") == 2 * per_rank + 58 * DSV3_SCORE_BIAS_FP32_EXTRA


def test_deepseek_v3_tp8_pp2_heaviest_stage(model) -> None:
    # pp_layer_counts(61, 2) = (31, 30): stage 0 = layers 0-30 (3 dense) + embedding,
    # stage 1 = 30 MoE layers + final norm + lm_head. Two more MoE layers (about 1.4B params each per
    # rank) outweigh stage 0's three dense layers and embedding: the last stage is the heavier.
    m = model("deepseek-ai/DeepSeek-V3")
    stage0 = 3 * (DSV3_ATTN + DSV3_DENSE + DSV3_NORMS) + 28 * (DSV3_ATTN + DSV3_MOE + DSV3_NORMS) + DSV3_VOCAB
    stage1 = 30 * (DSV3_ATTN + DSV3_MOE + DSV3_NORMS) + 7168 + DSV3_VOCAB
    extra0, extra1 = 28 * DSV3_SCORE_BIAS_FP32_EXTRA, 30 * DSV3_SCORE_BIAS_FP32_EXTRA  # fp32 router biases
    assert weight_bytes_per_stage(m, tp=8, pp=2, weights_dtype="bf16") == (2 * stage0 + extra0, 2 * stage1 + extra1)
    assert stage1 > stage0
    assert weight_bytes_per_gpu(m, tp=8, pp=2, weights_dtype="bf16") == 2 * stage1 + extra1


def test_deepseek_v3_fp8_checkpoint(model) -> None:
    # The config's quantization_config (fp8, weight_block_size [128, 128]) applies by default:
    # roughly 1 byte per linear weight, so the main model is a little over 671e9 bytes minus the
    # bf16 share; the exact scale arithmetic is checked per tensor below.
    m = model("deepseek-ai/DeepSeek-V3")
    fmt = weight_format(m)
    assert (fmt.linear_bits, fmt.scheme, fmt.block, fmt.scale_bits) == (8, "block", (128, 128), 32)
    assert 0.5 * weight_bytes(m, "bf16") < weight_bytes(m) < 0.52 * weight_bytes(m, "bf16")
    assert weight_bytes(m, include_mtp=True) > weight_bytes(m)


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-70B", "Qwen/Qwen3-235B-A22B", "openai/gpt-oss-120b",
                                      "deepseek-ai/DeepSeek-V3"])
def test_pp_stages_sum_to_the_checkpoint(model, model_id: str) -> None:
    # Untied models with vocab sizes divisible by 64: PP moves layers, it adds or drops nothing.
    m = model(model_id)
    for pp in (1, 2, 3, 4, 7):
        assert sum(weight_bytes_per_stage(m, pp=pp)) == weight_bytes(m), pp


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-70B", "mistralai/Mixtral-8x7B-v0.1", "Qwen/Qwen3-32B",
                                      "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b"])
def test_tp_never_adds_per_gpu_weight(model, model_id: str) -> None:
    m = model(model_id)
    sizes = [weight_bytes_per_gpu(m, tp=tp) for tp in (1, 2, 4, 8)]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-1] * 8 >= sizes[0]  # replication only ever adds


# ---------------------------------------------------------------------------------------------
# 4. Weight formats: one tensor each, hand-derived


def _fmt(**kw: Any) -> WeightFormat:
    return WeightFormat(**{"name": "t", "base_bits": 16, "linear_bits": 16, **kw})


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        # DeepSeek q_a_proj (1536 × 7168) fp8, 128×128 blocks: 11,010,048 + 12 × 56 × 4 = 11,012,736.
        pytest.param(_fmt(linear_bits=8, scheme="block", block=(128, 128), scale_bits=32), 11_012_736, id="fp8-block"),
        # MXFP4: 11,010,048 / 2 + 1536 × 224 scales × 1 = 5,849,088.
        pytest.param(_fmt(linear_bits=4, scheme="group", block=(1, 32), scale_bits=8), 5_849_088, id="mxfp4"),
        # int4 g128 fp16 scale: 5,505,024 + 1536 × 56 × 2 = 5,677,056.
        pytest.param(_fmt(linear_bits=4, scheme="group", block=(1, 128), scale_bits=16), 5_677_056, id="int4-g128"),
        # GPTQ int4 g128: + a 4-bit zero point per group: 5,677,056 + 1536 × 56 / 2 = 5,720,064.
        pytest.param(_fmt(linear_bits=4, scheme="group", block=(1, 128), scale_bits=16, zero_bits=4), 5_720_064,
                     id="gptq-int4"),
        # int8 per channel: 11,010,048 + 1536 × 2 = 11,013,120.
        pytest.param(_fmt(linear_bits=8, scheme="channel", scale_bits=16), 11_013_120, id="int8-channel"),
        # fp8 per tensor: 11,010,048 + 4.
        pytest.param(_fmt(linear_bits=8, scheme="tensor", scale_bits=32), 11_010_052, id="fp8-tensor"),
        pytest.param(_fmt(), 22_020_096, id="bf16"),
    ],
)
def test_tensor_bytes(fmt: WeightFormat, expected: int) -> None:
    assert tensor_bytes((1536, 7168), 1, fmt, quantized=True) == expected


def test_unquantized_tensors_keep_the_model_dtype() -> None:
    fmt = _fmt(linear_bits=4, scheme="group", block=(1, 32), scale_bits=8)
    assert tensor_bytes((1536, 7168), 1, fmt, quantized=False) == 22_020_096
    assert tensor_bytes((7168,), 3, fmt, quantized=True) == 3 * 7168 * 2  # 1-D: never quantized


def test_gpt_oss_modules_to_not_convert(model) -> None:
    fmt = weight_format(model("openai/gpt-oss-20b"))
    assert fmt.name == "mxfp4"
    assert fmt.is_quantized("model.layers.7.mlp.experts.gate_up_proj")
    assert not fmt.is_quantized("model.layers.7.self_attn.q_proj")
    assert not fmt.is_quantized("lm_head")


# Llama-3.1-8B linear weights: 32 × (218,112,000 − 8,192 norm params) = 6,979,321,856; the other
# 1,050,939,392 params (embedding, lm_head, norms) stay bf16 under fp8/int8/int4 = 2,101,878,784 bytes.
# Per layer 7 matrices with 4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096 = 43,008 output rows,
# every input width a multiple of 128.
LLAMA8_LINEAR = 6_979_321_856
LLAMA8_REST_BF16 = 2_101_878_784


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        pytest.param("bf16", 2 * 8_030_261_248, id="bf16"),
        pytest.param("fp16", 2 * 8_030_261_248, id="fp16"),
        pytest.param("fp32", 4 * 8_030_261_248, id="fp32"),
        # 1 byte each + one fp32 scale per tensor (32 × 7 × 4 = 896)
        pytest.param("fp8", LLAMA8_LINEAR + 896 + LLAMA8_REST_BF16, id="fp8-per-tensor"),
        # 1 byte each + one fp16 scale per output row (32 × 43,008 × 2 = 2,752,512)
        pytest.param("int8", LLAMA8_LINEAR + 2_752_512 + LLAMA8_REST_BF16, id="int8-per-channel"),
        # half a byte each + one fp16 scale per 128 inputs (2/128 byte per weight)
        pytest.param("int4", LLAMA8_LINEAR // 2 + LLAMA8_LINEAR // 64 + LLAMA8_REST_BF16, id="int4-g128"),
    ],
)
def test_weights_dtype_override(model, dtype: str, expected: int) -> None:
    assert weight_bytes(model("meta-llama/Llama-3.1-8B"), dtype) == expected


def test_override_replaces_the_checkpoint_format(model) -> None:
    m = model("deepseek-ai/DeepSeek-V3")
    # every tensor in bf16 but the 58 MoE layers' 256-element router score biases, fp32 in vLLM (see above)
    assert weight_bytes(m, "bf16") == 2 * param_count(m).total + 58 * DSV3_SCORE_BIAS_FP32_EXTRA


# ---------------------------------------------------------------------------------------------
# 5. Errors


def test_unknown_weights_dtype(model) -> None:
    with pytest.raises(InputError, match=r"unknown weights dtype 'int3'.*bf16"):
        weight_bytes(model("meta-llama/Llama-3.1-8B"), "int3")


def test_unsupported_quant_method(model) -> None:
    m = model("meta-llama/Llama-3.1-8B")
    odd = normalize({**m.raw, "quantization_config": {"quant_method": "hqq"}},  # bitsandbytes is read since
                                     model_id="x", source="x.json")
    with pytest.raises(InputError, match=re.escape("'hqq' is not supported; pass weights_dtype")):
        weight_bytes(odd)
    assert weight_bytes(odd, "bf16") == weight_bytes(m)


def test_missing_vocab_is_a_config_message(model) -> None:
    # An unknown model_type: no config class to take vocab_size from (LlamaConfig's would be 32000).
    raw = {k: v for k, v in model("meta-llama/Llama-3.1-8B").raw.items() if k != "vocab_size"} | {"model_type": "x"}
    odd = normalize(raw, model_id="x", source="x.json")
    with pytest.raises(InputError, match=re.escape("x.json: config field vocab_size / padded_vocab_size is missing")):
        param_count(odd)


@pytest.mark.parametrize(("tp", "pp"), [(0, 1), (1, 0), (-2, 1)])
def test_bad_parallel_sizes(model, tp: int, pp: int) -> None:
    with pytest.raises(KvplanError):
        weight_bytes_per_gpu(model("meta-llama/Llama-3.1-8B"), tp=tp, pp=pp)


def test_pp_larger_than_layers(model) -> None:
    with pytest.raises(KvplanError, match="pp 40 is larger than the 32 layers"):
        weight_bytes_per_gpu(model("meta-llama/Llama-3.1-8B"), pp=40)


# ---------------------------------------------------------------------------------------------
# 6. Vision towers


def test_gemma3_vision_tower_hand_derived(model) -> None:
    # SigLIP, h 1152, ffn 4304, 27 layers, 896px / 14px patches = 4096 positions, no pooling head:
    #   patch conv 1152 × 3·14·14 + 1152 = 678,528; positions 4096 × 1152 = 4,718,592
    #   per layer: q/k/v/out 4 × (1152² + 1152) = 5,313,024; fc1 + fc2 2 × 4304 × 1152 + 4304 + 1152
    #   = 9,921,872; 2 LayerNorms 4,608 -> 15,239,504; × 27 = 411,466,608; post LayerNorm 2,304
    #   projector 1152 × 5376 + 1152 = 6,194,304              -> 423,060,336
    counted = param_count(model("google/gemma-3-27b-it"))
    assert counted.vision == 678_528 + 4_718_592 + 27 * 15_239_504 + 2_304 + 6_194_304 == 423_060_336
    assert counted.total == 27_009_346_304 + 423_060_336


def test_vision_tower_sits_on_the_first_stage(model) -> None:
    m = model("google/gemma-3-27b-it")
    text_only = normalize({k: v for k, v in m.raw.items() if k != "vision_config"}, model_id="t", source="t.json")
    with_vision, without = weight_bytes_per_stage(m, pp=2), weight_bytes_per_stage(text_only, pp=2)
    assert with_vision[0] - without[0] == 2 * 423_060_336
    assert with_vision[1] == without[1]


def test_unknown_vision_tower_is_noted_not_counted(model) -> None:
    m = model("google/gemma-3-27b-it")
    odd = normalize({**m.raw, "vision_config": {"model_type": "mystery_vit"}}, model_id="o", source="o.json")
    counted = param_count(odd)
    assert counted.vision == 0
    # no table has this config: kvplan's formula, which says so
    assert counted.notes == ("vision tower 'mystery_vit' not counted: kvplan does not know its layout",
                             "weights from kvplan's formula for this family (no tensor table matches the config)")
