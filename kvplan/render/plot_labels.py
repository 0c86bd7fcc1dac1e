"""The values written beside a capacity plot's points (kvplan.render.plot): each where it overlaps no marker, no
other value and, where it can, no line; measured with matplotlib's renderer once the figure's layout is final."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kvplan.units import format_floor

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Series = Mapping[str, Sequence[tuple[int, float]]]  # label -> (x, y) points

MAX_LABELLED_POINTS = 40  # past this many points, values are read from the axis only


# Where a value may go around its point (points of offset, alignment), tried in this order: above, below, right,
# left, then the diagonals and further out; the first spot clear of every marker and every label placed wins.
LABEL_SPOTS = ((0, 5, "center", "bottom"), (0, -5, "center", "top"), (6, 0, "left", "center"),
               (-6, 0, "right", "center"), (5, 5, "left", "bottom"), (-5, 5, "right", "bottom"),
               (5, -5, "left", "top"), (-5, -5, "right", "top"), (0, 14, "center", "bottom"),
               (0, -14, "center", "top"))


def label_points(fig: Figure, ax: Axes, series: Series, marker_pt: float) -> None:
    """Each point's value next to it (14.91), when there are few enough to read, where its text box overlaps
    no marker and no other value, and where it can, no line (measured with the renderer once the layout is final;
    then the layout is frozen so saving does not move the axes under the labels). A value with no clear spot is
    left to the axis."""
    if sum(len(points) for points in series.values()) > MAX_LABELLED_POINTS:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    lines = [ax.transData.transform(sorted((x, y) for x, y in pts if y > 0)) for pts in series.values()]
    radius_px = marker_pt / 2 * fig.dpi / 72 + 1
    taken = [_box_around(xy, radius_px) for line in lines for xy in line]
    inside, trace = ax.get_window_extent(renderer), _trace(lines)
    for pts, line in zip(series.values(), ax.get_lines(), strict=False):  # a value in its line's colour
        for x, y in (p for p in pts if p[1] > 0):
            _place_label(ax, renderer, ((x, y), line.get_color()), taken, (inside, trace))


def _trace(lines: list[Any], step_px: float = 2.0) -> Any:
    """The lines as points every `step_px` pixels (display coordinates), for a label to keep clear of."""
    import itertools

    import numpy as np

    pieces = [np.zeros((0, 2))]
    for line in lines:
        for a, b in itertools.pairwise(line):
            steps = max(int(np.hypot(*(b - a)) / step_px), 1)
            pieces.append(a + (b - a) * np.linspace(0.0, 1.0, steps + 1)[:, None])
    return np.concatenate(pieces)


def _box_around(center: Any, radius_px: float) -> Any:
    from matplotlib.transforms import Bbox

    (cx, cy) = center
    return Bbox.from_extents(cx - radius_px, cy - radius_px, cx + radius_px, cy + radius_px)


def _place_label(ax: Axes, renderer: Any, value: tuple[tuple[float, float], Any], taken: list[Any],
                 clear_of: tuple[Any, Any]) -> None:
    """The first spot clear of the markers, the labels and the lines; failing that, clear of the first two."""
    (point, color), (inside, trace) = value, clear_of
    for avoid_lines in (True, False):
        for dx, dy, ha, va in LABEL_SPOTS:
            note = ax.annotate(format_floor(point[1]), point, xytext=(dx, dy), textcoords="offset points", ha=ha,
                               va=va, fontsize="x-small", color=color)
            box = note.get_window_extent(renderer).padded(1)
            crossed = avoid_lines and _crosses(box, trace)
            if not crossed and _within(box, inside) and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                return
            note.remove()


def _crosses(box: Any, trace: Any) -> bool:
    xs, ys = trace[:, 0], trace[:, 1]
    return bool(((xs >= box.x0) & (xs <= box.x1) & (ys >= box.y0) & (ys <= box.y1)).any())


def _within(box: Any, outer: Any) -> bool:
    return bool(outer.x0 <= box.x0 and box.x1 <= outer.x1 and outer.y0 <= box.y0 and box.y1 <= outer.y1)
