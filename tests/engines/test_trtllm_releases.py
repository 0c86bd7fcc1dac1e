"""TensorRT-LLM's release rows (kvplan/engines/trtllm.py): 0.20 and 1.x (1.1, 1.2), each against numbers derived
by hand from the code read for it (0.20.0 ``_torch/pyexecutor/_util.py``; 1.1.0rc6-era and 1.2.0rc2
``KvCacheCreator``). GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

import pytest
from plan_helpers import GIB, plan

from kvplan.engines import Settings, get_engine
from kvplan.engines.trtllm import RELEASES, TrtllmEngine
from kvplan.errors import InputError


@pytest.mark.parametrize(("name", "key", "version"), [
    ("trtllm", "1.1", "TensorRT-LLM 1.x (PyTorch backend)"), ("trtllm@1", "1.1", "TensorRT-LLM 1.x (PyTorch backend)"),
    ("trtllm@1.1.0", "1.1", "TensorRT-LLM 1.1 (PyTorch backend)"), ("trtllm@1.2.1", "1.1", "TensorRT-LLM 1.2 (PyTorch backend)"),
    ("trtllm@0.20.0", "0.20", "TensorRT-LLM 0.20 (PyTorch backend)"),
])
def test_names_map_to_rows(name: str, key: str, version: str) -> None:
    engine = get_engine(name)
    assert isinstance(engine, TrtllmEngine) and engine.release is RELEASES[key] and engine.version == version


@pytest.mark.parametrize("name", ["trtllm@0.21", "trtllm@1.0", "trtllm@1.3", "trtllm@0.19"])
def test_releases_not_pinned_are_refused(name: str) -> None:
    with pytest.raises(InputError, match="unknown engine"):
        get_engine(name)


def test_each_row_names_its_source() -> None:
    for row in RELEASES.values():
        assert row.changes and row.source and row.tokens_per_block == 32


def test_the_manager_lines_by_release(model: Any) -> None:
    # Llama-3.1-8B at 40 GiB: 327,680 tokens = 10,240 blocks of 32; 256 = 8,192 / 32 blocks per sequence
    old = plan(model, "meta-llama/Llama-3.1-8B", "trtllm@0.20", 40 * GIB, max_model_len=8192)
    new = plan(model, "meta-llama/Llama-3.1-8B", "trtllm", 40 * GIB, max_model_len=8192)
    assert old.kv_tokens == new.kv_tokens == 327_680 and old.num_blocks == new.num_blocks == 10_240
    assert old.log_lines == ("Max KV cache pages per sequence: 256 [window size=8192]", "Number of tokens per block: 32.",
                             "[MemUsageChange] Allocated 40.00 GiB for max tokens in paged KV cache (327680).")
    assert new.log_lines[0] == ("Max KV cache blocks per sequence: 256 [window size=8192], tokens per block=32, primary "
                                "blocks=10240, secondary blocks=0, max sequence length=8192")
    # the estimation's line: 0.20 counts tokens, 1.x memory
    assert any("Estimated max tokens in KV cache : 327680" in n for n in old.notes)
    assert any("Estimated max memory in KV cache : 40.00 GiB" in n for n in new.notes)


def test_020_counts_every_hidden_layer_in_the_estimate(model: Any) -> None:
    # NVIDIA-Nemotron-3-Nano-30B: 6 attention layers of 52 (2 KV heads × 128 × 2 × 2 B = 1,024 B each): the manager
    # and 1.x's estimator 6,144 B per token; 0.20's estimator counts all 52 layers: 53,248 -> 40 GiB // 53,248
    name = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
    assert plan(model, name, "trtllm", 40 * GIB, max_model_len=8192).kv_tokens == 40 * GIB // 6_144
    assert plan(model, name, "trtllm@0.20", 40 * GIB, max_model_len=8192).kv_tokens == 40 * GIB // 53_248 == 806_596


def test_estimator_below_the_manager_is_noted(model: Any) -> None:
    # Llama-2-70B tp 16: the manager holds ceil(8 / 16) = 1 head: 80 × 2 × 128 × 2 B = 40,960 per token; the estimator
    # floor(128 × 8 / 16) = 64: 20,480. kvplan plans what the budget holds (40 GiB // 40,960 = 1,048,576) and says
    # TRT-LLM asks for up to 40 GiB // 20,480 = 2,097,152 before the final manager's cap
    p = plan(model, "meta-llama/Llama-2-70b-hf", "trtllm", 40 * GIB, tp=16, max_model_len=4096)
    assert p.kv_tokens == 1_048_576
    assert any("asks for up to 2,097,152 tokens" in n for n in p.notes)


def test_nvfp4_cache_is_sized_by_the_2_byte_estimator(model: Any) -> None:
    # 1.x takes NVFP4 caches: the manager's 65,536 elements per token cost 65,536 / 2 + 65,536 / 16 = 36,864 B, but
    # the estimator counts 2 B per element (131,072): max_tokens = 40 GiB // 131,072 = 327,680. 0.20 refuses it
    p = plan(model, "meta-llama/Llama-3.1-8B", "trtllm", 40 * GIB, kv_dtype="nvfp4", max_model_len=8192)
    assert p.kv_tokens == 327_680 and p.page_bytes == 32 * 36_864
    with pytest.raises(InputError, match="takes bf16 \\(auto\\) or fp8"):
        plan(model, "meta-llama/Llama-3.1-8B", "trtllm@0.20", 40 * GIB, kv_dtype="nvfp4", max_model_len=8192)


def test_max_tokens_caps_the_cache(model: Any) -> None:
    # KvCacheConfig.max_tokens 100,000 below the 327,680 the budget holds: the smaller is used, 3,125 blocks
    s = Settings.of(max_tokens=100_000)
    p = plan(model, "meta-llama/Llama-3.1-8B", "trtllm", 40 * GIB, settings=s, max_model_len=8192)
    assert (p.kv_tokens, p.num_blocks) == (100_000, 3_125)
