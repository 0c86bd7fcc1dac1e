"""`kvplan probe` end to end on CPU: the JSON contract, exit codes and error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

CONTRACT_KEYS = {"model", "tp_rank", "kv_dtype", "num_blocks", "block_size", "predicted_bytes", "measured_bytes",
                 "driver_bytes", "error", "kernel_check", "write_gbps", "decode_gbps"}


@pytest.fixture(scope="module")
def default_run():
    """The CI command itself, once: `kvplan probe --device cpu --json` (default model set)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-m", "kvplan", "probe", "--device", "cpu", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    return proc


@pytest.mark.slow
def test_default_set_passes_with_kernels_checked(default_run):
    assert default_run.returncode == 0, default_run.stderr
    payload = json.loads(default_run.stdout)
    assert payload["device"] == "cpu" and payload["ok"] is True
    rows = payload["results"]
    assert all(set(r) >= CONTRACT_KEYS for r in rows)
    kinds = {g["kind"] for r in rows for g in r["groups"]}
    assert {"full", "sliding", "mla", "linear"} <= kinds
    assert {"fp8", "int4"} <= {r["kv_dtype"] for r in rows}
    assert "tiiuae/falcon-7b" in {r["model"] for r in rows}  # MQA
    for r in rows:
        assert r["measured_bytes"] == r["predicted_bytes"] > 0 and r["error"] == 0.0
        assert r["kernel_check"] == "pass"
        assert r["write_gbps"] is None and r["decode_gbps"] is None and r["driver_bytes"] is None  # CPU


def test_one_model_json(run_cli):
    code, out, err = run_cli("probe", "--device", "cpu", "--model", "meta-llama/Llama-3.2-1B", "--blocks", "4",
                             "--kv-dtype", "fp8", "--json")
    assert code == 0, err
    (row,) = json.loads(out)["results"]
    # 16 layers × 4 blocks × 16 tokens × 8 heads × (64 + 64) × 1 B (fp8 as uint8) = 1,048,576
    assert row["predicted_bytes"] == row["measured_bytes"] == 1_048_576
    assert (row["kv_dtype"], row["num_blocks"], row["block_size"], row["tp_rank"]) == ("fp8", 4, 16, 0)
    assert row["kernel_check"] == "pass"


def test_table_output(run_cli):
    code, out, _ = run_cli("probe", "--device", "cpu", "-m", "Qwen/Qwen3-8B", "--blocks", "2", "--no-kernel-check")
    assert code == 0
    assert "Qwen/Qwen3-8B" in out and "kernel check not requested" in out


def test_error_over_tolerance_exits_1(run_cli, monkeypatch):
    import kvplan.probe.run as run
    from kvplan.probe.measure import Measured

    real = run.allocate_measured

    def off_by_one_block(shape, device, alloc=None):
        layers, got = real(shape, device, alloc)
        return layers, Measured(got.measured_bytes + 1, None, None)

    monkeypatch.setattr(run, "allocate_measured", off_by_one_block)
    args = ("probe", "--device", "cpu", "-m", "meta-llama/Llama-3.2-1B", "--blocks", "2", "--no-kernel-check",
            "--json")
    code, out, _ = run_cli(*args)
    assert code == 1 and json.loads(out)["ok"] is False
    code, _, _ = run_cli(*args, "--tolerance", "0.01")
    assert code == 0


def test_gpu_without_cuda_exits_2(run_cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible")
    code, out, err = run_cli("probe", "--gpu", "0")
    assert code == 2 and "no CUDA device visible; use --device cpu" in err and not out


def test_capacity_needs_cuda(run_cli):
    code, _, err = run_cli("probe", "--device", "cpu", "--capacity", "-m", "Qwen/Qwen3-8B")
    assert code == 2 and "--capacity needs a CUDA device" in err


@pytest.mark.parametrize(("args", "message"), [
    (("--layout", "ppl9"), "unknown --layout"),
    (("--blocks", "0"), "--blocks"),
    (("-m", "deepseek-ai/DeepSeek-V3", "--layout", "ppl0"), "use --layout vllm"),
    (("-m", "tiiuae/falcon-7b", "--tp", "2"), "tp 2 does not divide the 71 attention heads"),
])
def test_bad_input_exits_2(run_cli, args, message):
    code, _, err = run_cli("probe", "--device", "cpu", *args)
    assert code == 2 and message in err


def test_missing_torch_names_the_extra(run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    code, _, err = run_cli("probe", "--device", "cpu")
    assert code == 2 and "pip install 'kvplan[probe]'" in err


def test_importing_the_cli_does_not_import_torch():
    code = "import sys, kvplan.cli, kvplan.probe; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize(("layout", "kv_dtype", "expected_bytes"), [
    # bf16: 16 layers × 4 blocks × 16 tokens × 8 heads × (64 + 64) × 2 B = 2,097,152 (decode checked too)
    ("ppl0", "auto", 2_097_152), ("ppl2", "auto", 2_097_152),
    # int8 + fp16 scale per 8: 64 + 16 = 80 B per 64-wide head; 16 × 4 × 16 × 8 heads × 2 × 80 B = 1,310,720
    ("ppl1", "int8", 1_310_720), ("ppl3", "int8", 1_310_720),
])
def test_ppl_layouts_pass_the_kernel_check(run_cli, layout, kv_dtype, expected_bytes):
    code, out, err = run_cli("probe", "--device", "cpu", "-m", "meta-llama/Llama-3.2-1B", "--blocks", "4",
                             "--layout", layout, "--kv-dtype", kv_dtype, "--json")
    assert code == 0, err
    (row,) = json.loads(out)["results"]
    assert row["layout"] == layout and row["measured_bytes"] == row["predicted_bytes"] == expected_bytes
    assert row["kernel_check"] == "pass"
    assert not any("decode" in n for n in row["kernel_notes"])  # int8 too: dequantized in the decode kernel
