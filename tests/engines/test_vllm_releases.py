"""vLLM releases as rows: the names users type, each release's scheduler defaults, its log and refusal wording.

Scheduler defaults: vllm/engine/arg_utils.py of each release (0.8.5 `_set_default_args_v1` :1565-1624, 0.9.2
:1626-1700, 0.11.0 :1595-1680, 0.33.0 :2960-3005; V0 0.8.5 `_set_default_args_v0` :1501-1563 and config.py
:1960-1996). Refusal wording: v1/core/kv_cache_utils.py `check_enough_kv_cache_memory` (0.8.5 :510-549, 0.9.2
:538-580, 0.11.0 :678-722); V0 worker/worker.py `raise_if_cache_size_invalid` (0.8.5 :553-570). Quoted log lines
come from tests/data/vllm-memory-profiles.json (each profile names its source).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import GIB, plan
from published_configs import QWEN3_30B_A3B

from kvplan.config.hf import normalize
from kvplan.engines import Device, Request, Settings, get_engine
from kvplan.errors import InputError

PROFILES = {p["id"]: p for p in json.loads((Path(__file__).resolve().parents[1] / "data" /
                                            "vllm-memory-profiles.json").read_text())}
H100 = Device(name="H100-SXM", memory_bytes=85_018_542_080)  # the catalog's 79.18 GiB
A100_80G = Device(name="A100-80G", memory_bytes=84_987_084_800)  # 79.15 GiB
L4 = Device(name="L4", memory_bytes=23_676_190_720)  # 22.05 GiB
B200 = Device(name="B200", memory_bytes=191_510_855_680)  # 178.36 GiB


@pytest.mark.parametrize(("name", "version"), [
    ("vllm", "vLLM 0.33"), ("vllm@0.33", "vLLM 0.33"), ("vllm@0.11", "vLLM 0.11"), ("vllm@v0.11.0", "vLLM 0.11"),
    ("vllm@0.10.1.1", "vLLM 0.10"), ("vllm@0.9.2", "vLLM 0.9"), ("vllm@0.8.5", "vLLM 0.8"),
    ("vllm@0.8-v0", "vLLM 0.8 (V0 engine)"), ("vllm@0.7.3", "vLLM 0.7 (V0 engine)"),
    ("vllm@0.6.4.post1", "vLLM 0.6.4 (V0 engine)"), ("sglang", "SGLang 0.5.23"), ("sglang@0.5.2", "SGLang 0.5.2"),
    ("SGLang@0.5", "SGLang 0.5.23"), ("trt-llm", "TensorRT-LLM 1.x (PyTorch backend)"),
    ("trtllm@1.2.0rc2", "TensorRT-LLM 1.2 (PyTorch backend)"), ("trtllm@1.1.0rc3", "TensorRT-LLM 1.1 (PyTorch backend)"),
    ("trtllm@0.20.0", "TensorRT-LLM 0.20 (PyTorch backend)"), ("sglang@0.5.6.post2", "SGLang 0.5.6"),
    ("sglang@v0.4.3.post4", "SGLang 0.4.3"), ("sglang@0.4", "SGLang 0.4.0"), ("transformers", "transformers 5.x"),
])
def test_engine_names_resolve_to_releases(name: str, version: str) -> None:
    assert get_engine(name).version == version


@pytest.mark.parametrize("name", ["vllm@0.34", "vllm@0.6", "vllm@0.5.4", "vllm@", "sglang@0.3", "trtllm@0.19", "vllm11",
                                  "sglang@0.4.11", "sglang@0.5.0", "sglang@0.5.24", "trtllm@1.0.0", "trtllm@1.3.0rc7"])
def test_releases_kvplan_does_not_follow_are_input_errors(name: str) -> None:
    with pytest.raises(InputError, match="unknown"):
        get_engine(name)


def _defaults(engine: str, device: Device | None, max_model_len: int = 8192, **settings: Any) -> tuple[Any, ...]:
    m = __import__("kvplan").load_model("meta-llama/Llama-3.1-8B")
    s = get_engine(engine).resolve(Request.of(m, max_model_len=max_model_len, device=device,
                                           settings=Settings.of(**settings))).settings
    return s.max_num_batched_tokens, s.max_num_seqs


@pytest.mark.parametrize(("engine", "device", "entry", "expected"), [
    pytest.param("vllm@0.11", H100, "serve", (8192, 1024), id="0.11-h100-serve"),
    pytest.param("vllm@0.11", H100, "llm", (16384, 1024), id="0.11-h100-llm"),
    pytest.param("vllm@0.11", A100_80G, "serve", (2048, 256), id="0.11-a100-excluded"),  # "a100" in the name
    pytest.param("vllm@0.8", A100_80G, "serve", (8192, 1024), id="0.8-a100-not-excluded"),  # no name check yet
    pytest.param("vllm@0.11", L4, "llm", (8192, 256), id="0.11-l4-llm"),
    pytest.param("vllm@0.11", B200, "serve", (8192, 1024), id="0.11-b200"),
    pytest.param("vllm@0.33", B200, "serve", (16384, 1024), id="0.33-b200-160gib-tier"),
    pytest.param("vllm@0.33", None, "serve", (8192, 1024), id="0.33-no-gpu-h100-class"),
])
def test_scheduler_defaults_by_gpu_class_and_entry_point(engine: str, device: Device | None, entry: str,
                                                         expected: tuple[int, int]) -> None:
    assert _defaults(engine, device, entry_point=entry) == expected


def test_v0_profiles_max_model_len_unless_chunked() -> None:
    # V0: chunked prefill only past 32k (then 2,048 tokens); otherwise max(max_model_len, 2,048); 256 seqs
    assert _defaults("vllm@0.7", H100, 8192) == (8192, 256)
    assert _defaults("vllm@0.7", H100, 20000) == (20000, 256)
    assert _defaults("vllm@0.7", H100, 131072) == (2048, 256)
    assert _defaults("vllm@0.7", H100, 131072, max_lora_rank=8) == (131072, 256)  # LoRA keeps it off


def test_sampler_path_by_release() -> None:
    m = __import__("kvplan").load_model("meta-llama/Llama-3.1-8B")
    resolved = {e: get_engine(e).resolve(Request.of(m, max_model_len=4096)).settings.vllm.sampler
                for e in ("vllm@0.8", "vllm@0.11", "vllm@0.33")}
    assert resolved == {"vllm@0.8": "sort", "vllm@0.11": "sort", "vllm@0.33": "flashinfer"}
    with pytest.raises(InputError, match=r"0\.8 samples with sort"):  # FlashInfer sampling is switched off in 0.8
        get_engine("vllm@0.8").resolve(Request.of(m, max_model_len=4096, settings=Settings.of(sampler="flashinfer")))


def test_gpt_oss_20b_0_11_reserves_without_async_or_pp_factor(model: Any) -> None:
    # 0.11: sliding reserve min(127 + 8,192, 131,072) -> cdiv(8,319, 16) + 1 = 521 blocks (0.33: 1,033, see
    # test_vllm.py); 109,226 / (8,192 + 521) = 12.54x; token log 109,226 // 2 groups × 16 = 873,808
    p = plan(model, "openai/gpt-oss-20b", "vllm@0.11", 40 * GIB, max_model_len=131072)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x", p.version) == (109_226, 873_808, "12.54x", "vLLM 0.11")


def test_gpt_oss_20b_0_8_has_no_hybrid_manager(model: Any) -> None:
    # 0.8 unifies sliding layers to full: 40 GiB // (24 × 32,768) = 54,613 blocks -> 873,808 tokens;
    # concurrency = tokens / max_model_len = 873,808 / 131,072 = 6.67x. vLLM 0.8 has no GptOssForCausalLM (first
    # listed in 0.10.1.1), so the rule is checked on gpt-oss-20b's layers under an architecture 0.8 builds.
    gpt_oss = model("openai/gpt-oss-20b")
    as_08 = dataclasses.replace(gpt_oss, raw={**gpt_oss.raw, "architectures": ["MixtralForCausalLM"]})
    p = plan(lambda _: as_08, "openai/gpt-oss-20b", "vllm@0.8", 40 * GIB, max_model_len=131072)
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == (54_613, 873_808, "6.67x")
    with pytest.raises(InputError, match=r"GptOssForCausalLM: vLLM serves it from v0\.10\.1\.1"):
        plan(model, "openai/gpt-oss-20b", "vllm@0.8", 40 * GIB, max_model_len=131072)


def test_0_10_token_log_of_the_jetson_profile(model: Any) -> None:
    # doc-llama31-8b-jetson-thor (0.10.2): "GPU KV cache size: 702,800 tokens", "Maximum concurrency for 131,072
    # tokens per request: 5.36x". 702,800 / 16 = 43,925 blocks of 2 MiB (32 layers × 65,536 B): the budget that
    # yields them is 43,925 × 2,097,152 B (85.79 GiB, as logged); 43,925 / 8,192 = 5.362x
    p = plan(model, "meta-llama/Llama-3.1-8B", "vllm@0.10", 43_925 * 2_097_152, max_model_len=131072)
    quoted = PROFILES["doc-llama31-8b-jetson-thor"]["quoted_lines"]
    assert all(any(line in q for q in quoted) for line in p.log_lines)


def test_0_8_token_log_of_the_a10_profile(model: Any) -> None:
    # vllm17327 (0.8.5, tp 4): "GPU KV cache size: 198,784 tokens", "... 8,192 tokens per request: 24.27x".
    # Qwen3-30B-A3B at tp 4: 48 layers × 1 KV head × 256 × 2 B = 24,576 B/token, 393,216 B per block;
    # 198,784 / 16 = 12,424 blocks; concurrency = 198,784 / 8,192 = 24.27x
    qwen = normalize(QWEN3_30B_A3B, model_id="Qwen/Qwen3-30B-A3B", source="published_configs")
    p = plan(lambda _: qwen, "Qwen/Qwen3-30B-A3B", "vllm@0.8", 12_424 * 393_216, tp=4, max_model_len=8192)
    quoted = PROFILES["vllm17327-qwen3-30b-a3b-tp4-a10"]["quoted_lines"]
    assert all(any(line in q for q in quoted) for line in p.log_lines)


@pytest.mark.parametrize(("profile", "name", "blocks", "block_bytes", "max_model_len", "tp"), [
    # 29,000 tokens on an RTX 3090 (0.6.4): 1,478 blocks of 2 MiB (32 layers × 16 × 131,072 B/16); 1,478 × 16 = 23,648
    pytest.param("vllm10517-llama31-8b-rtx3090-29k", "meta-llama/Llama-3.1-8B", 1478, 2_097_152, 29000, 1,
                 id="vllm10517-29k"),
    # Qwen2.5-72B GPTQ fp16 KV: 80 layers × 8 heads × 256 × 2 B × 16 = 5,242,880 B per block; 80 × 16 = 1,280 tokens
    pytest.param("vllm11230-qwen25-72b-gptq-a40", "Qwen/Qwen2.5-72B", 80, 5_242_880, 8192, 1, id="vllm11230"),
])
def test_v0_refusal_word_for_word(model: Any, profile: str, name: str, blocks: int, block_bytes: int,
                                  max_model_len: int, tp: int) -> None:
    p = plan(model, name, "vllm@0.6.4", blocks * block_bytes, max_model_len=max_model_len, tp=tp)
    quoted = PROFILES[profile]["quoted_lines"]
    assert p.refusal is not None and p.refusal.estimated_max_model_len == blocks * 16
    assert p.log_lines[1] in quoted[-2] and p.refusal.message in quoted[-1]  # concurrency line, then the error


def test_v0_block_log_names_the_device_by_release(model: Any) -> None:
    # "# GPU blocks" (0.6), "# CUDA blocks" (0.7), "# cuda blocks" (0.8 V0): platform device_name; CPU blocks =
    # 4 GiB swap // 2 MiB = 2,048 (vllm12330 logs "# GPU blocks: 5691, # CPU blocks: 2048")
    lines = {e: plan(model, "meta-llama/Llama-3.1-8B", e, 5691 * 2_097_152, max_model_len=8192).log_lines[0]
             for e in ("vllm@0.6.6", "vllm@0.7", "vllm@0.8-v0")}
    assert lines["vllm@0.6.6"] in PROFILES["vllm12330-llama3-8b-a100-40gb"]["quoted_lines"][5]
    assert (lines["vllm@0.7"], lines["vllm@0.8-v0"]) == ("# CUDA blocks: 5691, # CPU blocks: 2048",
                                                         "# cuda blocks: 5691, # CPU blocks: 2048")


@pytest.mark.parametrize(("engine", "message"), [
    # 0.9-0.11: checked against the whole 10 GiB (no null block): 5,120 blocks × 16 = 81,920 tokens fit
    pytest.param("vllm@0.11", "To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
                 "cache is needed, which is larger than the available KV cache memory (10.00 GiB). Based on the "
                 "available memory, the estimated maximum model length is 81920. Try increasing "
                 "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", id="0.11"),
    # 0.8: the estimate is computed, but a stray string statement leaves it out of the message
    pytest.param("vllm@0.8", "To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
                 "cache is needed, which is larger than the available KV cache memory (10.00 GiB). Based on the "
                 "available memory,  Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                 "initializing the engine.", id="0.8"),
])
def test_v1_refusal_wording_by_release(model: Any, engine: str, message: str) -> None:
    p = plan(model, "meta-llama/Llama-3.1-8B", engine, 10 * GIB, max_model_len=131072)
    assert p.refusal is not None and p.refusal.message == message and p.refusal.estimated_max_model_len == 81_920
    assert p.log_lines == (message,)  # V1 checks before it logs the cache size


def test_a_bigger_gpu_class_can_hold_fewer_long_requests() -> None:
    # Mistral-7B (every layer sliding, window 4,096) at 32,768 tokens under 0.33 (pp 1 + async = 2 batches in
    # flight): below 70 GiB `vllm serve` batches 2,048 tokens -> cdiv(4,095 + 4,096, 16) + 1 = 513 blocks reserved
    # per request; from 70 GiB on 8,192 -> cdiv(min(4,095 + 16,384, 32,768), 16) + 1 = 1,281
    from kvplan.planning.capacity import capacity

    need = {gib: capacity("mistralai/Mistral-7B-v0.1", gpu_memory_bytes=gib * GIB, max_model_len=32768).plan.groups[0]
            .blocks_per_request for gib in (69, 70)}
    assert need == {69: 513, 70: 1_281}


@pytest.mark.parametrize(("engine", "message"), [
    # 0.8.0 v1/core/kv_cache_utils.py:478-484: "GB", no estimate
    pytest.param("vllm@0.8.0", "To serve at least one request with the models's max seq len (131072), (16.00 GB KV cache "
                 "is needed, which is larger than the available KV cache memory (10.00 GB). Try increasing "
                 "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", id="0.8.0"),
    # 0.13.0 :711-719: 0.12's text and the docs link
    pytest.param("vllm@0.13", "To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
                 "cache is needed, which is larger than the available KV cache memory (10.00 GiB). Based on the "
                 "available memory, the estimated maximum model length is 81920. Try increasing "
                 "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. See "
                 "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.", id="0.13"),
    # 0.14.0 :635-643: format_gib = round(x, 2), the estimate glued to "Try"
    pytest.param("vllm@0.14", "To serve at least one request with the models's max seq len (131072), (16.0 GiB KV "
                 "cache is needed, which is larger than the available KV cache memory (10.0 GiB). Based on the "
                 "available memory, the estimated maximum model length is 81920. Try increasing "
                 "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. See "
                 "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.", id="0.14"),
    # 0.22.0 :719-727: "model's", the CPU-backend note; no null block before 0.29
    pytest.param("vllm@0.22", "To serve at least one request with the model's max seq len (131072), (16.0 GiB KV "
                 "cache is needed, which is larger than the available KV cache memory (10.0 GiB). Based on the "
                 "available memory, the estimated maximum model length is 81920. Try increasing "
                 "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing "
                 "`max_model_len` when initializing the engine. See "
                 "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.", id="0.22"),
])
def test_refusal_wording_by_release(model: Any, engine: str, message: str) -> None:
    # Llama-3.1-8B: 128 KiB per token; 131,072 tokens need 16 GiB; 10 GiB hold 81,920 (0.29 on: less the null block)
    p = plan(model, "meta-llama/Llama-3.1-8B", engine, 10 * GIB, max_model_len=131072)
    assert p.refusal is not None and p.refusal.message == message
