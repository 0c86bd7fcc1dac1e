"""FP4 and FP8 weights as vLLM loads them, per format × compute capability × release: DeepSeek-V4's fp4 experts
(expert_dtype), the MXFP4 MoE backend each release picks per GPU and what its layout keeps, the FP8 MoE block
refinement of 0.29 on, ModelOpt MIXED_PRECISION checkpoints.

Real figures: "Model loading took" lines of the public start-up logs in tests/data/logs (named per test); hand
derivations in the comments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvplan.config.hf import normalize
from kvplan.engines import Request
from kvplan.engines.base import Device
from kvplan.engines.settings import Settings
from kvplan.engines.vllm.moe_backends import mxfp4_pick
from kvplan.engines.vllm.rows_late import RELEASES
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity
from kvplan.planning.quant_checks import fp8_block_refusal, moe_refined_scale_bytes
from kvplan.planning.weights import mtp_bytes_per_gpu, weight_bytes_by_kind, weight_bytes_per_gpu, weight_format
from kvplan.planning.weights.loaded import rotary_bytes
from kvplan.planning.weights.mxfp4_layouts import layout_bytes

GIB = 2**30
LOADED = ("weights", "weights_extra")  # what vLLM's "Model loading took" measures (kvplan.reconcile.estimate)


def _loaded_bytes(result: Any) -> int:
    return sum(t.bytes for t in result.budget_terms if t.kind in LOADED)


# --------------------------------------------------------------------------------------------- DeepSeek-V4 fp4 experts


def test_deepseek_v4_experts_are_mxfp4(model: Any) -> None:
    # DeepSeek-V4-Flash: expert_dtype fp4 -> MXFP4 routed experts. Per expert on one of 2 GPUs: gate_up 2 × 2,048 / 2
    # = 2,048 rows × 4,096: 4,194,304 B of E2M1 + 2,048 × 128 E8M0 scales = 262,144; down 4,096 × 1,024: 2,097,152
    # + 4,096 × 32 = 131,072 -> 6,684,672 B × 256 experts × 43 layers = 73,584,869,376 B (68.53 GiB; 129.03 as fp8)
    m = model("deepseek-ai/DeepSeek-V4-Flash")
    assert weight_format(m).name == "fp8 (128x128 blocks), mxfp4 experts"
    assert weight_bytes_by_kind(m, tp=2)["moe_experts"] == 6_684_672 * 256 * 43 == 73_584_869_376
    # the shared experts and the attention stay FP8 blocks
    assert not weight_format(m).for_module("model.layers.5.mlp.shared_experts.gate_proj").name.startswith("mxfp4")


def test_deepseek_v4_expert_dtype_fp8_nvfp4_and_bad(model: Any) -> None:
    raw = model("deepseek-ai/DeepSeek-V4-Flash").raw
    fp8 = normalize({**raw, "expert_dtype": "fp8"}, model_id="x", source="x.json")
    assert weight_format(fp8).name == "fp8 (128x128 blocks)"
    nvfp4 = normalize({**raw, "quantization_config": {**raw["quantization_config"], "moe_quant_algo": "NVFP4"}},
                      model_id="x", source="x.json")
    assert weight_format(nvfp4).for_module("model.layers.5.mlp.experts.down_proj").block == (1, 16)
    bad = normalize({**raw, "expert_dtype": "int2"}, model_id="x", source="x.json")
    with pytest.raises(InputError, match=re.escape("expert_dtype 'int2' is not one vLLM reads (fp4, fp8)")):
        weight_format(bad)


def test_deepseek_v4_rotary_caches() -> None:
    # two fp32 caches (rope_theta, compress_rope_theta) of 65,536 × 16 positions × qk_rope_head_dim 64 × 4 B
    from kvplan.config import load_model

    assert rotary_bytes(load_model("deepseek-ai/DeepSeek-V4-Flash")) == 2 * 1_048_576 * 64 * 4 == 536_870_912


DSV4_LOG = {"gpu": "RTX PRO 6000", "tp": 2, "kv_dtype": "fp8", "max_model_len": 1_048_576,
            "gpu_memory_utilization": 0.95, "max_num_seqs": 64, "max_num_batched_tokens": 4096}


def test_deepseek_v4_flash_rtx_pro_6000_against_its_log() -> None:
    # tests/data/logs/vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000: vLLM 0.25.0, TP 2 on two RTX PRO 6000
    # (sm120), fp8 KV, 1M, MTP x2,
    # "DeepSeek V4 expert_dtype resolved to 'fp4'", "Using 'DEEPGEMM_MXFP4' Mxfp4 MoE backend", "Model loading took
    # 75.64 GiB" after "Loading drafter model..." (the MTP layer; embedding and lm_head shared with the target)
    r = capacity("deepseek-ai/DeepSeek-V4-Flash", engine="vllm@0.25", **DSV4_LOG)
    assert r.settings.vllm.moe_backend == "deepgemm"
    terms = {t.name: t for t in r.budget_terms}
    assert not terms["MXFP4 deepgemm layout"].exact  # DeepGEMM packs its scales in C++: not read
    loaded = _loaded_bytes(r) + mtp_bytes_per_gpu(r.model, tp=2)
    assert abs(loaded / GIB - 75.64) / 75.64 < 0.01  # 73.41 + 0.50 rotary + 1.72 MTP = 75.63
    assert r.refusal is None and r.plan.requests_at_max_len >= 1


# --------------------------------------------------------------------------------------------- MXFP4 backend per GPU


def _pick(release: str, gpu_cc: tuple[int, int] | None, name: str, model: Any, backend: str | None = None) -> Any:
    device = Device(name="x", memory_bytes=80 * GIB, compute_capability=gpu_cc)
    req = Request.of(model(name), settings=Settings.of(moe_backend=backend), device=device)
    return mxfp4_pick(RELEASES[release], req)


@pytest.mark.parametrize(("release", "cc", "backend", "exact"), [
    pytest.param("0.30", (8, 0), "marlin", True, id="a100-marlin"),
    pytest.param("0.30", (9, 0), "triton", True, id="h100-triton"),
    pytest.param("0.30", (12, 1), "marlin", True, id="gb10-marlin"),  # triton_kernels stop below sm110
    pytest.param("0.30", (10, 0), "flashinfer_trtllm", False, id="b200-flashinfer"),
    pytest.param("0.14", (10, 3), "triton", True, id="b300-0.14-sm100-only"),  # 10.0 exactly before 0.15
    pytest.param("0.11", (9, 0), "marlin", False, id="h100-0.11-no-triton-kernels"),
    pytest.param("0.30", None, "triton", False, id="no-capability-hopper-assumed"),
    pytest.param("0.30", (9, 4), "triton", False, id="mi300x-rocm-not-modelled"),
])
def test_gpt_oss_backend_by_capability(model: Any, release: str, cc: Any, backend: str, exact: bool) -> None:
    pick = _pick(release, cc, "openai/gpt-oss-20b", model)
    assert (pick.backend, not pick.assumed) == (backend, exact)


@pytest.mark.parametrize(("release", "cc", "backend"), [
    pytest.param("0.25", (12, 0), "deepgemm", id="rtx-pro-6000-0.25"),
    pytest.param("0.23", (12, 0), "marlin", id="rtx-pro-6000-0.23-no-deepgemm-sm12x"),
    pytest.param("0.25", (9, 0), "marlin", id="h100-marlin"),
    pytest.param("0.25", (10, 0), "flashinfer_trtllm", id="b200-trtllm-mxfp8"),
])
def test_deepseek_v4_backend_by_capability(model: Any, release: str, cc: Any, backend: str) -> None:
    assert _pick(release, cc, "deepseek-ai/DeepSeek-V4-Flash", model).backend == backend


@pytest.mark.parametrize(("release", "keeps"), [("0.11", True), ("0.24", True), ("0.25", False)])
def test_triton_layout_keeps_the_original_scales_until_0_25(model: Any, release: str, keeps: bool) -> None:
    # 0.10.1.1 quantization/mxfp4.py:387-420 and 0.12 :783-784 delete only the weights; 0.25
    # fused_moe/oracle/mxfp4.py:1150-1156 deletes the scales too
    assert _pick(release, (9, 0), "openai/gpt-oss-20b", model, backend="triton").keeps_scales is keeps


def test_moe_backend_given_wins(model: Any) -> None:
    pick = _pick("0.30", (9, 0), "openai/gpt-oss-20b", model, backend="marlin")
    assert (pick.backend, pick.source, pick.assumed) == ("marlin", "--moe-backend", "")


def test_marlin_layout_of_gpt_oss_20b(model: Any) -> None:
    # I = h = 2,880 on one GPU; Marlin pads I to 2,944 and h to 3,072. Per expert: E2M1 3 × 2,944 × 3,072 / 2 =
    # 13,565,952, scales 2 × 2,944 × 96 + 3,072 × 92 = 847,872, bf16 biases (2 × 2,944 + 3,072) × 2 = 17,920, against
    # 12,441,600 + 777,600 + 17,280 as stored: +1,195,264 B × 32 experts × 24 layers = 917,962,752
    assert layout_bytes(model("openai/gpt-oss-20b"), "marlin", 1, 24) == 1_195_264 * 32 * 24 == 917_962_752


def test_flashinfer_trtllm_layout_of_gpt_oss_20b(model: Any) -> None:
    # TP 2: I = 1,440 -> 1,536 (×256), h = 2,880 -> 3,072. Per expert: E2M1 3 × 1,536 × 3,072 / 2 = 7,077,888;
    # scales interleaved: gate_up 3,072 rows × 96 columns (already ×128, ×4) + down 3,072 × 48 = 442,368; fp32
    # biases (3,072 + 3,072) × 4 = 24,576; stored: 3 × 1,440 × 2,880 / 2 = 6,220,800 + 2,880 × 90 + 2,880 × 45 =
    # 388,800 + bf16 biases (2,880 + 2,880) × 2 = 11,520 -> +923,712 B × 32 × 24 = 709,410,816
    assert layout_bytes(model("openai/gpt-oss-20b"), "flashinfer_trtllm", 2, 24) == 923_712 * 32 * 24 == 709_410_816


def test_gpt_oss_20b_gb10_against_its_log() -> None:
    # tests/data/logs/vllm-v0300-gpt-oss-20b-gb10-util055: "GB10, vLLM 0.30", gpt-oss-20b at TP 1, "Model loading
    # took 13.8 GiB".
    # vLLM 0.30 on sm121: no TRT-LLM MoE (sm10x only), triton_kernels stop below sm110, FlashInfer CUTLASS takes
    # MXFP4 x bf16 on sm90 only -> Marlin. 12.82 checkpoint + 0.03 rotary + 0.85 Marlin = 13.70 GiB (-0.7%: the
    # remaining 0.1 GiB is not found in vLLM's code)
    r = capacity("openai/gpt-oss-20b", engine="vllm@0.30", gpu="DGX-Spark")
    assert r.settings.vllm.moe_backend == "marlin"
    assert abs(_loaded_bytes(r) / GIB - 13.8) / 13.8 < 0.01


def test_gpt_oss_120b_marlin_logs_across_releases() -> None:
    # tests/data/logs: vLLM 0.10.1.1 on four A100 80GB (sm80: Marlin), "Model loading took 17.2217 GiB" per rank;
    # vLLM 0.10.1 on one H100 without triton_kernels (Marlin), 65.9651 GiB
    a100 = capacity("openai/gpt-oss-120b", engine="vllm@0.10", gpu="A100-80G", tp=4, max_model_len=16384)
    h100 = capacity("openai/gpt-oss-120b", engine="vllm@0.10", gpu="H100")
    assert abs(_loaded_bytes(a100) / GIB - 17.2217) / 17.2217 < 0.001
    assert abs(_loaded_bytes(h100) / GIB - 65.9651) / 65.9651 < 0.001
    assert {t.name: t.exact for t in a100.budget_terms}["MXFP4 marlin layout"]  # sm80: no assumption
    assert not {t.name: t.exact for t in h100.budget_terms}["MXFP4 marlin layout"]  # triton_kernels assumed absent


# --------------------------------------------------------------------------------------------- FP8 MoE refinement


def test_minimax_m27_fp8_moe_blocks_refined_from_0_29(model: Any) -> None:
    # MiniMax-M2.7: FP8 [128, 128] blocks, moe_intermediate 1,536, hidden 3,072; at TP 8 each rank holds 192 columns.
    # 0.28 refuses; 0.29 on refine to gcd(128, 128, 192, 3,072) = 64. Refined fp32 scales per expert: gate_up 384 ×
    # 3,072 -> 6 × 48 = 288 blocks (72 at 128), down 3,072 × 192 -> 48 × 3 = 144 (48): +312 × 4 B = 1,248 B ×
    # 256 experts × 62 layers = 19,808,256 B per GPU
    m = model("MiniMaxAI/MiniMax-M2.7")
    message = "The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128."
    assert fp8_block_refusal(m, 8, RELEASES["0.28"].fp8_merged_relaxed, expert_tp=8) == message
    assert fp8_block_refusal(m, 8, RELEASES["0.29"].fp8_merged_relaxed, expert_tp=8, moe_refine=RELEASES["0.29"].fp8_moe_refine) is None
    assert not RELEASES["0.28"].fp8_moe_refine
    assert moe_refined_scale_bytes(m, 8) == (64, 1_248 * 256 * 62) == (64, 19_808_256)
    r = capacity("MiniMaxAI/MiniMax-M2.7", engine="vllm@0.33", gpu="H200", tp=8)
    assert {t.name: t.bytes for t in r.budget_terms}["FP8 MoE scales refined to 64x64"] == 19_808_256
    with pytest.raises(InputError, match=re.escape(message)):
        capacity("MiniMaxAI/MiniMax-M2.7", engine="vllm@0.28", gpu="H200", tp=8)


def test_no_refinement_below_32(model: Any) -> None:
    # TP 48: 1,536 / 48 = 32 columns: gcd(128, 128, 32, 3,072) = 32 refines; TP 96: 16 < 32 -> refused
    m = model("MiniMaxAI/MiniMax-M2.7")
    assert fp8_block_refusal(m, 48, RELEASES["0.33"].fp8_merged_relaxed, expert_tp=48, moe_refine=True) is None
    assert fp8_block_refusal(m, 96, RELEASES["0.33"].fp8_merged_relaxed, expert_tp=96, moe_refine=True) is not None


# --------------------------------------------------------------------------------------------- ModelOpt MIXED_PRECISION


def _mixed(model: Any, nested: bool = False, algo: str = "NVFP4") -> Any:
    """A MIXED_PRECISION checkpoint to vary (the nested hf_quant_config form, an unknown algorithm, a key without a
    tensor): Qwen3.5-27B's config with quantized_layers in the form of nvidia/Qwen3.6-27B-NVFP4's (bundled, whose
    real file the tests above read), NVFP4 MLPs and lm_head, FP8 projections."""
    m = model("Qwen/Qwen3.5-27B")
    layers: dict[str, dict[str, Any]] = {"lm_head": {"quant_algo": "NVFP4", "group_size": 16}}
    for i, kind in enumerate(m.layer_kinds):
        prefix = f"model.language_model.layers.{i}."
        layers |= {f"{prefix}mlp.{p}": {"quant_algo": algo, "group_size": 16} for p in ("gate_proj", "up_proj", "down_proj")}
        projs = ("linear_attn.in_proj_qkv", "linear_attn.out_proj") if kind == "linear" else \
            ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
        layers |= {prefix + p: {"quant_algo": "FP8"} for p in projs}
    quant = {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8", "exclude_modules": ["mtp*"],
             "quantized_layers": layers}
    doc = {"quant_method": "modelopt", "quantization": quant} if nested else {"quant_method": "modelopt", **quant}
    raw = json.loads(Path(m.source).read_text())
    return normalize({**raw, "quantization_config": doc}, model_id="x", source="x.json")


QWEN36_NVFP4 = "nvidia/Qwen3.6-27B-NVFP4"  # bundled with its hf_quant_config.json (configs/SOURCES.md)


def test_modelopt_mixed_precision_per_module(model: Any) -> None:
    # the real hf_quant_config.json: 401 quantized_layers (FP8 attention and linear-attention projections,
    # W4A16_NVFP4 MLPs and lm_head), exclude_modules mtp*; every key names a tensor of the model
    from kvplan.planning.weights.counts import unmatched_modules

    m = model(QWEN36_NVFP4)
    fmt = weight_format(m)
    assert fmt.name == "mixed fp8+w4a16_nvfp4 (modelopt)" and unmatched_modules(m) == ()
    q = "model.language_model.layers.3.self_attn.q_proj"
    assert (fmt.for_module(q).linear_bits, fmt.for_module(q).scheme) == (8, "tensor")
    assert fmt.for_module("model.language_model.layers.3.mlp.down_proj").block == (1, 16)
    # a module the list does not name stays in the model dtype (the linear attention's in_proj_b here)
    assert not fmt.for_module("model.language_model.layers.0.linear_attn.in_proj_b").is_quantized("x")
    assert fmt.for_module("mtp.layers.0.mlp.down_proj").modules == ()  # excluded


def test_modelopt_mixed_precision_bytes(model: Any) -> None:
    # layer 3 (full attention): q_proj 12,288 × 5,120 FP8 + fp32 weight_scale and input_scale = 62,914,568; k, v
    # 1,024 × 5,120 -> 5,242,888 each; o 5,120 × 6,144 -> 31,457,288. MLP W4A16_NVFP4 (no input scale): gate/up
    # 17,408 × 5,120 -> 44,564,480 + 17,408 × 320 e4m3 scales 5,570,560 + weight_scale_2 4 = 50,135,044 each; down
    # 5,120 × 17,408 -> 44,564,480 + 5,120 × 1,088 = 5,570,560 + 4 = 50,135,044
    from kvplan.planning.weights.counts import weight_parts
    from kvplan.planning.weights.tensors import Split, part_bytes

    m = model(QWEN36_NVFP4)
    split = Split(weight_format(m), None, 1, m.num_attention_heads, m.num_kv_heads)
    layer = weight_parts(m).layers[3]
    attention = sum(part_bytes(p, split) for p in layer if p.is_linear and p.category == "attention")
    assert attention == 62_914_568 + 2 * 5_242_888 + 31_457_288
    assert sum(part_bytes(p, split) for p in layer if p.category == "mlp_dense") == 3 * 50_135_044
    # lm_head W4A16_NVFP4 (a ParallelLMHead vLLM quantizes when listed): 248,320 rows (248,320 = 3,880 × 64, no
    # vocab padding) × 5,120 -> 635,699,200 + 248,320 × 320 = 79,462,400 + 4
    assert weight_bytes_by_kind(m)["lm_head"] == 635_699_200 + 79_462_400 + 4
    assert weight_bytes_per_gpu(_mixed(model, nested=True)) == weight_bytes_per_gpu(_mixed(model))


def test_qwen36_27b_nvfp4_gb10_against_its_log() -> None:
    # tests/data/logs/vllm-v0231dev-qwen36-27b-nvfp4-fp8kv-gb10-util07: vLLM 0.23.1rc1 on a GB10, "Model loading
    # took 19.78 GiB"; kvplan: 19.62 GiB of tensors + the rotary cache = 19.66 (-0.6%)
    r = capacity(QWEN36_NVFP4, engine="vllm@0.23", gpu="GB10", kv_dtype="fp8", gpu_memory_utilization=0.7,
                 max_num_seqs=8, max_num_batched_tokens=65536)
    assert abs(_loaded_bytes(r) / GIB - 19.78) / 19.78 < 0.01
    assert {t.name: t.exact for t in r.budget_terms}["weights (checkpoint)"]


def test_modelopt_mixed_precision_unknown_algorithm(model: Any) -> None:
    with pytest.raises(InputError, match=re.escape("quantized_layers algorithm 'W2A2' is not one kvplan sizes")):
        weight_format(_mixed(model, algo="W2A2"))


def test_modelopt_mixed_precision_key_without_a_tensor_is_an_estimate(model: Any) -> None:
    # a quantized_layers key that names no tensor of the model (an old fused name here) leaves those weights counted
    # in bf16: the weights term is then an estimate, and says which key
    from kvplan.planning.weights.counts import unmatched_modules, weights_source

    m = _mixed(model)
    assert unmatched_modules(m) == () and weights_source(m)[0]
    raw = dict(m.raw)
    layers = {**raw["quantization_config"]["quantized_layers"],
              "model.language_model.layers.0.linear_attn.in_proj_qkvz": {"quant_algo": "FP8"}}
    odd = normalize({**raw, "quantization_config": {**raw["quantization_config"], "quantized_layers": layers}},
                    model_id="x", source="x.json")
    assert unmatched_modules(odd) == ("model.language_model.layers.0.linear_attn.in_proj_qkvz",)
    exact, source = weights_source(odd)
    assert not exact and "name no tensor kvplan knows (e.g. model.language_model.layers.0.linear_attn.in_proj_qkvz)" in source
