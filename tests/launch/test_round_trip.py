"""The command kvplan writes for an answer, read back as that release's parser reads it, asks the same question
and gets the same plan (issue 24): over models, layouts and releases of vLLM, SGLang and TensorRT-LLM."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kvplan.config import load_model
from kvplan.engines import get_engine
from kvplan.errors import KvplanError
from kvplan.formulas.request import CacheRequest
from kvplan.launch.command import read_command
from kvplan.launch.read import question_of, read_launch
from kvplan.launch.tables import flag_table
from kvplan.launch.write import Written, write_launch
from kvplan.planning.capacity import CapacityResult, capacity, plan_capacity
from kvplan.planning.request import CapacityRequest, Memory

MODELS = ("Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-V2-Lite",
          "google/gemma-3-27b-it", "mistralai/Mixtral-8x7B-v0.1", "Qwen/Qwen3-30B-A3B")
RELEASES = ("vllm@0.33", "vllm@0.26", "vllm@0.19", "vllm@0.11", "vllm@0.9", "sglang@0.5.23", "sglang@0.5.2",
            "sglang@0.4.6", "sglang@0.4", "trtllm@1", "trtllm@1.1", "trtllm@0.20")
PAGED = ("vllm", "sglang@0.5")  # SGLang takes --page-size from 0.4.4; TRT-LLM's tokens_per_block is YAML only
GPUS = ("H100", "H200", "A100-80G", "L40S")


@st.composite
def questions(draw: Any) -> tuple[str, dict[str, Any]]:
    engine = draw(st.sampled_from(RELEASES))
    options: dict[str, Any] = {
        "gpu": draw(st.sampled_from(GPUS)), "tp": draw(st.sampled_from((1, 2, 4, 8))), "pp": draw(st.sampled_from((1, 2))),
        "max_model_len": draw(st.sampled_from((4096, 8192, 32768))),
        "kv_dtype": "auto" if engine.startswith("trtllm") else draw(st.sampled_from(("auto", "fp8"))),
    }
    if draw(st.booleans()):
        options["max_num_seqs"] = draw(st.sampled_from((64, 256)))
    if engine.startswith("vllm") and draw(st.booleans()):
        options["gpu_memory_utilization"] = draw(st.sampled_from((0.8, 0.95)))
    if engine.startswith("vllm") and draw(st.booleans()):  # LoRA slots: --enable-lora --max-loras --max-lora-rank
        options["max_loras"], options["max_lora_rank"] = draw(st.sampled_from(((1, 16), (4, 64))))
    if engine.startswith("sglang") and draw(st.booleans()):
        options["mem_fraction_static"] = 0.8
    options.update(draw(parallel(engine, options["tp"])))
    return engine, options


@st.composite
def parallel(draw: Any, engine: str, tp: int) -> dict[str, int]:
    """Data and expert parallelism as each engine runs them: vLLM dp engines of tp GPUs, experts over EP = dp × tp
    (or none); SGLang DP attention inside tp, EP within tp. A model without experts refuses EP (no answer)."""
    if engine.startswith("vllm") and draw(st.booleans()):
        dp = draw(st.sampled_from((2, 4)))
        return {"dp": dp, "ep": draw(st.sampled_from((1, dp * tp)))}
    if engine.startswith("sglang") and tp > 1 and draw(st.booleans()):
        return {"dp": draw(st.sampled_from([d for d in (2, 4, 8) if tp % d == 0])),
                "ep": draw(st.sampled_from((1, tp)))}
    return {}


def _numbers(result: CapacityResult) -> tuple[Any, ...]:
    plan = result.plan
    layout = (result.cache.dp, result.cache.ep) if result.cache else None
    return (layout, plan.pools, result.tp, result.pp, result.max_model_len, result.kv_budget_bytes_per_gpu, plan.num_blocks,
            plan.kv_tokens, plan.block_size, plan.page_bytes, plan.max_concurrency, plan.requests_at_max_len,
            plan.refusal.message if plan.refusal else None)


def read_back(written: Written, gpu: str) -> CapacityResult:
    """The written command pasted into `kvplan capacity --gpu GPU --engine RELEASE -- COMMAND`."""
    launch = read_launch(read_command(shlex.split(written.command), written.engine))
    part = launch.part("model")
    question = CapacityRequest(model=load_model(launch.command.model), cache=CacheRequest(),
                               memory=Memory(gpu=gpu))
    assert not part, part  # kvplan writes no --dtype / --revision: the model as loaded
    return plan_capacity(question_of(launch, question), get_engine(written.engine))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), question=questions())
def test_the_command_written_reads_back_to_the_same_plan(model: str, question: tuple[str, dict[str, Any]]) -> None:
    engine, options = question
    try:
        result = capacity(model, engine=engine, **options)
    except KvplanError:  # a layout this model or release refuses (tp over the KV heads, MLA fp8 ...): no answer
        event("refused")
        return
    event("planned" + (" with dp/ep" if options.get("dp", 1) > 1 else ""))
    written = write_launch(result)
    back = read_back(written, options["gpu"])
    assert _numbers(back) == _numbers(result), written.command
    assert write_launch(back).command == written.command  # a fixed point: the same command again


GRID = [(m, e) for m in ("Qwen/Qwen3-8B", "deepseek-ai/DeepSeek-V2-Lite", "google/gemma-3-27b-it") for e in RELEASES]


@pytest.mark.parametrize(("model", "engine"), GRID)
def test_every_flag_written_is_one_the_release_has(model: str, engine: str) -> None:
    result = capacity(model, engine=engine, gpu="H100", tp=2, max_model_len=8192, max_num_seqs=128,
                      max_num_batched_tokens=4096, block_size=64 if engine.startswith(PAGED) else None)
    written = write_launch(result)
    table = flag_table(engine.partition("@")[0], written.release)
    assert written.flags and all(table.has(f) for f in written.flags), written.command
    assert _numbers(read_back(written, "H100")) == _numbers(result), written.command


def test_dp_attention_and_expert_layouts_travel_through_the_command() -> None:
    sgl = capacity("deepseek-ai/DeepSeek-V2-Lite", engine="sglang", gpu="H100", tp=4, dp=4, max_model_len=8192)
    written = write_launch(sgl)
    assert "--enable-dp-attention" in written.flags and written.flags["--dp-size"] == 4
    assert written.layout == {"tp": 4, "pp": 1, "dp": 4, "ep": 1, "dcp": 1, "nodes": 1, "gpus_per_node": 4}
    assert _numbers(read_back(written, "H100")) == _numbers(sgl)
    vllm = capacity("Qwen/Qwen3-30B-A3B", engine="vllm", gpu="H100", tp=2, max_model_len=8192)
    carried = write_launch(vllm, {"dp": 2, "ep": True})
    assert carried.flags["--data-parallel-size"] == 2 and carried.flags["--enable-expert-parallel"] is True
    assert carried.layout["ep"] == 4 and carried.layout["gpus_per_node"] == 4  # EP = DP × TP (vLLM)


def test_a_knob_a_release_has_no_flag_for_is_said_not_written() -> None:
    result = capacity("Qwen/Qwen3-8B", engine="trtllm", gpu="H100", kv_dtype="fp8", max_model_len=8192)
    written = write_launch(result)
    assert not any("dtype" in f for f in written.flags)
    assert written.notes == ("kv_dtype fp8: trtllm snapshot-00209af has no flag for it (trtllm-serve takes it as "
                             "kv_cache_config.dtype in --extra_llm_api_options YAML)",)
    budget = capacity("Qwen/Qwen3-8B", engine="vllm@0.19", kv_budget_bytes=(20 * 2**30,), max_model_len=8192)
    assert write_launch(budget).flags["--kv-cache-memory-bytes"] == 20 * 2**30
    assert "--gpu-memory-utilization" not in write_launch(budget).flags
    old = capacity("Qwen/Qwen3-8B", engine="vllm@0.9", kv_budget_bytes=(20 * 2**30,), max_model_len=8192)
    assert write_launch(old).notes == ("budget 21474836480: vllm 0.9.2 has no flag for it",)  # 0.11 on


@given(st.lists(st.one_of(st.text(), st.sampled_from(["", "'", "a b", "--flag", '{"a":1}', "é", "x=y", "$HOME", "a'b",
                                                     "@%+=:,./-_", "tab\there", "\n"]))))
def test_a_command_is_joined_as_shlex_joins_it(words: list[str]) -> None:
    # Written.command quotes without importing shlex (kvplan.launch.write.quoted): the same text as shlex.join.
    written = Written(engine="vllm", release="0.33.0", argv=tuple(words), flags={}, layout={})
    assert written.command == shlex.join(words)
