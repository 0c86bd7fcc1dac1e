"""Plots (the optional extra `plot`: matplotlib, imported only when a plot is drawn).

Three kinds, each written to PNG or SVG by the file's suffix:

- ``plot_memory``: KV memory per GPU vs context length, one line per configuration, with the
  GPU's memory and the KV budget as horizontal lines;
- ``plot_capacity``: max concurrency vs context length, one line per configuration;
- ``plot_layer_groups``: one bar per model, stacked by layer group (full / sliding / linear …), so
  hybrids show where their bytes go.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot, no global backend state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvplan.errors import InputError
from kvplan.render.plot_labels import Series, label_points
from kvplan.units import GIB

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from kvplan.formulas.sizing import KvCacheResult
    from kvplan.workflows.sweep import Sweep

FORMATS = (".png", ".svg")
WIDTH_PX, HEIGHT_PX, DPI = 1000, 600, 100
MARKERS = "osD^vPX*<>"  # lines that coincide (e.g. tp4 fp8 and tp8 bf16) stay distinguishable
LINESTYLES = ("-", "--", "-.", (0, (1, 1)))
MISSING_MATPLOTLIB = "plots need matplotlib: pip install 'kvplan[plot]'"
MAX_LEGEND_LINES = 12  # past this a legend would squeeze the axes away: later lines go unlabelled


def _label(i: int, label: str, total: int) -> str:
    if i < MAX_LEGEND_LINES - 1 or total <= MAX_LEGEND_LINES:
        return label
    return f"… {total - i} more lines" if i == MAX_LEGEND_LINES - 1 else "_nolegend_"


def check_plot_path(path: str | Path) -> Path:
    """Refuse, before any work is done, a suffix we cannot write, a folder that is not there, and a missing
    matplotlib (looked up, not imported)."""
    import importlib.util

    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"plot file {str(out)!r} must end in .png or .svg")
    if not out.parent.is_dir():
        raise InputError(f"plot folder {str(out.parent)!r} does not exist")
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError(MISSING_MATPLOTLIB)
    return out


def _legend(fig: Figure, ax: Axes) -> None:
    """Below the axes, clear of the lines; fewer columns as the labels get longer, so none is cut at the edge."""
    labels = [label for label in ax.get_legend_handles_labels()[1] if not label.startswith("_")]
    widest = max((len(label) for label in labels), default=0)
    columns = 1 if widest > 75 else 2 if widest > 40 else 3
    fig.legend(fontsize="small", loc="outside lower center", ncols=max(1, min(columns, len(labels))))


def _figure() -> tuple[Figure, Axes]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError(MISSING_MATPLOTLIB) from None
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _save(fig: Figure, path: str | Path) -> Path:
    out = check_plot_path(path)
    try:
        fig.savefig(out, dpi=DPI, format=out.suffix.lower().lstrip("."))
    except OSError as exc:
        raise InputError(f"cannot write the plot {str(out)!r}: {exc.strerror or exc}") from None
    return out


def _tokens_label(tokens: float, _pos: Any = None) -> str:
    t = int(tokens)
    if t >= 1024 and t % 1024 == 0:
        return f"{t // 1024}k"
    return f"{t:,}"


def _context_axis(ax: Axes, xs: Sequence[int]) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xlabel("context length (tokens)")
    if len(set(xs)) > 1 and max(xs) / min(xs) >= 8:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(xs)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens_label))
    ax.grid(True, which="major", alpha=0.3)


def memory_series(result: Sweep) -> dict[str, list[tuple[int, float]]]:
    """Sweep rows -> one line per (model, tp, pp, dtype, batch): total KV bytes per GPU vs seq_len."""
    col = {name: i for i, name in enumerate(result.columns)}
    models = {row[col["model"]] for row in result.rows}
    series: dict[str, list[tuple[int, float]]] = {}
    for row in result.rows:
        label = (f"{row[col['model']]} " if len(models) > 1 else "") + (
            f"tp{row[col['tp']]} pp{row[col['pp']]} {row[col['kv_dtype']]} batch {row[col['batch']]}")
        series.setdefault(label, []).append((row[col["seq_len"]], row[col["total_bytes_per_gpu"]]))
    return series


def capacity_series(result: Sweep) -> dict[str, list[tuple[int, float]]]:
    """Sweep rows with engine columns -> one line per (model, tp, pp, dtype, engine) of requests vs seq_len."""
    col = {name: i for i, name in enumerate(result.columns)}
    models = {row[col["model"]] for row in result.rows}
    series: dict[str, list[tuple[int, float]]] = {}
    for row in result.rows:
        requests = row[col["requests_at_max_len"]]
        if requests is None:
            continue
        label = (f"{row[col['model']]} " if len(models) > 1 else "") + (
            f"{row[col['engine']]} tp{row[col['tp']]} pp{row[col['pp']]} {row[col['kv_dtype']]}")
        points = series.setdefault(label, [])
        if not points or points[-1][0] != row[col["seq_len"]]:  # one point per seq_len, whatever the batch
            points.append((row[col["seq_len"]], requests))
    return series


def _memory_limits(ax: Axes, gpu_name: str | None, gpu_memory_bytes: int | None, kv_budget_bytes: int | None,
                   room_bytes: Mapping[str, int]) -> None:
    """Horizontal lines: the GPU's memory, what the weights leave of it for the KV cache (per layout), the
    KV budget. A layout whose weights alone exceed the memory gets a legend entry saying so."""
    gpu = gpu_name or "GPU"
    if gpu_memory_bytes:
        ax.axhline(gpu_memory_bytes / GIB, color="gray", linewidth=1,
                   label=f"{gpu} memory ({gpu_memory_bytes / GIB:,.1f} GiB), weights included")
    for i, (label, room) in enumerate(room_bytes.items()):
        if room > 0:
            ax.axhline(room / GIB, color="black", linestyle=LINESTYLES[(i + 1) % len(LINESTYLES)],
                       label=f"left for KV after weights, {label} ({room / GIB:,.1f} GiB)")
        else:
            ax.plot([], [], " ", label=f"{label}: the weights alone exceed {gpu} memory")
    if kv_budget_bytes:
        ax.axhline(kv_budget_bytes / GIB, color="red", linestyle=":",
                   label=f"KV budget ({kv_budget_bytes / GIB:,.1f} GiB)")


def _beyond_max_length(ax: Axes, max_lengths: Mapping[str, int], xs: Sequence[int]) -> None:
    """Shade the contexts past each model's maximum length (the engines refuse them)."""
    for i, (model, max_len) in enumerate(sorted(max_lengths.items(), key=lambda kv: kv[1])):
        if xs and max_len < max(xs):
            ax.axvspan(max_len, max(xs), color="gray", alpha=0.08 + 0.07 * (i == 0), linewidth=0,
                       label=f"beyond {model}'s max length ({max_len:,} tokens)")


def plot_memory(series: Series, path: str | Path, *, title: str, gpu_name: str | None = None,
                gpu_memory_bytes: int | None = None, kv_budget_bytes: int | None = None,
                room_bytes: Mapping[str, int] | None = None, max_lengths: Mapping[str, int] | None = None) -> Path:
    """KV bytes per GPU (GiB) vs context, with the GPU memory, the room the weights leave for KV (`room_bytes`:
    label -> memory − weights) and the KV budget as horizontal lines; contexts past `max_lengths` shaded."""
    fig, ax = _figure()
    xs: list[int] = []
    for i, (label, points) in enumerate(series.items()):
        pts = sorted(points)
        xs += [x for x, _ in pts]
        ax.plot([x for x, _ in pts], [y / GIB for _, y in pts], marker=MARKERS[i % len(MARKERS)],
                linestyle=LINESTYLES[i % len(LINESTYLES)], markersize=4 + 2 * (i % 2),
                fillstyle="full" if i % 2 else "none", label=_label(i, label, len(series)))
    _memory_limits(ax, gpu_name, gpu_memory_bytes, kv_budget_bytes, room_bytes or {})
    _beyond_max_length(ax, max_lengths or {}, xs)
    _context_axis(ax, xs)
    ys = [y for points in series.values() for _, y in points if y > 0]
    if ys and max(ys) >= 64 * min(ys):  # spans decades: a log axis keeps short contexts readable
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.0f}" if y >= 1 else f"{y:.3g}"))
    ax.set_ylabel("KV cache per GPU (GiB)")
    ax.set_title(title, wrap=True)
    _legend(fig, ax)
    return _save(fig, path)


def log2_ticks(values: Sequence[float]) -> list[float]:
    """Ticks for a log-2 axis over `values`: the powers of two around them, and the 1.5× steps between when
    fewer than four powers fall in the range (a narrow range would otherwise show one label or none)."""
    import math

    lo, hi = math.floor(math.log2(min(values))), math.ceil(math.log2(max(values)))
    ticks = [2.0**k for k in range(lo, hi + 1)]
    if len(ticks) < 4:
        ticks = sorted(ticks + [1.5 * t for t in ticks[:-1]])
    return ticks


CAPACITY_MARKER_PT = 4


def plot_capacity(series: Series, path: str | Path, *, title: str) -> Path:
    """Max concurrency (requests) vs context length, one line per configuration, values labelled."""
    return _save(capacity_figure(series, title=title), path)


def capacity_figure(series: Series, *, title: str) -> Figure:
    """The concurrency plot, drawn (its value labels placed) but not saved."""
    fig, ax = _figure()
    xs: list[int] = []
    for i, (label, points) in enumerate(series.items()):
        pts = sorted(points)
        xs += [x for x, _ in pts]
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker=MARKERS[i % len(MARKERS)],
                markersize=CAPACITY_MARKER_PT,
                linestyle=LINESTYLES[i % len(LINESTYLES)], label=_label(i, label, len(series)))
    from matplotlib.ticker import FuncFormatter, NullFormatter

    _context_axis(ax, xs)
    ax.set_yscale("log", base=2)  # a request that does not fit (0) is left out of its line
    ys = [y for points in series.values() for _, y in points if y > 0]
    if ys:
        ax.set_yticks(log2_ticks(ys))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.4g}"))
    ax.set_ylabel("max concurrency (requests of that length)")
    ax.set_title(title)
    _legend(fig, ax)
    label_points(fig, ax, series, CAPACITY_MARKER_PT)
    return fig


def group_bytes(result: KvCacheResult) -> dict[str, int]:
    """Bytes per sequence on the most loaded GPU, by layer group; they sum to bytes_per_sequence_per_gpu."""
    tokens, stage = result.tokens_per_gpu, result.heaviest_stage
    out: dict[str, int] = {}
    for g in result.layout.groups:
        layers = g.stage_layers[stage]
        held = tokens if g.token_limit is None else min(tokens, g.token_limit)
        label = g.spec.kind if not g.token_limit else f"{g.spec.kind} ({g.token_limit:,} tokens)"
        value = layers * (g.bytes_per_token_per_layer_per_gpu * held + g.state_bytes_per_layer_per_gpu)
        out[label] = out.get(label, 0) + value
    return out


MIN_SEGMENT = 0.02  # of the tallest bar: a smaller segment (a window layer, a linear state) is drawn this tall
SMALL_SEGMENT = 0.10  # segments under this share of the tallest bar get their value written beside them


def _wrapped_name(model_id: str) -> str:
    """`Qwen/Qwen3-Next-80B-A3B-Thinking` -> two lines, so long ids do not run into each other or the edge."""
    org, slash, name = model_id.partition("/")
    return f"{org}/\n{name}" if slash and len(model_id) > 20 else model_id


def _stack(ax: Axes, per_model: list[dict[str, int]]) -> tuple[list[float], bool]:
    """Stacked segments, each at least MIN_SEGMENT of the tallest bar; small ones labelled with their value.
    Returns the true totals (GiB) and whether any segment was drawn taller than it is."""
    tallest = max((sum(g.values()) for g in per_model), default=0) / GIB or 1.0
    kinds = list(dict.fromkeys(k for groups in per_model for k in groups))
    bottoms, totals, enlarged = [0.0] * len(per_model), [0.0] * len(per_model), False
    for kind in kinds:
        actual = [groups.get(kind, 0) / GIB for groups in per_model]
        drawn = [max(a, MIN_SEGMENT * tallest) if a > 0 else 0.0 for a in actual]
        ax.bar(range(len(per_model)), drawn, bottom=bottoms, label=kind, width=0.6)
        for x, (a, d, b) in enumerate(zip(actual, drawn, bottoms, strict=True)):
            if 0 < a < SMALL_SEGMENT * tallest:
                ax.annotate(f"{kind}: {a:,.3g} GiB", (x + 0.32, b + d / 2), va="center", fontsize="x-small")
        enlarged |= any(d > a for a, d in zip(actual, drawn, strict=True))
        bottoms = [b + d for b, d in zip(bottoms, drawn, strict=True)]
        totals = [t + a for t, a in zip(totals, actual, strict=True)]
    for x, (top, total) in enumerate(zip(bottoms, totals, strict=True)):
        ax.annotate(f"{total:,.2f} GiB", (x, top), ha="center", va="bottom", fontsize="small",
                    xytext=(0, 2), textcoords="offset points")
    ax.set_ylim(0, max(bottoms) * 1.12 or 1)  # explicit: zero-height stacked bars pin autoscaling at their base
    return totals, enlarged


def plot_layer_groups(results: Sequence[KvCacheResult], path: str | Path, *, title: str) -> Path:
    """One bar per model: bytes per sequence per GPU (GiB), stacked by layer group; segments too small to see
    are drawn at MIN_SEGMENT of the tallest bar and labelled with their value."""
    fig, ax = _figure()
    _, enlarged = _stack(ax, [group_bytes(r) for r in results])
    dtypes = len({r.layout.kv_dtype.name for r in results}) > 1  # compare --kv-cache-dtype a,b: one bar each
    ax.set_xticks(range(len(results)), [_wrapped_name(r.model.model_id + (f" ({r.layout.kv_dtype.name})" if dtypes
                                                                         else "")) for r in results], fontsize="small")
    ax.margins(x=0.25 if len(results) < 3 else 0.12)  # room for the labels beside the last bar
    ax.set_ylabel("KV cache per sequence per GPU (GiB)")
    ax.set_xlabel("model")
    ax.set_title(title, wrap=True)
    ax.legend(title="layer group", fontsize="small")
    if enlarged:
        fig.text(0.01, 0.005, f"segments under {MIN_SEGMENT:.0%} of the tallest bar are drawn at {MIN_SEGMENT:.0%}; "
                 "their values are written beside them", fontsize="x-small", color="dimgray")
    return _save(fig, path)
