"""Geometry of the flow figure.

Where nodes sit, and edges as clipped quadratic Bezier curves that bend around the boxes they would otherwise
cross.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from rag.trace.views import EDGE_BENDS, VIEWS

START = "__start__"
END = "__end__"
Point = tuple[float, float]
"""(x, y) in data units."""
MARKERS = {START: (-2.45, 0.0), END: (8.45, -0.6)}
"""Where the start and end markers sit, in data units (nodes sit where rag.trace.views places them)."""
EXTRA_ROW_Y = -2.4
"""Nodes with no hand-placed position go in a row below, left to right."""
COLUMN = 1.5
BOX_W, BOX_H = 1.16, 0.36
MARKER_R = 0.09
"""Half-size of the __start__/__end__ markers, in data units."""

_AUTO_BENDS = (0.0, 0.3, -0.3, 0.45, -0.45, 0.6, -0.6, 0.8, -0.8, 1.0, -1.0)
_SAMPLES = 48
ARROW_LEN = 0.13
"""Length of the stub that carries an arrowhead, in data units."""
LABEL_SPACING_PX = 19

class Box(NamedTuple):
    """A node's box: centre and half sizes, in data units."""
    x: float
    y: float
    hw: float
    hh: float

    def contains(self, px: float, py: float, pad: float = 0.0) -> bool:
        """True when the point is inside the box grown by ``pad`` on every side."""
        return abs(px - self.x) <= self.hw + pad and abs(py - self.y) <= self.hh + pad


class Curve(NamedTuple):
    """An edge drawn as a quadratic Bezier curve, clipped to the borders of its two nodes."""

    p0: tuple[float, float]
    p1: tuple[float, float]
    p2: tuple[float, float]
    t0: float
    t1: float

    def at(self, t: float) -> tuple[float, float]:
        """The point at parameter ``t`` in [0, 1]."""
        (x0, y0), (x1, y1), (x2, y2) = self.p0, self.p1, self.p2
        u = 1 - t
        return (u * u * x0 + 2 * u * t * x1 + t * t * x2, u * u * y0 + 2 * u * t * y1 + t * t * y2)

    def points(self, n: int = _SAMPLES) -> list[tuple[float, float]]:
        """``n + 1`` points along the clipped part of the curve."""
        return [self.at(self.t0 + (self.t1 - self.t0) * i / n) for i in range(n + 1)]

    def length(self) -> float:
        """The approximate length of the clipped curve, in data units."""
        pts = self.points(24)
        return sum(math.dist(a, b) for a, b in zip(pts, pts[1:], strict=False))

    def back_from_end(self, distance: float) -> tuple[float, float]:
        """The point ``distance`` (data units) before the clipped end, along the curve."""
        pts = self.points()
        walked = 0.0
        for a, b in zip(reversed(pts), list(reversed(pts))[1:], strict=False):
            walked += math.dist(a, b)
            if walked >= distance:
                return b
        return pts[0]

    def normal_at(self, t: float) -> tuple[float, float]:
        """Unit normal to the left of the direction of travel at ``t``."""
        a, b = self.at(max(0.0, t - 0.01)), self.at(min(1.0, t + 0.01))
        dx, dy = b[0] - a[0], b[1] - a[1]
        n = math.hypot(dx, dy) or 1.0
        return (-dy / n, dx / n)


def node_positions(nodes: Iterable[str]) -> dict[str, tuple[float, float]]:
    """Where each node sits: its place in the view table, else a row of its own below."""
    pos: dict[str, tuple[float, float]] = {}
    extra = 0
    for node in nodes:
        if node in MARKERS or node in VIEWS:
            pos[node] = MARKERS[node] if node in MARKERS else VIEWS[node].position
        else:
            pos[node] = (extra * COLUMN, EXTRA_ROW_Y)
            extra += 1
    return pos


def node_boxes(pos: dict[str, tuple[float, float]]) -> dict[str, Box]:
    """The box of each node (a small square for the start and end markers)."""
    return {n: Box(x, y, MARKER_R, MARKER_R) if n in (START, END) else
            Box(x, y, BOX_W / 2, BOX_H / 2) for n, (x, y) in pos.items()}


def bezier(a: Point, b: Point, bend: float) -> tuple[Point, Point, Point]:
    """Control points of a quadratic curve from ``a`` to ``b`` bending ``bend`` to the left."""
    (x0, y0), (x2, y2) = a, b
    dx, dy = x2 - x0, y2 - y0
    n = math.hypot(dx, dy) or 1.0
    # The curve's greatest distance from the chord is half the control point's offset.
    mx, my = (x0 + x2) / 2 - dy / n * 2 * bend, (y0 + y2) / 2 + dx / n * 2 * bend
    return a, (mx, my), b


def clip(p0: Point, p1: Point, p2: Point, src: Box, dst: Box) -> Curve:
    """Clip the curve to where it leaves ``src`` and enters ``dst`` (bisection on t)."""
    curve = Curve(p0, p1, p2, 0.0, 1.0)

    def edge_t(box: Box, inside_at: float, outside_at: float) -> float:
        lo, hi = inside_at, outside_at
        for _ in range(30):
            mid = (lo + hi) / 2
            if box.contains(*curve.at(mid)):
                lo = mid
            else:
                hi = mid
        return hi

    t0 = edge_t(src, 0.0, 0.5)
    t1 = edge_t(dst, 1.0, 0.5)
    return Curve(p0, p1, p2, t0, t1)


def collides(curve: Curve, boxes: dict[str, Box], skip: set[str]) -> bool:
    """True when the curve passes through a box other than those named in ``skip``."""
    return any(box.contains(x, y, pad=0.07)
               for name, box in boxes.items() if name not in skip
               for x, y in curve.points(40)[1:-1])


def route_edges(edges: list[tuple[str, str]], pos, boxes) -> dict[tuple[str, str], Curve]:
    """A curve per edge.

    The hand-set bend, else the first automatic bend that misses every other node (a straight line when
    possible); an edge with a reverse twin always bends.
    """
    pairs = set(edges)
    curves: dict[tuple[str, str], Curve] = {}
    for src, dst in edges:
        if src == dst:
            continue
        candidates = ([EDGE_BENDS[(src, dst)]] if (src, dst) in EDGE_BENDS else []) + [
            b for b in _AUTO_BENDS if not ((dst, src) in pairs and abs(b) < 0.12)] + [0.15]
        chosen = None
        for bend in candidates:
            curve = clip(*bezier(pos[src], pos[dst], bend), boxes[src], boxes[dst])
            if not collides(curve, boxes, {src, dst}):
                chosen = curve
                break
        curves[(src, dst)] = chosen or clip(*bezier(pos[src], pos[dst], candidates[0]),
                                            boxes[src], boxes[dst])
    return curves


def reading_normal(n: tuple[float, float]) -> tuple[float, float]:
    """The normal pointing up.

    (or left, across a steep edge), so that labels stacked along it read in step order top-down or left to
    right.
    """
    nx, ny = n
    flip = ny < 0 if abs(ny) >= abs(nx) else nx > 0
    return (-nx, -ny) if flip else (nx, ny)


def self_loop(box: Box) -> Curve:
    """A loop above ``box``, for a node that follows itself."""
    top = box.y + box.hh
    return Curve((box.x - box.hw * 0.4, top), (box.x, top + 0.6), (box.x + box.hw * 0.4, top),
                  0.0, 1.0)


def arrow_annotation(curve: Curve, color: str, width: float, name: str, head: int = 2,
           size: float = 1.0) -> dict:
    """A plotly annotation that draws the arrowhead at the end of ``curve``."""
    hx, hy = curve.at(curve.t1)
    tx, ty = curve.back_from_end(min(ARROW_LEN, curve.length() * 0.5))
    return dict(x=hx, y=hy, ax=tx, ay=ty, xref="x", yref="y", axref="x", ayref="y", text="",
                showarrow=True, arrowhead=head, arrowsize=size, arrowwidth=width,
                arrowcolor=color, standoff=0, startstandoff=0, name=name)


def rounded_box(box: Box, fill: str, line: str, r: float = 0.07) -> dict:
    """A plotly shape: ``box`` with rounded corners of radius ``r``."""
    x0, x1, y0, y1 = box.x - box.hw, box.x + box.hw, box.y - box.hh, box.y + box.hh
    path = (f"M {x0 + r},{y0} L {x1 - r},{y0} Q {x1},{y0} {x1},{y0 + r} "
            f"L {x1},{y1 - r} Q {x1},{y1} {x1 - r},{y1} L {x0 + r},{y1} "
            f"Q {x0},{y1} {x0},{y1 - r} L {x0},{y0 + r} Q {x0},{y0} {x0 + r},{y0} Z")
    return dict(type="path", path=path, xref="x", yref="y", fillcolor=fill,
                line=dict(color=line, width=1.2), layer="below")
