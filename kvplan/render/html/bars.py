"""Horizontal bars on one scale: one row per engine (or probe row), its title in HTML above a thin
inline SVG bar of segments side by side, with an optional marker (the GPU's memory, a peak
bandwidth). Estimated segments are hatched, so a reader sees which parts are kvplan's guesses.
Titles stay HTML so that they read at any width; the bars stretch to the column."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kvplan.render.html.markup import Html, esc, join
from kvplan.render.html.style import TERM_COLORS

WIDTH, HEIGHT = 1000, 30
MIN_LABEL = 90  # units a segment needs to carry its own label
DARK_TEXT = (TERM_COLORS["fraction"],)  # light fills whose label is drawn dark


@dataclass(frozen=True, slots=True)
class Segment:
    name: str
    value: float
    color: str
    estimate: bool = False


@dataclass(frozen=True, slots=True)
class Bar:
    title: str
    segments: tuple[Segment, ...]
    marker: float | None = None  # a vertical line: the whole the segments are part of
    marker_label: str = ""


def _hatch(color: str) -> str:
    return (f'<pattern id="h{color.lstrip("#")}" width="8" height="8" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="8" height="8" fill="{color}" fill-opacity="0.3"/>'
            f'<line x1="0" y1="0" x2="0" y2="8" stroke="{color}" stroke-width="4"/></pattern>')


def _svg(bar: Bar, scale: float, fmt: Callable[[float], str]) -> str:
    parts, x = [], 0.0
    for seg in (s for s in bar.segments if s.value > 0):
        w = seg.value * scale
        fill = f"url(#h{seg.color.lstrip('#')})" if seg.estimate else seg.color
        parts.append(f'<rect x="{x:.1f}" y="2" width="{max(w, 1.0):.1f}" height="{HEIGHT - 4}" fill="{fill}" '
                     f'stroke="#fff" stroke-width="1.5"><title>{esc(seg.name)}: {esc(fmt(seg.value))}'
                     f'{" (estimate)" if seg.estimate else ""}</title></rect>')
        if w >= MIN_LABEL:
            dark = " dark" if seg.estimate or seg.color in DARK_TEXT else ""
            parts.append(f'<text x="{x + 7:.1f}" y="{HEIGHT / 2 + 5:.0f}" class="in{dark}">{esc(fmt(seg.value))}</text>')
        x += w
    if bar.marker is not None:
        mx = min(bar.marker * scale, WIDTH - 1.5)
        parts.append(f'<line x1="{mx:.1f}" y1="0" x2="{mx:.1f}" y2="{HEIGHT}" stroke="#111827" stroke-width="3" vector-effect="non-scaling-stroke"/>')
    defs = "".join(_hatch(c) for c in sorted({s.color for s in bar.segments if s.estimate}))
    return (f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" preserveAspectRatio="none"><title>{esc(bar.title)}'
            f"</title><defs>{defs}</defs>{''.join(parts)}</svg>")


def bar_chart(bars: Sequence[Bar], fmt: Callable[[float], str]) -> Html:
    """Every bar on one scale: the largest of all totals and markers spans the width."""
    largest = max([sum(max(s.value, 0) for s in b.segments) for b in bars] + [b.marker or 0 for b in bars] + [1.0])
    scale = WIDTH / largest
    rows = [f'<div class="bar"><div class="bartitle"><span>{esc(b.title)}</span><span class="mark">'
            f"{esc(b.marker_label)}</span></div>{_svg(b, scale, fmt)}</div>" for b in bars]
    return join(['<div class="bars">', *rows, "</div>"])


def legend(entries: Sequence[tuple[str, str, bool]]) -> Html:
    """(name, colour, estimate) -> an HTML legend (readable at any width, unlike text inside the SVG)."""
    def swatch(color: str, estimate: bool) -> str:
        style = (f"background: repeating-linear-gradient(45deg, {color} 0 3px, transparent 3px 6px); "
                 f"border: 1px solid {color}") if estimate else f"background: {color}"
        return f'<span class="sw" style="{style}"></span>'
    return Html('<div class="legend">' + "".join(f"<span>{swatch(c, e)}{esc(n)}</span>" for n, c, e in entries)
                + "</div>")
