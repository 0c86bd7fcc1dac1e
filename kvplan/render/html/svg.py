"""Inline SVG line charts: labelled axes, one polyline per series, the last value of each series
written beside it, horizontal reference lines (a KV budget), a <title> on every point.

Small on purpose (no charting library): the page stays one light file and every label is text a
reader can select and search. The x axis is log2 (contexts and TP sizes double); the y axis is
linear, or logarithmic when the positive values span more than 64× (``kvplan.render.plot``'s rule;
a chart may ask for linear); a 0 on a log axis breaks the line. A log axis of bytes is marked in
powers of 4 (1 GiB, 4 GiB, 16 GiB), of counts in powers of 10.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kvplan.render.html.markup import Html, esc, join

WIDTH, HEIGHT = 560, 330
LEFT, RIGHT, TOP, BOTTOM = 78, 72, 34, 48
LOG_SPAN = 64  # y turns logarithmic past this max/min ratio
LABEL_GAP = 16  # px between stacked labels


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    points: tuple[tuple[float, float | None], ...]  # None: no value there (the line breaks)
    color: str
    dash: str = ""

    def values(self) -> list[tuple[float, float]]:
        return [(x, y) for x, y in self.points if y is not None]


@dataclass(frozen=True, slots=True)
class Axis:
    label: str
    fmt: Callable[[float], str]
    log_base: int = 10  # tick spacing on a log axis: 10 for counts, 4 for bytes
    may_log: bool = True  # False: always linear (a chart whose zeros matter)


@dataclass(frozen=True, slots=True)
class Scale:
    lo: float
    hi: float
    log: bool
    start: float  # px of lo
    end: float  # px of hi

    def at(self, value: float) -> float:
        f = (math.log(value) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo)) if self.log else \
            (value - self.lo) / (self.hi - self.lo)
        return self.start + f * (self.end - self.start)


def nice_step(span: float, count: int = 5) -> float:
    """1, 2 or 5 × 10^k, so that about `count` steps cover the span."""
    raw = span / count if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def y_scale(values: Sequence[float], base: int = 10, may_log: bool = True) -> tuple[Scale, tuple[float, ...]]:
    positive = [v for v in values if v > 0]
    top = max(values, default=1.0) or 1.0
    if may_log and positive and max(positive) / min(positive) > LOG_SPAN:
        first = math.floor(math.log(min(positive), base) + 1e-9)
        last = math.ceil(math.log(max(positive), base) - 1e-9)
        ticks = tuple(float(base) ** k for k in range(first, last + 1))
        return Scale(ticks[0], ticks[-1], True, HEIGHT - BOTTOM, TOP), ticks
    step = nice_step(top)
    hi = step * math.ceil(top * 1.04 / step)
    return Scale(0.0, hi, False, HEIGHT - BOTTOM, TOP), tuple(step * k for k in range(round(hi / step) + 1))


def spread(wanted: list[float], low: float, high: float) -> list[float]:
    """Label positions near `wanted` (px, any order) at least LABEL_GAP apart, inside [low, high]."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    placed = [0.0] * len(wanted)
    last = low - LABEL_GAP
    for i in order:
        last = max(wanted[i], last + LABEL_GAP)
        placed[i] = last
    overflow = max(0.0, last - high)
    return [min(max(p - overflow, low), high) for p in placed]


def labelled(x: Scale, xs: Sequence[float], gap: float = 34) -> list[float]:
    """The x ticks that get a label: from the last one back, each at least `gap` px from the one after."""
    kept: list[float] = []
    for v in sorted(xs, reverse=True):
        if not kept or x.at(kept[-1]) - x.at(v) >= gap:
            kept.append(v)
    return kept


def _axes(x: Scale, xs: Sequence[float], y: Scale, ys: Sequence[float], xa: Axis, ya: Axis) -> Html:
    parts = [f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>']
    for v in ys:
        py = y.at(v)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{py:.1f}" x2="{WIDTH - RIGHT}" y2="{py:.1f}"/>'
                     f'<text x="{LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{esc(ya.fmt(v))}</text>')
    for v in labelled(x, xs):
        px = x.at(v)
        parts.append(f'<line class="axis" x1="{px:.1f}" y1="{HEIGHT - BOTTOM}" x2="{px:.1f}" y2="{HEIGHT - BOTTOM + 4}"/>'
                     f'<text x="{px:.1f}" y="{HEIGHT - BOTTOM + 17}" text-anchor="middle">{esc(xa.fmt(v))}</text>')
    mid_x = (LEFT + WIDTH - RIGHT) / 2  # the y label sits above its axis: no rotated text to collide with
    parts.append(f'<text class="label" x="{mid_x:.0f}" y="{HEIGHT - 8}" text-anchor="middle">{esc(xa.label)}</text>'
                 f'<text class="label" x="6" y="{TOP - 16}">{esc(ya.label)}</text>')
    return join(parts)


def _runs(s: Series, y: Scale) -> list[list[tuple[float, float]]]:
    """The points a line joins: a missing value (or a 0 on a log axis) breaks it."""
    runs: list[list[tuple[float, float]]] = [[]]
    for px, py in s.points:
        if py is None or (y.log and py <= 0):
            runs.append([])
        else:
            runs[-1].append((px, py))
    return [r for r in runs if r]


def _series(s: Series, x: Scale, y: Scale, ya: Axis, xa: Axis) -> Html:
    dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
    lines = "".join(f'<polyline fill="none" stroke="{s.color}" stroke-width="2.2"{dash} points="'
                    + " ".join(f"{x.at(px):.1f},{y.at(py):.1f}" for px, py in run) + '"/>' for run in _runs(s, y))
    dots = join(f'<circle cx="{x.at(px):.1f}" cy="{y.at(py):.1f}" r="3.2" fill="{s.color}">'
                f'<title>{esc(s.label)} at {esc(xa.fmt(px))}: {esc(ya.fmt(py))}</title></circle>'
                for run in _runs(s, y) for px, py in run)
    return Html(f"<g>{lines}{dots}</g>")


def _end_labels(series: Sequence[Series], x: Scale, y: Scale, ya: Axis) -> Html:
    ends = [(s, s.values()[-1]) for s in series if s.values() and (s.values()[-1][1] > 0 or not y.log)]
    where = spread([y.at(p[1]) + 4 for _, p in ends], TOP + 8, HEIGHT - BOTTOM)
    return join(f'<text x="{x.at(p[0]) + 7:.1f}" y="{py:.1f}" fill="{s.color}" class="value">{esc(ya.fmt(p[1]))}'
                f'</text>' for (s, p), py in zip(ends, where, strict=True))


def _references(refs: Sequence[tuple[str, float, str]], y: Scale) -> Html:
    """Dashed horizontal lines (their names go in the HTML legend, where they never overlap)."""
    return join(f'<line x1="{LEFT}" y1="{y.at(v):.1f}" x2="{WIDTH - RIGHT}" y2="{y.at(v):.1f}" stroke="{color}" '
                f'stroke-width="1.6" stroke-dasharray="6 4"><title>{esc(label)}</title></line>'
                for label, v, color in refs if y.lo <= v <= y.hi)


def line_chart(series: Sequence[Series], xa: Axis, ya: Axis, title: str,
               refs: Sequence[tuple[str, float, str]] = ()) -> Html:
    """The chart as an <svg> element scaled to its container's width."""
    xs = sorted({px for s in series for px, _ in s.points}) or [1.0]
    x = Scale(min(xs), max(xs) if max(xs) > min(xs) else min(xs) * 2, True, LEFT + 8, WIDTH - RIGHT - 8)
    y, ticks = y_scale([py for s in series for _, py in s.values()] + [v for _, v, _ in refs], ya.log_base,
                       ya.may_log)
    body = join([_axes(x, xs, y, ticks, xa, ya), _references(refs, y), *(_series(s, x, y, ya, xa) for s in series),
                 _end_labels(series, x, y, ya)])
    return Html(f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img">'
                f"<title>{esc(title)}</title>{body}</svg>")
