"""LoRA adapter slots: what vLLM and SGLang allocate on the GPU for adapters before the KV cache is sized.

Per slot and wrapped module: A (rank × local input) + B (local output × rank), model dtype. Rules: vLLM 0.33
``lora/layers/base_linear.py:104-155``, ``column_parallel_linear.py:207-245``, ``row_parallel_linear.py:20-30``,
``logits_processor.py:84-112``, ``vocab_parallel_embedding.py:25-50``; vLLM 0.11 adds
``lora_extra_vocab_size`` 256 rows with lm_head B padded to 256 (``lora/layers/logits_processor.py:91-118``,
``config/lora.py:47-50``); packed modules ``lora/utils.py:298-338``; SGLang 0.5.23 ``lora/mem_pool.py:424-573``
(``max_loras_per_batch`` 8). Llama-3.1-8B: h 4,096, q 4,096, K/V 1,024 each, intermediate 14,336, 32 layers,
vocab 128,256. Bytes; GiB = 2**30.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines import Settings
from kvplan.errors import InputError
from kvplan.planning.capacity import capacity

GIB = 2**30
# One layer of Llama-3.1-8B, A + B elements per unit of rank, tp 1: q 4,096 + 4,096; k and v 4,096 + 1,024;
# o 4,096 + 4,096; gate and up 4,096 + 14,336; down 14,336 + 4,096
LLAMA8B_LAYER = (4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 3 * (4096 + 14336)
# embed_tokens: A vocab × r, B h × r; lm_head: A r × h, B vocab × r (vLLM 0.33: Llama declares embedding_modules)
LLAMA8B_EMBED = 2 * (128_256 + 4096)


def lora(name: str, engine: str = "vllm", tp: int = 1, **settings: Any) -> Any:
    r = capacity(name, engine=engine, kv_budget_bytes=(40 * GIB,), max_model_len=8192, tp=tp,
                 settings=Settings.of(**settings))
    return r.extras.lora


def test_vllm_033_llama31_8b_slot() -> None:
    assert LLAMA8B_LAYER == 81_920
    # per slot: (81,920 × 32 layers + embed and lm_head 2 × (128,256 + 4,096)) × rank 64 × 2 B
    per_slot = (LLAMA8B_LAYER * 32 + LLAMA8B_EMBED) * 64 * 2
    assert per_slot == 369_426_432
    found = lora("meta-llama/Llama-3.1-8B", max_loras=4, max_lora_rank=64)
    assert (found.bytes_per_slot_per_gpu, found.bytes_per_gpu) == (per_slot, 4 * per_slot)
    assert found.modules == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def test_vllm_011_adds_the_extra_vocabulary() -> None:
    # embed: (128,256 + 256) × 64 + 4,096 × 64 + 256 × 4,096 new-token rows = 9,535,488;
    # lm_head: 64 × 4,096 + cdiv(128,512, 256) × 256 × 64 + 256 × 4,096 = 9,535,488
    embed = (128_256 + 256) * 64 + 4096 * 64 + 256 * 4096
    head = 64 * 4096 + 502 * 256 * 64 + 256 * 4096
    assert embed == head == 9_535_488
    found = lora("meta-llama/Llama-3.1-8B", "vllm@0.11", max_lora_rank=64)
    assert found.bytes_per_gpu == (LLAMA8B_LAYER * 64 * 32 + embed + head) * 2 == 373_686_272


def test_tensor_parallel_splits_like_the_base_layers() -> None:
    # tp 4 (vLLM 0.33): column A whole, B split; row A split, B whole; K/V B: 2 of 8 heads × 128 = 256 rows.
    # q 4,096 + 1,024; k, v 4,096 + 256; o 1,024 + 4,096; gate, up 4,096 + 3,584; down 3,584 + 4,096
    layer = (4096 + 1024) + 2 * (4096 + 256) + (1024 + 4096) + 3 * (4096 + 3584)
    assert layer == 41_984
    found = lora("meta-llama/Llama-3.1-8B", tp=4, max_lora_rank=64)
    # the embedding and lm_head slots are whole on every rank
    assert found.bytes_per_gpu == (layer * 32 + LLAMA8B_EMBED) * 64 * 2 == 205_848_576


def test_sglang_default_eight_slots() -> None:
    # max_loras_per_batch 8 at rank 16; no embedding slots: 81,920 × 16 × 32 × 2 B × 8
    found = lora("meta-llama/Llama-3.1-8B", "sglang", max_lora_rank=16)
    assert (found.slots, found.bytes_per_gpu) == (8, LLAMA8B_LAYER * 16 * 32 * 2 * 8) and found.bytes_per_gpu == 671_088_640


def test_target_modules_take_whole_packed_modules() -> None:
    # q_proj,v_proj -> qkv_proj with all three slices; embed_tokens and lm_head not targeted. Qwen3-8B (h 4,096,
    # q 32 × 128, K/V 8 × 128, 36 layers): (4,096 + 4,096) + 2 × (4,096 + 1,024) = 18,432 × 64 × 36 × 2 B
    found = lora("Qwen/Qwen3-8B", max_loras=4, max_lora_rank=64, lora_target_modules=("q_proj", "v_proj"))
    assert found.modules == ("q_proj", "k_proj", "v_proj")
    assert found.bytes_per_slot_per_gpu == 18_432 * 64 * 36 * 2 == 84_934_656
    assert found.bytes_per_gpu == 4 * 84_934_656


def test_mla_modules_are_wrapped_as_their_base_layers() -> None:
    # DeepSeek-V2-Lite has no q_lora_rank: q_proj (column), kv_a_proj_with_mqa (replicated), kv_b_proj (column),
    # o_proj (row); layer 0 is dense (first_k_dense_replace 1)
    found = lora("deepseek-ai/DeepSeek-V2-Lite", max_lora_rank=8)
    assert found.modules == ("q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def test_lora_slots_come_out_of_the_kv_budget() -> None:
    plain = capacity("meta-llama/Llama-3.1-8B", engine="vllm", gpu="H100", max_model_len=8192)
    r = capacity("meta-llama/Llama-3.1-8B", engine="vllm", gpu="H100", max_model_len=8192,
                 settings=Settings.of(max_loras=4, max_lora_rank=64))
    term = next(t for t in r.budget_terms if t.kind == "lora")
    assert term.bytes == 4 * 369_426_432
    assert min(plain.kv_budget_bytes_per_gpu) - min(r.kv_budget_bytes_per_gpu) == term.bytes
    assert r.overhead is not None and r.overhead.lora_bytes == term.bytes


def test_host_cache_of_adapters() -> None:
    # max_cpu_loras 8 adapters at rank 64, whole (each worker loads the full adapter): 8 × 369,426,432
    found = lora("meta-llama/Llama-3.1-8B", tp=4, max_loras=2, max_cpu_loras=8, max_lora_rank=64)
    assert found.host_bytes_per_rank == 8 * 369_426_432


@pytest.mark.parametrize(("engine", "settings", "arg"), [
    pytest.param("vllm@0.11", {"max_lora_rank": 8, "lora_target_modules": ("q_proj",)}, "lora_target_modules",
                 id="vllm-0.11-no-target-modules"),
    pytest.param("trtllm", {"max_lora_rank": 8}, "max_lora_rank", id="trtllm-peft-cache-not-modelled"),
    pytest.param("hf", {"max_loras": 2}, "max_lora_rank", id="hf-no-peft"),
])
def test_what_kvplan_does_not_model_is_bad_input(engine: str, settings: dict[str, Any], arg: str) -> None:
    with pytest.raises(InputError) as err:
        capacity("meta-llama/Llama-3.1-8B", engine=engine, kv_budget_bytes=(40 * GIB,), max_model_len=8192,
                 settings=Settings.of(**settings))
    assert err.value.arg_names == (arg,)
