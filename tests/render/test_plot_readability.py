"""What the plots say, read back from SVG (matplotlib writes each text as a comment next to its glyphs):
the memory plot counts the weights and marks lengths past the model's maximum, the concurrency plot labels
its values, small layer-group segments stay visible and labelled, and plot commands say what they wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvplan import kv_cache
from kvplan.render.plot import MIN_SEGMENT, _stack, group_bytes, log2_ticks, plot_capacity

pytest.importorskip("matplotlib")
GIB = 2**30


def test_memory_plot_subtracts_the_weights_and_marks_the_model_maximum(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "memory.svg"
    code, stdout, err = run_cli("sweep", "meta-llama/Llama-3.1-70B", "--seq-len", "4k..256k", "--tp", "1,4",
                                "--gpu", "H100", "--plot", str(out))
    assert code == 0, err
    text = out.read_text()
    # tp 1 bf16: 70.55 B parameters × 2 B = 131 GiB of weights > 79.18 GiB: no room for KV at all
    assert "tp1 pp1: the weights alone exceed H100-SXM memory" in text
    # tp 4: 79.18 GiB − a quarter of the weights (about 33 GiB) leaves about 46 GiB for the cache
    assert "left for KV after weights, tp4 pp1 (46." in text
    assert "H100-SXM memory (79.2 GiB), weights included" in text
    assert "beyond meta-llama/Llama-3.1-70B's max length (131,072 tokens)" in text
    assert "sweep: 14 points" in stdout and f"kvplan: wrote {out}" in err  # the table as well as the plot


def test_the_room_left_by_the_weights(tmp_path: Path) -> None:
    from kvplan.cli.sweep import _room
    from kvplan.planning.gpus import lookup_gpu
    from kvplan.planning.weights import weight_bytes_per_gpu
    from kvplan.workflows.sweep import sweep

    result = sweep(["meta-llama/Llama-3.1-70B"], max_model_lens=(4096,), tps=(1, 4))
    memory = lookup_gpu("H100").memory_bytes
    room = _room(result, memory)
    model = kv_cache("meta-llama/Llama-3.1-70B", max_model_len=1).layout.model
    assert room == {"tp1 pp1": memory - weight_bytes_per_gpu(model, tp=1), "tp4 pp1": memory - weight_bytes_per_gpu(
        model, tp=4)}
    assert room["tp1 pp1"] < 0 < room["tp4 pp1"]


def test_concurrency_plot_labels_its_values(tmp_path: Path) -> None:
    out = plot_capacity({"vllm tp4": [(32768, 14.91), (65536, 7.46), (131072, 3.73)]}, tmp_path / "c.svg",
                        title="concurrency")
    text = out.read_text()
    assert "14.91" in text and "7.46" in text and "3.73" in text
    assert log2_ticks([3.73, 14.91]) == [2.0, 4.0, 8.0, 16.0]
    # a narrow range (5 to 7) gets the 1.5× steps too, not a single power of two
    assert log2_ticks([5.0, 7.0]) == [4.0, 6.0, 8.0]


def test_small_layer_group_segments_stay_visible_and_labelled() -> None:
    from matplotlib.figure import Figure

    results = [kv_cache(m, max_model_len=131072) for m in ("openai/gpt-oss-20b", "Qwen/Qwen3-Next-80B-A3B-Thinking")]
    per_model = [group_bytes(r) for r in results]
    ax = Figure().add_subplot()
    totals, enlarged = _stack(ax, per_model)
    heights = [patch.get_height() for patch in ax.patches if patch.get_height() > 0]
    assert min(heights) >= MIN_SEGMENT * max(totals) - 1e-9  # nothing too thin to see
    assert enlarged  # gpt-oss' sliding layers (128 tokens) and Qwen3-Next's linear state are tiny at 128k
    labels = [t.get_text() for t in ax.texts]
    assert any(label.startswith("sliding (128 tokens): ") for label in labels)
    assert any(label.startswith("linear: ") for label in labels)
    assert totals == pytest.approx([sum(g.values()) / GIB for g in per_model])  # the totals are the true sums


def test_capacity_plot_says_what_it_wrote(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "capacity.png"
    code, stdout, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--plot", str(out))
    assert code == 0, err
    assert out.exists() and f"kvplan: wrote {out}" in err and "KV tokens" in stdout


def _label_boxes(fig: Any) -> tuple[list[Any], list[Any], Any]:
    """(the value labels' boxes, the markers' boxes, the axes' box), measured by the figure's own renderer."""
    from matplotlib.transforms import Bbox

    from kvplan.render.plot import CAPACITY_MARKER_PT

    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t.get_window_extent(renderer) for t in ax.texts]
    radius = CAPACITY_MARKER_PT / 2 * fig.dpi / 72
    markers = [Bbox.from_extents(x - radius, y - radius, x + radius, y + radius)
               for line in ax.get_lines() for x, y in ax.transData.transform(line.get_xydata())]
    return labels, markers, ax.get_window_extent(renderer)


CROWDED = {  # four engines whose values nearly coincide at every length (issue 25: labels drawn over each other)
    "vllm tp1": [(4096, 109.79), (8192, 54.89), (16384, 27.44), (32768, 13.72), (65536, 6.86), (131072, 3.43)],
    "sglang tp1": [(4096, 100.0), (8192, 50.0), (16384, 25.0), (32768, 12.0), (65536, 6.0), (131072, 3.0)],
    "vllm tp1 other": [(4096, 96.33), (8192, 48.16), (16384, 24.08), (32768, 12.04)],
    "sglang tp1 other": [(4096, 88.0), (8192, 44.0), (16384, 22.0), (32768, 11.0), (65536, 5.0), (131072, 2.0)],
}


@pytest.mark.parametrize("series", [CROWDED, {"vllm tp4": [(32768, 14.91), (65536, 7.46), (131072, 3.73)]}])
def test_value_labels_overlap_no_label_and_no_marker(series: dict[str, list[tuple[int, float]]],
                                                     tmp_path: Path) -> None:
    from kvplan.render.plot import capacity_figure

    fig = capacity_figure(series, title="concurrency")
    labels, markers, axes = _label_boxes(fig)
    points = sum(len(p) for p in series.values())
    assert len(labels) == points  # every value found a clear spot here
    for i, box in enumerate(labels):
        assert not any(box.overlaps(other) for other in labels[i + 1:]), (i, box)
        assert not any(box.overlaps(m) for m in markers), (i, box)
        assert axes.x0 <= box.x0 and box.x1 <= axes.x1 and axes.y0 <= box.y0 and box.y1 <= axes.y1
    before = fig.axes[0].get_position().bounds
    fig.savefig(tmp_path / "c.svg")  # saving keeps the layout the labels were placed in
    assert fig.axes[0].get_position().bounds == before
