"""One request from the command line to the engine: the library refuses what the CLI refuses, with the same
message, and one command's plot and table answer the same question (the `capacity --plot` bug of issue 20)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kvplan
from kvplan.cli.capacity import capacity as capacity_command
from kvplan.cli.expand import error_message

QWEN = "Qwen/Qwen3-8B"

# (the library's keywords, the same question on the command line)
REFUSED = [
    pytest.param(dict(gpu="H100", gpu_memory_utilization=5.0), ["--gpu", "H100", "--gpu-memory-utilization", "5.0"],
                 id="utilization-5"),
    pytest.param(dict(gpu="H100", mem_fraction_static=0.0), ["--gpu", "H100", "--mem-fraction-static", "0"],
                 id="mem-fraction-0"),
    pytest.param(dict(gpu="H100", free_gpu_memory_fraction=1.5), ["--gpu", "H100", "--free-gpu-memory-fraction",
                                                                   "1.5"], id="free-fraction-1.5"),
    pytest.param(dict(tp=0), ["--tp", "0"], id="tp-0"),
    pytest.param(dict(block_size=-1), ["--block-size", "-1"], id="block-size-negative"),
    pytest.param(dict(block_size=0), ["--block-size", "0"], id="block-size-0-for-an-engine"),
    pytest.param(dict(kv_dtype="fp9"), ["--kv-cache-dtype", "fp9"], id="kv-dtype"),
    pytest.param(dict(max_num_seqs=0), ["--max-num-seqs", "0"], id="max-num-seqs-0"),
    pytest.param(dict(quant_group=0), ["--quant-group", "0"], id="quant-group-0"),
    pytest.param(dict(gpu="H900"), ["--gpu", "H900"], id="unknown-gpu"),
    pytest.param(dict(sampler="fast"), ["--sampler", "fast"], id="sampler"),
    # SGLang's DP attention lives inside the tp GPUs; vLLM's --data-parallel-size 3 with tp 4 is 12 GPUs, not a refusal
    pytest.param(dict(dp=3, tp=4, engine="sglang"), ["--engine", "sglang", "--dp", "3", "--tp", "4"],
                 id="dp-not-dividing-tp"),
    pytest.param(dict(ep=3, tp=4, engine="sglang"), ["--engine", "sglang", "--ep", "3", "--tp", "4"],
                 id="ep-not-dividing-tp"),
    pytest.param(dict(ep=3), ["--ep", "3"], id="vllm-ep-not-dp-times-tp"),
]


@pytest.mark.parametrize(("options", "argv"), REFUSED)
def test_the_library_refuses_what_the_cli_refuses_with_its_message(run_cli: Any, options: dict[str, Any],
                                                                     argv: list[str]) -> None:
    with pytest.raises(kvplan.KvplanError) as refused:
        kvplan.capacity(QWEN, **options)
    code, out, err = run_cli("capacity", QWEN, *argv)
    assert code == 2 and out == "", (out, err)
    assert err.strip() == f"kvplan: error: {error_message(refused.value, capacity_command.flags)}"


def test_the_issue_example_is_refused_by_the_library() -> None:
    with pytest.raises(kvplan.InputError, match=r"gpu_memory_utilization must be in \(0, 1\], got 5.0"):
        kvplan.capacity("Qwen/Qwen3-8B", gpu="H100", gpu_memory_utilization=5.0)


def test_the_front_door_names_an_unknown_option() -> None:
    with pytest.raises(kvplan.InputError, match="takes no keyword 'gpu_memory_utilisation'; did you mean "
                                                 "'gpu_memory_utilization'"):
        kvplan.capacity(QWEN, gpu_memory_utilisation=0.5)


def test_the_public_functions_come_from_kvplan_api() -> None:
    """kvplan.capacity, fit, sweep, ...: the typed front doors (kvplan.api) over the planning and workflow code."""
    assert kvplan.fit.__module__ == "kvplan.api.planning" and kvplan.sweep.__module__ == "kvplan.api.workflows"
    assert kvplan.capacity.__module__ == "kvplan.api.planning"


def test_the_capacity_plot_is_the_tables_question(run_cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """--gpu-memory-utilization 0.5 --max-model-len 8192: the table said 21.64 requests and the plot's point
    54.90 (the curve dropped every option but five). Now the curve's point at 8,192 is the table's answer."""
    pytest.importorskip("matplotlib")
    drawn: dict[str, list[tuple[int, float]]] = {}
    monkeypatch.setattr("kvplan.render.plot.plot_capacity", lambda series, path, title: drawn.update(series))
    args = ["capacity", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--gpu-memory-utilization", "0.5",
            "--max-model-len", "8192", "--max-num-seqs", "64"]
    code, out, err = run_cli(*args, "--json", "--plot", str(tmp_path / "c.png"))
    assert code == 0, err
    table = json.loads(out)["requests_at_max_model_len"]
    assert dict(drawn["vllm"])[8192] == table
    assert table < 30  # the 0.5 utilization reached the curve: at 0.92 it is over 50
