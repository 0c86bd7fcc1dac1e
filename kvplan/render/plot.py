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
from kvplan.units import GIB

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from kvplan.formulas.sizing import KvCacheResult
    from kvplan.workflows.sweep import Sweep

FORMATS = (".png", ".svg")
WIDTH_PX, HEIGHT_PX, DPI = 1000, 600, 100
Series = Mapping[str, Sequence[tuple[int, float]]]  # label -> (x, y) points
MARKERS = "osD^vPX*<>"  # lines that coincide (e.g. tp4 fp8 and tp8 bf16) stay distinguishable
LINESTYLES = ("-", "--", "-.", (0, (1, 1)))
MAX_LEGEND_LINES = 12  # past this a legend would squeeze the axes away: later lines go unlabelled


def _label(i: int, label: str, total: int) -> str:
    if i < MAX_LEGEND_LINES - 1 or total <= MAX_LEGEND_LINES:
        return label
    return f"… {total - i} more lines" if i == MAX_LEGEND_LINES - 1 else "_nolegend_"


def check_plot_path(path: str | Path) -> Path:
    """Refuse a suffix we cannot write before any work is done."""
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"plot file {str(out)!r} must end in .png or .svg")
    if not out.parent.exists():
        raise InputError(f"plot folder {str(out.parent)!r} does not exist")
    return out


def _legend(fig: Figure, series: Series, extra: int = 0) -> None:
    """Below the axes, clear of the lines; two columns when labels are long."""
    widest = max((len(label) for label in series), default=0)
    entries = min(len(series), MAX_LEGEND_LINES) + extra
    fig.legend(fontsize="small", loc="outside lower center", ncols=min(2 if widest > 40 else 3, entries))


def _figure() -> tuple[Figure, Axes]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError("plots need matplotlib: pip install 'kvplan[plot]'") from None
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _save(fig: Figure, path: str | Path) -> Path:
    out = check_plot_path(path)
    fig.savefig(out, dpi=DPI, format=out.suffix.lower().lstrip("."))
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


def plot_memory(series: Series, path: str | Path, *, title: str, gpu_name: str | None = None,
                gpu_memory_bytes: int | None = None, kv_budget_bytes: int | None = None) -> Path:
    """KV bytes per GPU (GiB) vs context, with the GPU memory and KV budget as horizontal lines."""
    fig, ax = _figure()
    xs: list[int] = []
    for i, (label, points) in enumerate(series.items()):
        pts = sorted(points)
        xs += [x for x, _ in pts]
        ax.plot([x for x, _ in pts], [y / GIB for _, y in pts], marker=MARKERS[i % len(MARKERS)],
                linestyle=LINESTYLES[i % len(LINESTYLES)], markersize=4 + 2 * (i % 2),
                fillstyle="full" if i % 2 else "none", label=_label(i, label, len(series)))
    if gpu_memory_bytes:
        ax.axhline(gpu_memory_bytes / GIB, color="black", linestyle="--",
                   label=f"{gpu_name or 'GPU'} memory ({gpu_memory_bytes / GIB:,.1f} GiB)")
    if kv_budget_bytes:
        ax.axhline(kv_budget_bytes / GIB, color="red", linestyle=":",
                   label=f"KV budget ({kv_budget_bytes / GIB:,.1f} GiB)")
    _context_axis(ax, xs)
    ys = [y for points in series.values() for _, y in points if y > 0]
    if ys and max(ys) >= 64 * min(ys):  # spans decades: a log axis keeps short contexts readable
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.0f}" if y >= 1 else f"{y:.3g}"))
    ax.set_ylabel("KV cache per GPU (GiB)")
    ax.set_title(title, wrap=True)
    _legend(fig, series, extra=2)
    return _save(fig, path)


def plot_capacity(series: Series, path: str | Path, *, title: str) -> Path:
    """Max concurrency (requests) vs context length, one line per configuration."""
    fig, ax = _figure()
    xs: list[int] = []
    for i, (label, points) in enumerate(series.items()):
        pts = sorted(points)
        xs += [x for x, _ in pts]
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker=MARKERS[i % len(MARKERS)], markersize=4,
                linestyle=LINESTYLES[i % len(LINESTYLES)], label=_label(i, label, len(series)))
    from matplotlib.ticker import FuncFormatter

    _context_axis(ax, xs)
    ax.set_yscale("log", base=2)  # a request that does not fit (0) is left out of its line
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.0f}" if y >= 1 else f"{y:.3g}"))
    ax.set_ylabel("max concurrency (requests of that length)")
    ax.set_title(title)
    _legend(fig, series)
    return _save(fig, path)


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


def plot_layer_groups(results: Sequence[KvCacheResult], path: str | Path, *, title: str) -> Path:
    """One bar per model: bytes per sequence per GPU (GiB), stacked by layer group."""
    fig, ax = _figure()
    per_model = [group_bytes(r) for r in results]
    kinds = list(dict.fromkeys(k for groups in per_model for k in groups))
    names = [r.model.model_id for r in results]
    bottoms = [0.0] * len(results)
    for kind in kinds:
        heights = [groups.get(kind, 0) / GIB for groups in per_model]
        ax.bar(names, heights, bottom=bottoms, label=kind)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, total in enumerate(bottoms):
        ax.annotate(f"{total:,.2f} GiB", (x, total), ha="center", va="bottom", fontsize="small",
                    xytext=(0, 2), textcoords="offset points")
    ax.set_ylim(0, max(bottoms) * 1.12 or 1)  # explicit: zero-height stacked bars pin autoscaling at their base
    ax.set_ylabel("KV cache per sequence per GPU (GiB)")
    ax.set_xlabel("model")
    ax.set_title(title)
    ax.tick_params(axis="x", labelrotation=20 if len(results) > 3 else 0)
    ax.legend(title="layer group", fontsize="small")
    return _save(fig, path)
