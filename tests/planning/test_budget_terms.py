"""The budget's terms, each from the model's dimensions and the release's rules, with hand-derived sizes.

Rules: vLLM releases' own code (named per test); SGLang 0.5.2 server_args.py:452-498 and 0.5.23
arg_groups/memory_hook.py:47-343; sizes in bytes, GiB = 2**30.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from kvplan.config.model import ModelConfig
from kvplan.engines import Device, Request, Settings, get_engine
from kvplan.planning.capacity import capacity
from kvplan.planning.profile_run import dims, forward_peak
from kvplan.planning.weights.loaded import rotary_bytes
from kvplan.planning.weights.mxfp4_layouts import layout_bytes

GIB = 2**30


def terms(name: str | ModelConfig, engine: str = "vllm", **kw: Any) -> dict[str, Any]:
    r = capacity(name, engine=engine, gpu=kw.pop("gpu", "H100"), max_model_len=kw.pop("max_model_len", 8192), **kw)
    return {t.name: t for t in r.budget_terms}


@pytest.mark.parametrize(("name", "expected"), [
    # max_position_embeddings × head_dim × 2 B (llama3 rope type: no extension of the cache)
    pytest.param("meta-llama/Llama-3.1-8B", 131072 * 128 * 2, id="llama31-32MiB"),
    # YaRN: original 4,096 × factor 40 = 163,840 positions × qk_rope_head_dim 64 × 2 B = 20 MiB
    pytest.param("deepseek-ai/DeepSeek-V2-Lite", 163840 * 64 * 2, id="deepseek-v2-yarn-20MiB"),
    # gpt-oss builds its cache in fp32: 4,096 × 32 = 131,072 positions × 64 × 4 B = 32 MiB
    pytest.param("openai/gpt-oss-120b", 131072 * 64 * 4, id="gpt-oss-fp32-32MiB"),
])
def test_rotary_cache(model: Any, name: str, expected: int) -> None:
    assert rotary_bytes(model(name)) == expected


def test_marlin_padding_of_gpt_oss_120b(model: Any) -> None:
    # experts 2,880 × 2,880: Marlin pads I to 2,944 (×128) and h to 3,072 (×256); per expert at 4 bits + 1/32 B:
    # 3 × 2,944 × 3,072 → 13,565,952 + 847,872; 3 × 2,880² → 12,441,600 + 777,600; × 128 experts × 36 layers
    per_expert = (13_565_952 + 847_872) - (12_441_600 + 777_600)
    # + the expert biases padded in bf16: (2 × 64 + 192) × 2 B per expert
    biases = (2 * 64 + 192) * 2
    assert layout_bytes(model("openai/gpt-oss-120b"), "marlin", 1, 36) == (per_expert + biases) * 128 * 36 == 5_507_776_512


def test_marlin_padding_only_with_the_marlin_backend() -> None:
    assert "MXFP4 marlin layout" in terms("openai/gpt-oss-120b", "vllm@0.11")
    assert "MXFP4 marlin layout" not in terms("openai/gpt-oss-120b", "vllm@0.11", settings=Settings.of(moe_backend="triton"))


def test_sampler_peak_of_0_11_on_an_h100() -> None:
    # vllm serve on an H100: 8,192 tokens, 1,024 rows, sort path 38 B/logit; alive: full hidden 2 × 8,192 × 4,096,
    # the rows and a rand_like copy 2 × 2 × 1,024 × 4,096, logits 1,024 × 128,256 × 38
    t = terms("meta-llama/Llama-3.1-8B", "vllm@0.11")["activation peak (sampler)"]
    assert t.bytes == 67_108_864 + 16_777_216 + 4_990_697_472 == 5_074_583_552 and not t.exact


def test_flashinfer_sampler_is_smaller() -> None:
    # the same with FlashInfer (≈ 15 B/logit): 1,024 × 128,256 × 15 = 1,970,012,160 + 83,886,080
    t = terms("meta-llama/Llama-3.1-8B", "vllm@0.11", settings=Settings.of(sampler="flashinfer"))
    assert t["activation peak (sampler)"].bytes == 1_970_012_160 + 83_886_080


def test_v0_eager_forward_and_rows() -> None:
    # V0 with max_num_seqs 1: the forward over 8,192 tokens wins: 2 B × 8,192 × (3 × 4,096 + 3 × 14,336)
    t = terms("meta-llama/Llama-3.1-8B", "vllm@0.7", settings=Settings.of(max_num_seqs=1))
    assert t["activation peak (forward, dense MLP)"].bytes == 2 * 8192 * (3 * 4096 + 3 * 14336) == 905_969_664


def test_qwen_mlp_keeps_gate_up(model: Any) -> None:
    # Qwen3's MLP holds gate_up through down_proj: one more hidden-sized tensor than Llama's
    d = dims(model("Qwen/Qwen3-8B"))
    peak, part = forward_peak(d, 1000, 1, eager=True)
    assert part == "dense MLP" and peak == 2 * 1000 * (4 * 4096 + 3 * 12288)


def test_moe_forward_counts_fused_moe_workspaces(model: Any) -> None:
    # Qwen3-235B-A22B, tp 4, eager, 8,192 tokens: Ie/tp = 1,536/4 = 384, k = 8, E = 128, h = 4,096:
    # 2 × 8,192 × (3h + h) + 2 × 8,192 × 8 × (max(768, 4,096) + 384) + 8,192 × (128 × 2 + 12 × 8)
    d = dims(model("Qwen/Qwen3-235B-A22B"))
    peak, part = forward_peak(d, 8192, 4, eager=True)
    assert part == "MoE (fused_moe)"
    assert peak == 2 * 8192 * 4 * 4096 + 2 * 8192 * 8 * (4096 + 384) + 8192 * (128 * 2 + 12 * 8)


def test_0_33_persistent_buffers_and_graphs() -> None:
    # penalty state of 1,024 rows: 1,024 × 128,256 × 4 + 1,024 × ⌈128,256/32⌉ × 4 = 525,336,576 + 16,416,768
    t = terms("meta-llama/Llama-3.1-8B", "vllm@0.33")
    assert t["persistent sampler buffers"].bytes == 541_753_344 and t["persistent sampler buffers"].exact
    assert t["CUDA graphs"].bytes == 512 * 2**20 and not t["CUDA graphs"].exact
    assert "CUDA graphs" not in terms("meta-llama/Llama-3.1-8B", "vllm@0.33", settings=Settings.of(enforce_eager=True))
    assert "CUDA graphs" not in terms("meta-llama/Llama-3.1-8B", "vllm@0.11")  # captured after the KV cache


def test_non_torch_by_release() -> None:
    # 0.6.4 and 0.8 subtract absolute non-torch memory (context included); 0.9 on the growth after the snapshot;
    # NCCL: every communicator in the growth up to 0.10 (snapshot before distributed init), from 0.11 (snapshot
    # after it) only the TP group's torch communicator the profile's logits all-gather creates (0.11.0
    # v1/worker/gpu_worker.py:169, 182; 0.19.0 base_device_communicator.py:182-205), none from 0.26 (PyNccl:
    # cuda_communicator.py:341-375)
    assert "CUDA context + cuBLAS (non-torch, absolute)" in terms("meta-llama/Llama-3.1-8B", "vllm@0.8")
    assert "NCCL buffers (1 process group(s))" in terms("meta-llama/Llama-3.1-8B", "vllm@0.10", tp=2)
    assert not any(n.startswith("NCCL") for n in terms("meta-llama/Llama-3.1-8B", "vllm@0.11", tp=2))
    lazy = terms("meta-llama/Llama-3.1-8B", "vllm@0.19", tp=2)["TP communicator created in the profile run"]
    assert lazy.bytes == int(2.13 * GIB)  # an H100: the midpoint of the 2.06-2.21 GiB 0.19 logs show
    assert "TP communicator created in the profile run" not in terms("meta-llama/Llama-3.1-8B", "vllm@0.19", pp=2)
    assert not any("communicator" in n or n.startswith("NCCL") for n in terms("meta-llama/Llama-3.1-8B", "vllm@0.26",
                                                                                 tp=2))


def test_0_33_budget_is_ceil_of_usable_minus_the_terms() -> None:
    r = capacity("meta-llama/Llama-3.1-8B", gpu="H100", max_model_len=8192)
    assert r.gpu_memory_bytes is not None and r.overhead is not None and r.weights_bytes_per_gpu is not None
    total = sum(t.bytes for t in r.budget_terms)
    assert r.kv_budget_bytes_per_gpu == (math.ceil(r.gpu_memory_bytes * 0.92) - total,)
    assert total == r.weights_bytes_per_gpu + r.overhead.total_bytes


def test_0_11_budget_is_int_of_usable_at_0_9() -> None:
    r = capacity("meta-llama/Llama-3.1-8B", engine="vllm@0.11", gpu="H100", max_model_len=8192)
    assert r.gpu_memory_bytes is not None
    assert r.kv_budget_bytes_per_gpu == (int(r.gpu_memory_bytes * 0.9) - sum(t.bytes for t in r.budget_terms),)


def test_overrides_replace_estimates() -> None:
    t = terms("meta-llama/Llama-3.1-8B", "vllm@0.11", non_torch_bytes=GIB)
    assert t["non-torch (given)"].bytes == GIB and "non-torch growth after the snapshot" not in t
    given = terms("meta-llama/Llama-3.1-8B", "vllm@0.11", overhead_bytes=3 * GIB)
    assert set(given) == {"weights (checkpoint)", "overhead (given)"}


def _fraction(engine: str, device: Device, tp: int = 1, name: str = "meta-llama/Llama-3.1-8B") -> float | None:
    m = __import__("kvplan").load_model(name)
    return get_engine(engine).resolve(Request.of(m, tp=tp, max_model_len=4096, device=device)).settings.sglang.mem_fraction_static


H100 = Device(name="H100-SXM", memory_bytes=85_018_542_080, smi_memory_mib=81559)
A100_40G = Device(name="A100-40G", memory_bytes=42_474_274_816, smi_memory_mib=40960)


@pytest.mark.parametrize(("engine", "device", "tp", "fraction"), [
    # 0.5.23, H100 (nvidia-smi 81,559 MiB): chunked 8,192, decode max_bs 256 (tp < 4) or 512, 58 prefill graph
    # sizes ≤ 8,192: 512 + 1.5 × 8,192 + 1,024 × tp/8 + 2 × max_bs + 8 × 58 -> tp 1: 13,904; tp 8: 15,312 MiB
    pytest.param("sglang@0.5.23", H100, 1, round((81559 - 13904) / 81559, 3), id="0.5.23-h100-tp1-0.830"),
    pytest.param("sglang@0.5.23", H100, 2, round((81559 - 14032) / 81559, 3), id="0.5.23-h100-tp2-0.828"),
    pytest.param("sglang@0.5.23", H100, 8, round((81559 - 15312) / 81559, 3), id="0.5.23-h100-tp8-0.812"),
    # A100-40GB tp 1: chunked 4,096, max_bs 32, 50 prefill sizes ≤ 4,096: 512 + 6,144 + 128 + 64 + 400 = 7,248
    pytest.param("sglang@0.5.23", A100_40G, 1, round((40960 - 7248) / 40960, 3), id="0.5.23-a100-40g-0.823"),
    # 0.5.2: H100 tier (9.5 + tp·pp/2) GiB: tp 1 10,240 MiB -> 0.874; tp 8 13,824 MiB -> 0.831
    pytest.param("sglang@0.5.2", H100, 1, round((81559 - 10240) / 81559, 3), id="0.5.2-h100-tp1-0.874"),
    pytest.param("sglang@0.5.2", H100, 8, round((81559 - 13824) / 81559, 3), id="0.5.2-h100-tp8-0.831"),
    pytest.param("sglang@0.4", H100, 8, 0.81, id="0.4-table"),
])
def test_sglang_default_mem_fraction_static(engine: str, device: Device, tp: int, fraction: float) -> None:
    assert _fraction(engine, device, tp) == fraction


def test_sglang_values_named_above() -> None:
    # the four 0.5.23 H100 fractions as budget-model §5.1 lists them from nvidia-smi's 81,559 MiB
    assert [_fraction("sglang", H100, tp) for tp in (1, 2, 4, 8)] == [0.83, 0.828, 0.819, 0.812]


def test_sglang_mla_reserves_1536_mib_for_prefill_graphs() -> None:
    # DeepSeek-V2-Lite (MLA) tp 1 on an H100: 512 + 12,288 + 128 + 512 + 1,536 = 14,976 MiB
    assert _fraction("sglang", H100, 1, "deepseek-ai/DeepSeek-V2-Lite") == round((81559 - 14976) / 81559, 3)


def test_sglang_budget_scales_the_context_by_the_fraction() -> None:
    # KV = int((M − context) × f) − weights: the context lowers free memory at init, which f multiplies
    r = capacity("meta-llama/Llama-3.1-8B", engine="sglang", gpu="H100", max_model_len=8192)
    t = {x.name: x.bytes for x in r.budget_terms}
    assert r.gpu_memory_bytes is not None
    weights = t["weights (checkpoint)"] + t["rotary cos/sin cache"]
    assert r.kv_budget_bytes_per_gpu == (int((r.gpu_memory_bytes - t["CUDA context"]) * 0.83) - weights,)


def test_fp8_dynamic_checkpoint_keeps_embeddings_and_lm_head_in_bf16(model: Any) -> None:
    # RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic (Llama-3.1-70B's dimensions; llm-compressor FP8, per-channel fp32
    # scales, lm_head ignored) logged "Model loading took 67.72 GiB" at tp 1 (shared engine-memory notes): linear
    # layers 1 B + 83,968 fp32 scales per layer, embedding and lm_head bf16, plus the 32 MiB rotary cache
    from kvplan.config.hf import normalize

    fp8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
           "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
                                                                             "strategy": "channel", "symmetric": True}}}}
    m = normalize({**model("meta-llama/Llama-3.1-70B").raw, "quantization_config": fp8},
                  model_id="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", source="test")
    t = terms(m, "vllm@0.11")
    loaded = t["weights (checkpoint)"].bytes + t["rotary cos/sin cache"].bytes
    assert abs(loaded / GIB - 67.72) / 67.72 <= 0.001
