"""Plots: the file is written, is a real PNG/SVG of the promised pixel size, and the numbers behind
the stacked bars add up to the size result."""

from __future__ import annotations

import struct

import pytest

from kvplan import kv_cache
from kvplan.render.plot import DPI, HEIGHT_PX, WIDTH_PX, group_bytes, plot_capacity, plot_layer_groups
from kvplan.workflows.capacity_curve import capacity_curve

pytest.importorskip("matplotlib")


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # IHDR: the first chunk, right after the signature
    return width, height


def test_sweep_memory_plot_png(run_cli, tmp_path):
    out = tmp_path / "memory.png"
    code, _, err = run_cli("sweep", "Qwen/Qwen3-32B", "--seq-len", "1k..32k", "--tp", "1,2", "--kv-dtype", "bf16,fp8",
                           "--plot", str(out), "--gpu", "H100", "--kv-budget", "40GiB")
    assert code == 0, err
    assert out.stat().st_size > 10_000
    assert png_size(out) == (WIDTH_PX, HEIGHT_PX)


def test_sweep_memory_plot_svg(run_cli, tmp_path):
    out = tmp_path / "memory.svg"
    code, _, err = run_cli("sweep", "meta-llama/Llama-3.1-8B", "--seq-len", "1k..8k", "--plot", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "<svg" in text and "KV cache per GPU (GiB)" in text
    assert f'width="{WIDTH_PX * 72 // DPI}pt"' in text  # SVG sizes are in points: 1000 px at 100 dpi = 720 pt


def test_sweep_capacity_plot(run_cli, tmp_path):
    out = tmp_path / "capacity.png"
    code, _, err = run_cli("sweep", "meta-llama/Llama-3.1-8B", "--seq-len", "4k..32k", "--engine", "vllm,sglang",
                           "--kv-budget", "20GiB", "--plot", str(out))
    assert code == 0, err
    assert png_size(out) == (WIDTH_PX, HEIGHT_PX)


def test_capacity_curve_library(tmp_path):
    # 20 GiB of KV / 131,072 B per token (Llama-3.1-8B bf16) = 163,840 tokens; vLLM concurrency at 4k = 40
    curve = capacity_curve("meta-llama/Llama-3.1-8B", max_model_lens=(4096, 8192), engines=("vllm",),
                           kv_budget_bytes=(20 * 2**30,))
    assert [p.max_concurrency for p in curve.points] == [40.0, 20.0]
    out = plot_capacity(curve.series(), tmp_path / "c.png", title="capacity")
    assert png_size(out) == (WIDTH_PX, HEIGHT_PX)


def test_compare_layer_group_bars(run_cli, tmp_path):
    out = tmp_path / "groups.png"
    code, _, err = run_cli("compare", "openai/gpt-oss-20b", "Qwen/Qwen3-Next-80B-A3B-Thinking",
                           "google/gemma-2-9b-it", "--seq-len", "8k", "--plot", str(out))
    assert code == 0, err
    assert png_size(out) == (WIDTH_PX, HEIGHT_PX)


@pytest.mark.parametrize(("name", "options"), [
    pytest.param("openai/gpt-oss-20b", {}, id="gpt-oss-sliding"),
    pytest.param("Qwen/Qwen3-Next-80B-A3B-Thinking", {"tp": 2}, id="qwen3-next-linear-tp2"),
    pytest.param("google/gemma-2-9b-it", {"pp": 2}, id="gemma2-pp2"),
    pytest.param("deepseek-ai/DeepSeek-V3", {"tp": 8, "dcp": 8}, id="deepseek-dcp8"),
])
def test_group_bytes_sum_to_sequence_bytes(name, options):
    r = kv_cache(name, max_model_len=5000, **options)
    assert sum(group_bytes(r).values()) == r.bytes_per_sequence_per_gpu


def test_group_bytes_gpt_oss():
    # 12 sliding layers keep 128 tokens, 12 full layers keep 8,192: 2,048 B per token per layer
    groups = group_bytes(kv_cache("openai/gpt-oss-20b", max_model_len=8192))
    assert groups == {"sliding (128 tokens)": 12 * 2048 * 128, "full": 12 * 2048 * 8192}


def test_layer_group_plot_library(tmp_path):
    results = [kv_cache(n, max_model_len=4096) for n in ("openai/gpt-oss-20b", "meta-llama/Llama-3.1-8B")]
    out = plot_layer_groups(results, tmp_path / "g.svg", title="groups")
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("name", ["plot.jpg", "missing-dir/plot.png"])
def test_bad_plot_path(run_cli, tmp_path, name):
    code, _, err = run_cli("compare", "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B", "--seq-len", "1k", "--plot",
                           str(tmp_path / name))
    assert code == 2 and err.startswith("kvplan: error: plot")


def test_capacity_plot_for_the_capacity_command(tmp_path):
    # what `kvplan capacity ... --plot FILE` draws: 1k, 2k, … up to max_model_len
    from kvplan.workflows.capacity_curve import capacity_curve, context_lengths

    assert context_lengths(40960) == (1024, 2048, 4096, 8192, 16384, 32768, 40960)
    out = tmp_path / "capacity.png"
    curve = capacity_curve("meta-llama/Llama-3.1-8B", max_model_lens=context_lengths(16384), engines=("vllm", "trtllm"),
                           kv_budget_bytes=(20 * 2**30,))
    plot_capacity(curve.series(labelled=False), out, title="Max concurrency vs context")
    assert len(curve.points) == 2 * 5
    assert png_size(out) == (WIDTH_PX, HEIGHT_PX)
