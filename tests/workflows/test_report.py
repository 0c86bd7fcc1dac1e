"""The report workflow: engines and KV dtypes as asked, the TP axis, the curves, and probe rows checked
against the size answer (real H100 probe files in tests/data/probe)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kvplan.errors import InputError
from kvplan.workflows.probe_file import check_probe, measured_bytes_per_token
from kvplan.workflows.report import engine_names, report, tp_axis

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT / "tests" / "data" / "probe"


def probe(name: str) -> dict[str, Any]:
    return check_probe(json.loads((PROBES / name).read_text()), name)


@pytest.mark.parametrize(("asked", "names"), [
    (("all",), ("vllm", "sglang", "trtllm", "hf")),
    (("hf,vllm",), ("vllm", "hf")),
    (("trt-llm", "transformers", "vllm,vllm"), ("vllm", "trtllm", "hf")),
])
def test_engine_names(asked: tuple[str, ...], names: tuple[str, ...]) -> None:
    assert engine_names(asked) == names


@pytest.mark.parametrize("asked", [(), ("",), (" , ",)])
def test_no_engine_is_an_error(asked: tuple[str, ...]) -> None:
    with pytest.raises(InputError, match="no engine given"):
        engine_names(asked)


def test_tp_axis(model: Any) -> None:
    assert tp_axis(model("meta-llama/Llama-3.1-70B"), 4) == (1, 2, 4, 8)  # 64 heads
    assert tp_axis(model("deepseek-ai/DeepSeek-V3"), 16) == (1, 2, 4, 8, 16)
    assert tp_axis(model("Qwen/Qwen3-8B"), 1) == (1, 2, 4, 8)  # 32 heads
    assert tp_axis(model("tiiuae/falcon-7b"), 1) == (1,)  # 71 heads: no TP but 1 divides them


def test_one_answer_per_kv_dtype_and_engine() -> None:
    r = report("meta-llama/Llama-3.1-8B", kv_budget_bytes=(20 * 2**30,), engines=("vllm", "sglang"),
                                                       kv_dtypes=("auto", "bf16", "fp8"))
    assert [s.layout.kv_dtype.name for s in r.sizes] == ["bf16", "fp8"]  # auto is bf16 here: once
    assert [(c.plan.kv_dtype, c.engine) for c in r.capacities] == [
        ("bf16", "vllm"), ("bf16", "sglang"), ("fp8", "vllm"), ("fp8", "sglang")]
    assert r.max_model_len == 131_072 and r.config_origin.startswith("bundled with kvplan: configs/")
    # 20 GiB // (32 layers × 16 tokens × 8 heads × 256 × 2 B = 2,097,152 B) = 10,240 blocks; a 131,072-token
    # request takes 8,192 of them: 1.25 concurrent requests, the last point of the vLLM curve
    vllm = r.context_curves[0].series(labelled=False)["vllm"]
    assert vllm[-1] == (131_072, 10_240 / 8_192) and [n for n, _ in vllm][:3] == [1024, 2048, 4096]
    memory = dict(r.memory_curves)["bf16"]
    assert memory[-1].bytes_per_sequence_per_gpu == 131_072 * 131_072  # 131,072 B per token × 131,072 tokens


def test_the_tp_curve_plans_each_tp() -> None:
    r = report("meta-llama/Llama-3.1-70B", gpu="H100", tp=4, max_model_len=32768, engines=("vllm",))
    points = {t.tp: t.point for t in dict(r.tp_curves)["bf16"]}
    assert points[4].kv_tokens == next(c.plan.kv_tokens for c in r.capacities)  # the plan itself, at tp 4
    assert points[1].requests_at_max_len == 0  # 70B of bf16 weights leave one H100 no KV budget
    assert points[8].requests_at_max_len > points[4].requests_at_max_len


def test_probe_rows_of_this_model_hold_its_bytes_per_token() -> None:
    probes = (probe("h100-llama70b-dsv3-qwen3-8b-bf16.json"), probe("h100-llama70b-dsv3-qwen3-8b-fp8.json"))
    r = report("meta-llama/Llama-3.1-70B", gpu="H100", tp=4, max_model_len=32768, engines=("vllm",),
                                                         kv_dtypes=("bf16", "fp8"), probes=probes)
    by_row = {(c.probe, probes[c.probe]["results"][c.result]["model"]): c for c in r.probe_checks}
    bf16, fp8 = by_row[(0, "meta-llama/Llama-3.1-70B")], by_row[(1, "meta-llama/Llama-3.1-70B")]
    # 10,737,418,240 B allocated for 2,048 blocks × 16 tokens = 327,680 B per token: 80 layers × 8 × 256 × 2 B
    assert (bf16.same_model, bf16.measured_bytes_per_token, bf16.kvplan_bytes_per_token) == (True, 327_680, 327_680)
    assert (fp8.measured_bytes_per_token, fp8.kvplan_bytes_per_token) == (163_840, 163_840)
    other = by_row[(0, "deepseek-ai/DeepSeek-V3")]
    assert other.same_model is False and other.kvplan_bytes_per_token is None


def test_a_folder_with_a_bundled_config_is_that_model(tmp_path: Path) -> None:
    shutil.copy(ROOT / "configs" / "Qwen" / "Qwen3-8B" / "config.json", tmp_path / "config.json")
    r = report(str(tmp_path), kv_budget_bytes=(2**30,), engines=("vllm",), probes=(probe("h100-default.json"),))
    same = {probe("h100-default.json")["results"][c.result]["model"]: c.same_model for c in r.probe_checks}
    assert same["Qwen/Qwen3-8B"] is True and same["meta-llama/Llama-3.1-8B"] is False
    assert r.config_origin == f"file: {tmp_path / 'config.json'}"


def test_linear_state_is_left_out_of_the_measured_bytes_per_token() -> None:
    row = next(r for r in probe("h100-default.json")["results"] if r["model"].startswith("Qwen/Qwen3-Next"))
    r = report(row["model"], kv_budget_bytes=(2**30,), engines=("vllm",),
                                           probes=(probe("h100-default.json"),))
    check = next(c for c in r.probe_checks if c.same_model)
    # 12 full layers × 2 heads × 512 × 2 B = 24,576 B per token; the 36 linear layers' state is per sequence
    assert measured_bytes_per_token(row) == check.kvplan_bytes_per_token == 24_576
    assert row["measured_bytes"] > 24_576 * row["num_blocks"] * row["block_size"]


def test_a_probe_at_another_tp_is_not_compared() -> None:
    r = report("meta-llama/Llama-3.1-8B", kv_budget_bytes=(2**30,), engines=("vllm",), tp=2,
                                                        probes=(probe("h100-default.json"),))
    check = next(c for c in r.probe_checks if c.same_model)  # the probe ran at tp 1: the whole model
    assert check.kvplan_bytes_per_token == 131_072 and "tp 1" in check.compared_with
