"""Real SGLang and TensorRT-LLM start-up logs against the release rows: each logged pool size, default fraction
and allocation line recomputed from the numbers the log prints, or a miss pinned with its reason.

The logs are tests/data/logs/<id>.log (their sources in the .json beside each, and below).
Logged GB values are GiB at two decimals, so a recomputation is a range: each printed value ± 0.005.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kvplan import load_model
from kvplan.config.hf import normalize
from kvplan.engines import Device, Request, Settings, get_engine
from kvplan.engines.sglang import fraction
from kvplan.errors import InputError
from kvplan.planning.capacity import plan_request

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
GIB = 2**30
H100 = Device(name="H100-SXM", memory_bytes=85_018_542_080, smi_memory_mib=81559)


def _number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, pattern
    return float(found.group(1))


def _plan(model: Any, engine: str, budget: int, **kw: Any) -> Any:
    settings = kw.pop("settings", Settings())
    return plan_request(Request.of(model, settings=settings, **kw), (budget,), engine)


def _tokens_span(model: Any, engine: str, after: float, before: float, f: float, err: tuple[float, float] = (0.005, 0.005),
                 **kw: Any) -> tuple[int, int]:
    """SGLang's rest = free after weights − free at init × (1 − f), each logged value ± its rounding, as kvplan's N."""
    low = (after - err[0]) - (before + err[1]) * (1 - f)
    high = (after + err[0]) - (before - err[1]) * (1 - f)
    return _plan(model, engine, int(low * GIB), **kw).kv_tokens, _plan(model, engine, int(high * GIB), **kw).kv_tokens


def _default_fraction(engine: str, model: Any, device: Device, **kw: Any) -> float | None:
    return get_engine(engine).resolve(Request.of(model, device=device, **kw)).settings.sglang.mem_fraction_static


# sglang-v041-llama31-8b-h100-docs.log: a web clipping of docs.sglang.ai 'Quick Start: Sending Requests' (created
# 2025-01-23; search-index file id 18084549501), server launched without --mem-fraction-static; ~0.4.1.
V041 = (LOGS / "sglang-v041-llama31-8b-h100-docs.log").read_text()


def test_v041_llama31_8b_h100() -> None:
    m = load_model("meta-llama/Llama-3.1-8B-Instruct")
    # the default: 0.4.1's table at tp 1 = 0.88 (server_args printed mem_fraction_static=0.88, chunked 8,192)
    assert _default_fraction("sglang@0.4.1", m, H100) == 0.88
    assert fraction.tier(get_engine("sglang@0.4.1").release, 81559).chunked == 8192  # type: ignore[attr-defined]
    # 63.72 − 78.81 × 0.12 = 54.2628 GiB (± 0.0056) // 131,072 B: 444,474-444,566 holds the logged 444,500
    low, high = _tokens_span(m, "sglang@0.4.1", 63.72, 78.81, 0.88, max_model_len=131072)
    logged = int(_number(r"max_total_num_tokens=(\d+)", V041))
    assert low <= logged <= high and (low, high) == (444_474, 444_566)
    # 0.4.1's allocation line (no #tokens yet; N + 1 slots): reproduced from N
    p = _plan(m, "sglang@0.4.1", logged * 131_072, max_model_len=131072)
    assert p.kv_tokens == logged and p.log_lines[0] in V041


# sglang-v043post4-qwq-32b-tp4-l4.log: README of an 'llms-in-clouds' SGLang-on-AWS-ECS project (g6.12xlarge, 4 × L4;
# Dockerfile SGL_VERSION="0.4.3.post4"; search-index file id 47376055009). TP0 lines.
V043 = (LOGS / "sglang-v043post4-qwq-32b-tp4-l4.log").read_text()


def test_v043_qwq_32b_tp4_l4() -> None:
    # QwQ-32B has Qwen2.5-32B's KV geometry (64 layers, 8 KV heads of 128): 2 heads per GPU at tp 4, 65,536 B/token
    m = load_model("Qwen/Qwen2.5-32B")
    l4 = Device(name="L4", memory_bytes=23_675_600_896, smi_memory_mib=23034)
    # server_args printed mem_fraction_static=0.85, chunked_prefill_size=2048, cuda_graph_max_bs=80: 0.4.3's defaults
    assert _default_fraction("sglang@0.4.3", m, l4, tp=4) == 0.85
    rel = get_engine("sglang@0.4.3").release  # type: ignore[attr-defined]
    assert (fraction.tier(rel, 23034).chunked, fraction.tier(rel, 23034).max_bs[1]) == (2048, 80)
    # 6.09 − 21.63 × 0.15 = 2.8455 GiB (± 0.0058) // 65,536: 46,526-46,714 holds the logged 46,611
    low, high = _tokens_span(m, "sglang@0.4.3", 6.09, 21.63, 0.85, tp=4, max_model_len=131072)
    assert low <= 46_611 <= high
    p = _plan(m, "sglang@0.4.3", 46_611 * 65_536, tp=4, max_model_len=131072)
    assert p.log_lines[0] in V043  # N + 1 slots: 46,612 × 64 × 2 × 128 × 2 B = 1.42 GiB


# sglang-v058-llama31-8b-lora-h100-docs.log: a rendered SGLang documentation notebook on LoRA serving (Feb-2026 CI
# build, max_total_tokens 20480; search-index file id 14968382678); ~0.5.8.
V058_LORA = (LOGS / "sglang-v058-llama31-8b-lora-h100-docs.log").read_text()


def test_v058_llama31_8b_lora_docs_is_capped() -> None:
    # the fraction is not quoted; at 0.5.8's H100 default 0.835 rest = 63.41 − 78.43 × 0.165 = 50.47 GiB, far above
    # 20,480 × 131,072 B, so --max-total-tokens 20480 decides: N = 20,480, (20,481) × 32 × 8 × 128 × 2 B = 1.25 GiB
    m = load_model("meta-llama/Llama-3.1-8B-Instruct")
    s = Settings.of(max_total_tokens=20480)
    p = _plan(m, "sglang@0.5.8", int((63.41 - 78.43 * 0.165) * GIB), settings=s, max_model_len=131072)
    assert p.kv_tokens == 20_480 and p.log_lines[0] in V058_LORA


def test_v058_qwen25_05b_docs_fraction_and_cap() -> None:
    text = (LOGS / "sglang-v058-qwen25-0.5b-h100-docs.log").read_text()
    # Qwen2.5-0.5B-Instruct's KV geometry (24 layers, 2 KV heads of 64; 32,768 context), as a test config
    m = normalize({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_hidden_layers": 24,
                   "hidden_size": 896, "num_attention_heads": 14, "num_key_value_heads": 2, "torch_dtype": "bfloat16",
                   "max_position_embeddings": 32768, "vocab_size": 151936, "intermediate_size": 4864},
                  model_id="qwen/qwen2.5-0.5b-instruct", source="test")
    # the CI run set cuda_graph_max_bs=4: 512 + 1.5 × 8,192 + 2 × 4 + 1,024 / 8 = 12,936 -> round(68,623 / 81,559, 3)
    assert _number(r"cuda_graph_max_bs=(\d+)", text) == 4
    found = _default_fraction("sglang@0.5.8", m, H100, settings=Settings.of(cuda_graph_max_bs=4))
    assert found == _number(r"mem_fraction_static=([\d.]+)", text) == 0.841
    # max_total_tokens=20480 caps N; (20,481) × 24 × 2 × 64 × 2 B = 0.117 GiB per K and V
    s = Settings.of(max_total_tokens=20480)
    p = _plan(m, "sglang@0.5.8", int((77.45 - 78.43 * (1 - 0.841)) * GIB), settings=s)
    assert p.kv_tokens == 20_480 and p.log_lines[0] in text


def test_v058post1_kimi_k25_tp8_mi355x() -> None:
    text = (LOGS / "sglang-v058post1-kimi-k25-tp8-mi355x.log").read_text()
    m = load_model("moonshotai/Kimi-K2.5")
    # MI355X: 288 GiB = 294,912 MiB. 0.5.8, tier >= 160 GiB: chunked 16,384, max_bs 512 (as server_args printed):
    # 512 + 24,576 + 1,024 + 1,024 = 27,136 -> round(267,776 / 294,912, 3) = 0.908 (any G in 293,362-296,571);
    # × MoonViT's factor 0.95 × (1 − 0.1 × (27 × 1,152² / (24 × 1,024²) − 1)) = 0.909736328125
    mi355x = Device(name=None, memory_bytes=294912 * 2**20, smi_memory_mib=294912)
    found = _default_fraction("sglang@0.5.8", m, mi355x, tp=8, max_model_len=262144)
    assert found == _number(r"mem_fraction_static=([\d.]+)", text) == pytest.approx(0.908 * 0.909736328125, abs=1e-12)
    # min over ranks: after 209.96, before = 209.96 + 73.58 = 283.54 (± 0.01); MLA 61 × 576 × 2 B = 70,272 per token
    low, high = _tokens_span(m, "sglang@0.5.8", 209.96, 283.54, found, (0.005, 0.01), tp=8, max_model_len=262144)
    assert low <= 2_454_421 <= high
    p = _plan(m, "sglang@0.5.8", 2_454_421 * 70_272, tp=8, max_model_len=262144)
    assert p.log_lines[0] in text  # (2,454,421 + 1) × 70,272 B = 160.63 GiB


def test_dev_qwen35_9b_tp2_is_a_build_before_0518() -> None:
    text = (LOGS / "sglang-dev-qwen35-9b-tp2-rtx4090.log").read_text()
    m = load_model("Qwen/Qwen3.5-9B")
    # mem_fraction_static 0.8 given; rest = 14.08 − 22.93 × 0.2 = 9.494 GiB; the Mamba state takes 0.9/1.9 of it,
    # the KV 1/1.9 at 8 layers × 2 heads × 256 × 2 × 2 B = 16,384 per token: 327,266-327,680 holds the logged 327,310
    low, high = _tokens_span(m, "sglang@0.5.17", 14.08, 22.93, 0.8, tp=2, max_model_len=262144)
    assert low <= int(_number(r"#tokens: (\d+)", text)) == 327_310 <= high
    # 0.5.18 on, a multimodal model's pool first gives 100 MiB to the embedding cache: 323,897-324,311 does not
    # (the dev build, 0.0.0.dev11582 of April 2026, predates that rule)
    low, high = _tokens_span(m, "sglang@0.5.18", 14.08, 22.93, 0.8, tp=2, max_model_len=262144)
    assert high < 327_310


def test_qwen3_235b_tp4_sizes_only() -> None:
    text = (LOGS / "sglang-qwen3-235b-a22b-fp8-tp4-h100.log").read_text()
    # (367,404 + 1) × 94 × 1 head (4 / tp 4) × 128 × 2 B = 8.23 GiB per K and V, as logged (July 2025, ~0.4.9)
    p = _plan(load_model("Qwen/Qwen3-235B-A22B"), "sglang@0.4.9", 367_404 * 48_128, tp=4, max_model_len=40960)
    assert p.kv_tokens == 367_404 and p.log_lines[0] == text.strip()
    # miss, pinned: #tokens cannot be recomputed (the excerpt prints no memory and mem_fraction_static is 0.93)


# sglang-2026aug-qwen3-30b-a3b-fp8-h100.log: a long server log of an Aug-2026 build (search-index file id
# 69624180828; Qwen3-MoE FP8, 128 experts; H100 80GB HBM3; mem_fraction_static=0.83 in its server_args).
AUG2026 = (LOGS / "sglang-2026aug-qwen3-30b-a3b-fp8-h100.log").read_text()


def test_aug2026_qwen3_30b_h100() -> None:
    m = load_model("Qwen/Qwen3-30B-A3B")
    # the capture list is 0.5.23's prefill sizes up to 8,192 (58 of them, 464 MiB), and the default 0.830 is the
    # logged 0.83
    sizes = [int(n) for n in re.findall(r"\d+", AUG2026.split("num_tokens=[")[1].split("]")[0])]
    assert sizes == fraction.prefill_graph_sizes(8192) and len(sizes) == 58
    assert _default_fraction("sglang", m, H100) == 0.83
    # the line from N: 48 layers × 4 heads × 128 × 2 B = 49,152 per K; (392,921) × 49,152 = 17.99 GiB
    p = _plan(m, "sglang", 392_920 * 98_304)
    assert p.log_lines[0] in AUG2026
    # miss, pinned: with 0.5.23's baseline (free memory after the distributed init, 78.48 GB) rest = 49.33 − 78.48 ×
    # 0.17 gives 393,025-393,153 tokens; the logged 392,920 needs the baseline before it (78.48 + 0.09 = 78.57:
    # 392,858-392,986). The build's release cannot be told (it prints the pre-0.5.21 "Init torch distributed ends")
    low, high = _tokens_span(m, "sglang", 49.33, 78.48, 0.83)
    assert low > 392_920
    low, high = _tokens_span(m, "sglang", 49.33, 78.57, 0.83)
    assert low <= 392_920 <= high


# sglang-v058post1-glm5-fp8-fp8kv-tp8-mi355x.log: a ROCm model-test report (GitHub ajith-sirra-amd/Issues, see its
# sidecar): SGLang v0.5.8.post1, zai-org/GLM-5-FP8 at TP 8 on MI355X, --kv-cache-dtype fp8_e4m3, page 1,
# mem_fraction_static 0.908; the DSA pool of kvplan.engines.sglang.pool.
GLM5_FP8 = (LOGS / "sglang-v058post1-glm5-fp8-fp8kv-tp8-mi355x.log").read_text()


def test_v058_glm5_fp8_dsa_pool_line() -> None:
    m = load_model("zai-org/GLM-5-FP8")
    # the line from the logged N: 78 layers × ((3,262,823 + 1) × 656 B fp8 latent rows with scales and bf16 rope +
    # (3,262,823 + 2) × 132 B index keys) = 200,546,224,632 B = 186.77 GiB, as logged (576 B alone: 136.52)
    p = _plan(m, "sglang@0.5.8", 3_262_823 * 55_224, tp=8, kv_dtype="fp8_e4m3", block_size=1)
    assert p.kv_tokens == 3_262_823 and p.log_lines[0] in GLM5_FP8
    # N is sized at 78 × (576 + 132) = 55,224 B a token: rest = 193.90 − 283.48 × (1 − 0.908) ± rounding gives
    # 3,262,880-3,263,092, 57 tokens over the logged 3,262,823 (miss pinned in tests/reconcile/test_reconcile.py); at
    # the 61,464 B the pool allocates it would be about 2.93 M
    low, high = _tokens_span(m, "sglang@0.5.8", 193.90, 283.48, 0.908, tp=8, kv_dtype="fp8_e4m3", block_size=1)
    assert (low, high) == (3_262_880, 3_263_092)


# trtllm-1.1.0rc3-gpt-oss-120b-gb10-pytorch.log: playbook 'Install and use TensorRT-LLM for GPT-OSS 120B with the
# OpenAI-compatible API on the DGX Spark' (search-index file id 2263047771); 1.1.0rc3, PyTorch backend.
TRT_110RC3 = (LOGS / "trtllm-1.1.0rc3-gpt-oss-120b-gb10-pytorch.log").read_text()


def test_trtllm_110rc3_gpt_oss_120b() -> None:
    m = load_model("openai/gpt-oss-120b")
    # (total 119.70 − peak 113.65 + the estimation cache 8,224 × 73,728 B) × 0.9 (float32 0.8999999761581421), with
    # total and peak ± 0.005: max_tokens = budget // 73,728 (36 layers × 8 × 64 × 2 × 2 B; estimator = manager)
    tmp = 8224 * 73_728 / GIB
    spans = [int(((119.70 + a) - (113.65 - b) + tmp) * 0.8999999761581421 * GIB) for a, b in ((-0.005, -0.005),
                                                                                                  (0.005, 0.005))]
    found = [_plan(m, "trtllm@1.1.0rc3", b, max_model_len=131072) for b in spans]
    assert found[0].kv_tokens <= 86_711 <= found[1].kv_tokens
    # the final cache: ceil(86,711 / 32) = 2,710 blocks = 86,720 tokens × 73,728 B = 5.95 GiB, as logged
    p = _plan(m, "trtllm@1.1", 86_711 * 73_728, max_model_len=131072)
    assert (p.kv_tokens, p.num_blocks) == (86_711, 2_710) and p.log_lines[-1] in TRT_110RC3
    assert any("Estimated max memory in KV cache : 5.95 GiB" in n for n in p.notes)


# trtllm-1.2.1-smollm2-135m-rtx4070super-pytorch.log: design doc of an 'LM7' project (search-index file id
# 61586403107); pip install tensorrt-llm==1.2.1, trtllm-serve (PyTorch), --max-model-len 2048; the author wrapped
# the two long lines (kept as published).
TRT_121 = (LOGS / "trtllm-1.2.1-smollm2-135m-rtx4070super-pytorch.log").read_text()


def test_trtllm_121_smollm2_135m() -> None:
    # SmolLM2-135M's KV geometry (30 layers, 3 KV heads of 576 / 9 = 64), as a test config: 23,040 B per token
    m = normalize({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 30,
                   "hidden_size": 576, "num_attention_heads": 9, "num_key_value_heads": 3, "torch_dtype": "bfloat16",
                   "max_position_embeddings": 8192, "vocab_size": 49152, "intermediate_size": 1536},
                  model_id="HuggingFaceTB/SmolLM2-135M-Instruct", source="test")
    # the estimate 9.06 GiB (± 0.005) // 23,040 B: 421,991-422,457 tokens, ceil(/ 32) blocks hold the logged 13,189
    low, high = (_plan(m, "trtllm@1.2.1", int((9.06 + e) * GIB), max_model_len=2049) for e in (-0.005, 0.005))
    assert low.num_blocks <= 13_189 <= high.num_blocks
    # 13,189 × 32 = 422,048 tokens × 23,040 B = 9.06 GiB; 65 = ceil(2,049 / 32) blocks per sequence
    p = _plan(m, "trtllm@1.2.1", 422_048 * 23_040, max_model_len=2049)
    assert p.num_blocks == 13_189 and "Max KV cache blocks per sequence: 65 [window size=2049]" in p.log_lines[0]
    assert "Allocated 9.06 GiB for max tokens in paged" in p.log_lines[-1] and "(422048)." in p.log_lines[-1]


def test_trtllm_120rc2_qwen3_8b_lines() -> None:
    text = (LOGS / "trtllm-1.2.0rc2-qwen3-8b-fp8-pytorch.log").read_text()
    # fp8: 36 × 8 × 128 × 2 × 1 B = 73,728 per token; 46,208 tokens = 1,444 blocks of 32, 288 = ceil(9,193 / 32)
    p = _plan(load_model("Qwen/Qwen3-8B"), "trtllm@1.2.0rc2", 46_208 * 73_728, kv_dtype="fp8", max_model_len=9193)
    assert all(line in text for line in p.log_lines)
    # miss, pinned: the excerpt prints no peak or total memory, so 46,208 itself is not recomputed


# trtllm-0.20.0-llama31-8b-fp8-h100-bench.log: NVIDIA/TensorRT-LLM#6294 (issue body, 07/23/2025 run; 0.20.0 per the
# author's follow-up); trtllm-bench, PyTorch backend.
TRT_0200 = (LOGS / "trtllm-0.20.0-llama31-8b-fp8-h100-bench.log").read_text()


def test_trtllm_0200_llama31_8b_bench_lines() -> None:
    # trtllm-bench's max_tokens 860,308 is below what 0.8 of an H100's free memory holds (the budget is not logged;
    # 56 GiB stands in for it): the smaller is used; ceil(860,308 / 32) = 26,885 blocks = 860,320 tokens × 65,536 B
    # (fp8: 32 × 8 × 128 × 2 × 1 B) = 52.51 GiB; 5 = ceil(157 / 32) pages per sequence
    s = Settings.of(max_tokens=860_308, free_gpu_memory_fraction=0.8)
    p = _plan(load_model("meta-llama/Llama-3.1-8B"), "trtllm@0.20.0", 56 * GIB, settings=s, kv_dtype="fp8",
              max_model_len=157)
    assert p.kv_tokens == 860_308 and p.num_blocks == 26_885
    assert all(line in TRT_0200 for line in p.log_lines) and len(p.log_lines) == 3


@pytest.mark.parametrize(("name", "why"), [
    # TensorRT-engine flow (trtllm-build; C++ calculateMaxNumBlocks on the memory left after the engine): no row
    pytest.param("trtllm-0.19.0-llama31-8b-fp8-rtx5090", "trtllm@0.19.0", id="0.19-trt-engine"),
    pytest.param("trtllm-0.12.0dev-llama2-7b-fp8-h100-docs", "trtllm@0.12.0", id="0.12-trt-engine"),
    # 1.3 not read: no row (its lines follow the 1.x format: test below)
    pytest.param("trtllm-1.3.0rc7-kimi-k25-nvfp4-tp8-b300", "trtllm@1.3.0rc7", id="1.3-not-pinned"),
])
def test_trtllm_logs_without_a_row(name: str, why: str) -> None:
    assert (LOGS / f"{name}.log").exists()
    with pytest.raises(InputError, match="unknown engine"):
        get_engine(why)


def test_trtllm_130rc7_kimi_lines_follow_the_1x_manager() -> None:
    text = (LOGS / "trtllm-1.3.0rc7-kimi-k25-nvfp4-tp8-b300.log").read_text()
    # MLA K-only latent, fp8: 61 × 576 × 1 B = 35,136 per token on every rank; 158,543 blocks × 32 = 5,073,376 tokens
    # = 166.02 GiB; 8,192 = 262,144 / 32 blocks per sequence. Miss, pinned: no peak lines, so the tokens are given
    p = _plan(load_model("moonshotai/Kimi-K2-Instruct"), "trtllm", 5_073_376 * 35_136, tp=8, kv_dtype="fp8",
              max_model_len=262144)
    assert all(line in text for line in p.log_lines)


def test_every_sglang_and_trtllm_log_is_checked_here() -> None:
    source = Path(__file__).read_text()
    names = {p.stem for p in LOGS.glob("*.log") if p.stem.startswith(("sglang-", "trtllm-"))}
    assert names and all(f'"{n}' in source for n in names), sorted(n for n in names if f'"{n}' not in source)
