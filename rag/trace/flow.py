"""Plotly figures and tables built from a Run: the trace flow over the graph, verdict and step rows.

Pure functions: nothing here imports streamlit or runs anything at import time, so the figures
can be tested from their JSON without a browser. The flow figure takes its nodes and edges from
``build_graph().get_graph()`` and only the path from the Run, so it can never disagree with the
graph that actually ran.
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Optional

if TYPE_CHECKING:  # plotly and the runner are imported lazily, when a figure is built
    import plotly.graph_objects as go

    from rag.models import TraceEvent
    from rag.models import Run

START = "__start__"
END = "__end__"

# Node statuses, from the verdict of the node's last visit.
OK = "ok"
WEAK = "weak"
FAILED = "failed"
VISITED = "visited"
"""Visited, with no verdict to show (a node this module does not know)."""
NOT_VISITED = "not_visited"

COLOR_OK = "#2e9e5b"
"""Green: enough relevant evidence, grounded, useful, answered."""
COLOR_WEAK = "#f0b429"
"""Amber: weak evidence, a rewrite, a skipped web search, an answer with a caveat."""
COLOR_FAILED = "#d64545"
"""Red: no evidence, ungrounded, not useful, abstained (fallback), a failure or error."""
COLOR_VISITED = "#5b7db1"
COLOR_NOT_VISITED = "#eef0f3"
COLOR_NOT_VISITED_TEXT = "#8a93a3"
COLOR_BORDER = "#c5cad3"
COLOR_EDGE = "#c5cad3"
"""Faint grey: every edge of the graph."""
COLOR_PATH = "#2563eb"
"""The run's path, drawn over the edges (the app's primary colour)."""
COLOR_ERROR = "#d64545"
COLOR_TERMINAL = "#6b7280"
COLOR_TEXT_DARK = "#1f2937"
COLOR_TEXT_LIGHT = "#ffffff"

STATUS_COLORS = {OK: COLOR_OK, WEAK: COLOR_WEAK, FAILED: COLOR_FAILED, VISITED: COLOR_VISITED,
                 NOT_VISITED: COLOR_NOT_VISITED}
STATUS_TEXT_COLORS = {OK: COLOR_TEXT_LIGHT, WEAK: COLOR_TEXT_DARK, FAILED: COLOR_TEXT_LIGHT,
                      VISITED: COLOR_TEXT_LIGHT, NOT_VISITED: COLOR_NOT_VISITED_TEXT}
STATUS_LABELS = {OK: "passed", WEAK: "weak / retried / caveat", FAILED: "failed / abstained",
                 NOT_VISITED: "not visited"}

# Hand-placed layout, in data units: the main line left to right at y=0, the corrections
# (rewrite_query, web_search) above, the other endings (fallback, finalize_with_caveat) below.
# web_search sits over check_grounding and fallback under generate so that the
# web_search -> fallback edge crosses the main line between two boxes, not through one.
POSITIONS: dict[str, tuple[float, float]] = {
    START: (-0.95, 0.0),
    "decompose_query": (-0.75, 1.25),
    "retrieve": (0.0, 0.0),
    "grade_documents": (1.5, 0.0),
    "generate": (3.0, 0.0),
    "check_grounding": (4.5, 0.0),
    "grade_answer": (6.0, 0.0),
    "finalize": (7.5, 0.0),
    END: (8.45, -0.6),
    "rewrite_query": (0.75, 1.25),
    "web_search": (4.5, 1.25),
    "fallback": (3.0, -1.25),
    "finalize_with_caveat": (6.75, -1.25),
}
EXTRA_ROW_Y = -2.4
"""Nodes with no hand-placed position go in a row below, left to right."""
COLUMN = 1.5
BOX_W, BOX_H = 1.16, 0.36
MARKER_R = 0.09
"""Half-size of the __start__/__end__ markers, in data units."""

# Bends (the curve's greatest distance from the straight line, in data units, positive to the
# left of the edge's direction) for edges that would otherwise run through another box.
EDGE_BENDS: dict[tuple[str, str], float] = {
    ("retrieve", "generate"): -0.42,
    ("generate", "grade_answer"): 0.42,
    ("generate", "finalize"): 0.68,
}
_AUTO_BENDS = (0.0, 0.3, -0.3, 0.45, -0.45, 0.6, -0.6, 0.8, -0.8, 1.0, -1.0)
_SAMPLES = 48
ARROW_LEN = 0.13
"""Length of the stub that carries an arrowhead, in data units."""
LABEL_SPACING_PX = 19
HOVER_WIDTH = 72
"""Characters per hover line before wrapping."""
TITLE_WIDTH = 110


class _Box(NamedTuple):
    x: float
    y: float
    hw: float
    hh: float

    def contains(self, px: float, py: float, pad: float = 0.0) -> bool:
        return abs(px - self.x) <= self.hw + pad and abs(py - self.y) <= self.hh + pad


class _Curve(NamedTuple):
    """An edge drawn as a quadratic Bezier curve, clipped to the borders of its two nodes."""

    p0: tuple[float, float]
    p1: tuple[float, float]
    p2: tuple[float, float]
    t0: float
    t1: float

    def at(self, t: float) -> tuple[float, float]:
        (x0, y0), (x1, y1), (x2, y2) = self.p0, self.p1, self.p2
        u = 1 - t
        return (u * u * x0 + 2 * u * t * x1 + t * t * x2, u * u * y0 + 2 * u * t * y1 + t * t * y2)

    def points(self, n: int = _SAMPLES) -> list[tuple[float, float]]:
        return [self.at(self.t0 + (self.t1 - self.t0) * i / n) for i in range(n + 1)]

    def length(self) -> float:
        pts = self.points(24)
        return sum(math.dist(a, b) for a, b in zip(pts, pts[1:]))

    def back_from_end(self, distance: float) -> tuple[float, float]:
        """The point ``distance`` (data units) before the clipped end, along the curve."""
        pts = self.points()
        walked = 0.0
        for a, b in zip(reversed(pts), list(reversed(pts))[1:]):
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


# --------------------------------------------------------------------------- tables


def verdict_rows(run: "Run") -> list[dict]:
    """One row per document verdict, across every grade_documents visit of ``run``, in order.

    Keys: ``step`` (1-based), ``attempt`` (nth grade_documents visit, 1-based), ``query`` (the
    query or sub-question the chunk was fetched for and graded against), ``source``, ``page`` (1-based; 0 for web),
    ``grade`` (``high``/``medium``/``low``), ``relevant`` (bool), ``reasoning``, ``fallback``
    (why a fallback judgment was used, or None), ``chunk_id``.
    """
    rows: list[dict] = []
    query = run.question
    for event in run.events:
        if event.node == "retrieve":
            query = event.detail.get("query", query)
        if event.node != "grade_documents":
            continue
        for v in event.detail.get("verdicts", []):
            rows.append({"step": event.step, "attempt": event.attempt,
                         "query": v.get("query") or event.detail.get("query", query),
                         "source": v.get("source", ""), "page": v.get("page", 0),
                         "grade": v.get("grade", v.get("score", "")),
                         "relevant": bool(v.get("relevant")),
                         "reasoning": v.get("reasoning", ""), "fallback": v.get("fallback"),
                         "chunk_id": v.get("id", v.get("chunk_id", ""))})
    return rows


def event_rows(run: "Run") -> list[dict]:
    """One row per trace event of ``run``, in step order.

    Keys: ``step`` (1-based), ``node``, ``attempt`` (nth visit to the node, 1-based),
    ``duration_ms`` (wall time, ms), ``summary``, ``next`` (the node the router chose, None for
    a terminal node) and ``why`` (the router's reason in plain words, None for a terminal node).
    """
    return [{"step": e.step, "node": e.node, "attempt": e.attempt, "duration_ms": e.duration_ms,
             "summary": e.summary, "next": (e.route or {}).get("to"),
             "why": (e.route or {}).get("why")}
            for e in run.events]


# --------------------------------------------------------------------------- verdicts


def event_status(event: "TraceEvent", min_relevant: int = 2) -> str:
    """The verdict of one node visit: ``ok``, ``weak``, ``failed`` or ``visited`` (no verdict).

    ``min_relevant`` is the run's Options.min_relevant: grade_documents is ``ok`` when the
    evidence it left reaches it, ``weak`` with some evidence, ``failed`` with none. Engine
    fallback judgments (``detail["fallbacks"]``) make an otherwise ``ok`` visit ``weak``.
    """
    d = event.detail or {}
    node = event.node
    if node == "retrieve":
        status = OK if d.get("chunks") else FAILED
    elif node == "decompose_query":
        status = OK  # a plan, single-hop or not, is never a failure
    elif node == "grade_documents":
        evidence = d.get("evidence", d.get("relevant", 0)) or 0
        status = OK if evidence >= min_relevant else WEAK if evidence > 0 else FAILED
    elif node == "rewrite_query":
        status = WEAK
    elif node == "web_search":
        note = str(d.get("status", ""))
        status = (FAILED if note.startswith("failed") else
                  OK if d.get("results") else WEAK)
    elif node == "generate":
        status = FAILED if not d.get("citations") else WEAK if d.get("weak_evidence") else OK
    elif node == "check_grounding":
        status = OK if d.get("grounded") else FAILED
    elif node == "grade_answer":
        status = OK if d.get("useful") else FAILED
    elif node == "finalize":
        status = OK
    elif node == "finalize_with_caveat":
        status = WEAK
    elif node == "fallback":
        status = FAILED
    else:
        status = VISITED
    if status == OK and d.get("fallbacks"):
        status = WEAK
    return status


def node_statuses(run: "Run") -> dict[str, str]:
    """Node name -> the status of its last visit in ``run`` (see :func:`event_status`); the node
    a run stopped in with an error is ``failed``. Nodes not visited are absent."""
    statuses = {e.node: event_status(e, run.options.min_relevant) for e in run.events}
    if node := _error_node(run):
        statuses[node] = FAILED
    return statuses


def _error_node(run: "Run") -> Optional[str]:
    """The node a run's error happened in, if any."""
    return run.error_node if run.error else None


# --------------------------------------------------------------------------- hover text


def _esc(text: Any) -> str:
    """Plain text safe inside plotly's pseudo-HTML labels."""
    return (str(text).replace("&", "&#38;").replace("<", "&#60;").replace(">", "&#62;"))


def _wrap(text: Any, width: int = HOVER_WIDTH, indent: str = "") -> str:
    lines = textwrap.wrap(str(text), width, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False) or [""]
    return "<br>".join(_esc(line) for line in lines)


def _short(text: Any, limit: int = 140) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _detail_lines(event: "TraceEvent") -> list[str]:
    """A compact, plain-text view of a node's detail (counts, strategy, query)."""
    d = event.detail or {}
    node = event.node
    out: list[str] = []
    if node == "retrieve":
        chunks = d.get("chunks", [])
        out.append(f"query: {_short(d.get('query', ''))}")
        best = ", ".join(f"{c.get('source', '')} p.{c.get('page', 0)} ({c.get('score', 0):.2f})"
                         for c in chunks[:3])
        out.append(f"{len(chunks)} chunks (top_k {d.get('top_k', '?')})" + (f"; best: {best}"
                                                                             if best else ""))
    elif node == "grade_documents":
        verdicts = d.get("verdicts", [])
        grades = Counter(v.get("grade", "") for v in verdicts)
        n_rel = sum(bool(v.get("relevant")) for v in verdicts)
        out.append(f"verdicts: {n_rel} relevant / {len(verdicts) - n_rel} not "
                   f"(high {grades['high']}, medium {grades['medium']}, low {grades['low']}); "
                   f"evidence {d.get('evidence', '?')}")
        fallbacks = sum(1 for v in verdicts if v.get("fallback"))
        if fallbacks:
            out.append(f"{fallbacks} fallback judgment(s)")
    elif node == "rewrite_query":
        out.append(f"strategy: {d.get('strategy', '')}; rewrite {d.get('rewrite', '?')} of "
                   f"{d.get('budget', '?')}")
        out.append(f"query: {_short(d.get('query', ''))}")
        if d.get("reasoning"):
            out.append(f"why: {_short(d['reasoning'])}")
    elif node == "web_search":
        out.append(f"status: {d.get('status', '')}; {len(d.get('results', []))} results")
    elif node == "generate":
        out.append(f"{len(d.get('citations', []))} citations from {len(d.get('evidence', []))} "
                   f"chunks of evidence" + ("; weak evidence" if d.get("weak_evidence") else ""))
    elif node == "check_grounding":
        claims = d.get("ungrounded_claims", [])
        out.append(f"grounded: {d.get('grounded')}; confidence {d.get('confidence', 0):.2f}; "
                   f"{len(claims)} ungrounded claim(s)")
        if claims:
            out.append(f"e.g. {_short(claims[0], 100)}")
    elif node == "grade_answer":
        out.append(f"useful: {d.get('useful')}")
        if d.get("reasoning"):
            out.append(f"why: {_short(d['reasoning'])}")
    elif node == "finalize_with_caveat" and d.get("caveat"):
        out.append(_short(d["caveat"]))
    elif node not in ("finalize", "fallback") and d:
        out.append("detail: " + ", ".join(sorted(d)))
    if d.get("fallbacks"):
        out.append(f"engine fallback: {_short(d['fallbacks'][0], 100)}")
    if event.llm_calls:
        out.append(f"{event.llm_calls} LLM call(s), {event.prompt_tokens}+"
                   f"{event.completion_tokens} tokens")
    return out


def _event_hover(event: "TraceEvent") -> str:
    head = (f"<b>Step {event.step}</b> · attempt {event.attempt} · "
            f"{event.duration_ms:.1f} ms")
    lines = [head, _wrap(event.summary)]
    if event.route:
        lines.append(_wrap(f"→ next: {event.route.get('to', '?')}: {event.route.get('why', '')}",
                           indent="   "))
    lines += [_wrap(line, indent="   ") for line in _detail_lines(event)]
    return "<br>".join(lines)


def _node_hover(node: str, events: list["TraceEvent"], run: "Run") -> str:
    if node == START:
        return f"<b>start</b><br>question: {_wrap(_short(run.question, 200))}"
    if node == END:
        return "<b>end</b>" + (f"<br>{_wrap(run.stop_reason)}" if run.stop_reason else "")
    if not events and node != _error_node(run):
        return f"<b>{_esc(node)}</b><br>not visited in this run"
    visits = f" ×{len(events)}" if len(events) > 1 else ""
    parts = [f"<b>{_esc(node)}</b>{visits}"] + [_event_hover(e) for e in events]
    if node == _error_node(run):
        parts.append(f"<b>Stopped by an error here</b><br>{_wrap(run.error)}")
    return "<br><br>".join(parts)


# --------------------------------------------------------------------------- geometry


def _positions(nodes: Iterable[str]) -> dict[str, tuple[float, float]]:
    pos: dict[str, tuple[float, float]] = {}
    extra = 0
    for node in nodes:
        if node in POSITIONS:
            pos[node] = POSITIONS[node]
        else:
            pos[node] = (extra * COLUMN, EXTRA_ROW_Y)
            extra += 1
    return pos


def _boxes(pos: dict[str, tuple[float, float]]) -> dict[str, _Box]:
    return {n: _Box(x, y, MARKER_R, MARKER_R) if n in (START, END) else
            _Box(x, y, BOX_W / 2, BOX_H / 2) for n, (x, y) in pos.items()}


def _bezier(a: tuple[float, float], b: tuple[float, float], bend: float) -> tuple:
    (x0, y0), (x2, y2) = a, b
    dx, dy = x2 - x0, y2 - y0
    n = math.hypot(dx, dy) or 1.0
    # The curve's greatest distance from the chord is half the control point's offset.
    mx, my = (x0 + x2) / 2 - dy / n * 2 * bend, (y0 + y2) / 2 + dx / n * 2 * bend
    return a, (mx, my), b


def _clip(p0, p1, p2, src: _Box, dst: _Box) -> _Curve:
    """Clip the curve to where it leaves ``src`` and enters ``dst`` (bisection on t)."""
    curve = _Curve(p0, p1, p2, 0.0, 1.0)

    def edge_t(box: _Box, inside_at: float, outside_at: float) -> float:
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
    return _Curve(p0, p1, p2, t0, t1)


def _collides(curve: _Curve, boxes: dict[str, _Box], skip: set[str]) -> bool:
    return any(box.contains(x, y, pad=0.07)
               for name, box in boxes.items() if name not in skip
               for x, y in curve.points(40)[1:-1])


def _route_edges(edges: list[tuple[str, str]], pos, boxes) -> dict[tuple[str, str], _Curve]:
    """A curve per edge: the hand-set bend, else the first automatic bend that misses every
    other node (a straight line when possible); an edge with a reverse twin always bends."""
    pairs = set(edges)
    curves: dict[tuple[str, str], _Curve] = {}
    for src, dst in edges:
        if src == dst:
            continue
        candidates = ([EDGE_BENDS[(src, dst)]] if (src, dst) in EDGE_BENDS else []) + [
            b for b in _AUTO_BENDS if not ((dst, src) in pairs and abs(b) < 0.12)] + [0.15]
        chosen = None
        for bend in candidates:
            curve = _clip(*_bezier(pos[src], pos[dst], bend), boxes[src], boxes[dst])
            if not _collides(curve, boxes, {src, dst}):
                chosen = curve
                break
        curves[(src, dst)] = chosen or _clip(*_bezier(pos[src], pos[dst], candidates[0]),
                                            boxes[src], boxes[dst])
    return curves


def _reading_normal(n: tuple[float, float]) -> tuple[float, float]:
    """The normal pointing up (or left, across a steep edge), so that labels stacked along it
    read in step order top-down or left to right."""
    nx, ny = n
    flip = ny < 0 if abs(ny) >= abs(nx) else nx > 0
    return (-nx, -ny) if flip else (nx, ny)


def _self_loop(box: _Box) -> _Curve:
    top = box.y + box.hh
    return _Curve((box.x - box.hw * 0.4, top), (box.x, top + 0.6), (box.x + box.hw * 0.4, top),
                  0.0, 1.0)


# --------------------------------------------------------------------------- figure


def _graph_parts(graph) -> tuple[list[str], list[tuple[str, str]]]:
    if graph is None:
        from rag.graph.build import build_graph

        graph = build_graph()
    if hasattr(graph, "get_graph"):
        graph = graph.get_graph()
    nodes = list(graph.nodes)
    edges = [(e.source, e.target) for e in graph.edges]
    return nodes, edges


def _arrow(curve: _Curve, color: str, width: float, name: str, head: int = 2,
           size: float = 1.0) -> dict:
    hx, hy = curve.at(curve.t1)
    tx, ty = curve.back_from_end(min(ARROW_LEN, curve.length() * 0.5))
    return dict(x=hx, y=hy, ax=tx, ay=ty, xref="x", yref="y", axref="x", ayref="y", text="",
                showarrow=True, arrowhead=head, arrowsize=size, arrowwidth=width,
                arrowcolor=color, standoff=0, startstandoff=0, name=name)


def _title(text: str) -> str:
    return "<br>".join(_esc(line) for line in textwrap.wrap(text, TITLE_WIDTH)) or "(no stop reason)"


def flow_figure(run: "Run", graph=None) -> "go.Figure":
    """The run drawn over its graph: a plotly Figure of every node and edge, with the path.

    ``graph`` is a compiled LangGraph graph or its ``get_graph()`` drawing; by default
    ``build_graph()``. Every node of the graph gets a box (``__start__``/``__end__`` a small
    marker), placed by :data:`POSITIONS` (unknown nodes in an extra row), every edge a faint grey
    curve with an arrowhead. The path of ``run`` is drawn on top: the transition into step k is
    a blue arrow labelled ``k`` (1..n, in the run's order; an annotation named ``step:k``);
    nodes visited more than once are labelled ``name ×visits``. Each box is coloured by the
    verdict of its last visit (:data:`STATUS_COLORS`), its hover lists every visit (step,
    attempt, summary, ``→ next: why``, compact detail), and the node trace (named ``nodes``)
    carries ``customdata`` = node name per point, for click selection. The title is the run's
    stop reason. Edge traces are named ``edge:src->dst``, path traces ``path:src->dst``.
    """
    import plotly.graph_objects as go

    nodes, edges = _graph_parts(graph)
    for node in list(run.path) + [n for n in [_error_node(run)] if n]:
        if node not in nodes:  # a run from another graph: show what it did rather than crash
            nodes.append(node)
    pos = _positions(nodes)
    boxes = _boxes(pos)

    # The path as transitions: step k enters path[k-1]; then the end, or the node that failed.
    transitions: list[tuple[str, str, Optional[int]]] = []
    prev = START
    for event in run.events:
        transitions.append((prev, event.node, event.step))
        prev = event.node
    error_node = _error_node(run)
    if error_node:
        transitions.append((prev, error_node, None))
    elif run.events and not run.events[-1].route:
        transitions.append((prev, END, None))

    curves = _route_edges(edges + [(s, d) for s, d, _ in transitions if (s, d) not in edges],
                          pos, boxes)

    fig = go.Figure()
    annotations: list[dict] = []
    for src, dst in edges:
        curve = curves.get((src, dst)) or _self_loop(boxes[src])
        xs, ys = zip(*curve.points())
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"edge:{src}->{dst}",
                                 line=dict(color=COLOR_EDGE, width=1.3), hoverinfo="skip",
                                 showlegend=False))
        annotations.append(_arrow(curve, COLOR_EDGE, 1.3, f"edge:{src}->{dst}", size=1.1))

    # Path: one thick curve per distinct transition, then a label per step along it.
    by_pair: dict[tuple[str, str], list[Optional[int]]] = defaultdict(list)
    for src, dst, step in transitions:
        by_pair[(src, dst)].append(step)
    events_by_step = {e.step: e for e in run.events}
    for (src, dst), steps in by_pair.items():
        curve = curves.get((src, dst)) or _self_loop(boxes[src])
        failed = dst == error_node and None in steps
        color = COLOR_ERROR if failed else COLOR_PATH
        xs, ys = zip(*curve.points())
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"path:{src}->{dst}",
                                 line=dict(color=color, width=3, dash="dot" if failed else None),
                                 hoverinfo="skip", showlegend=False))
        annotations.append(_arrow(curve, color, 2.2, f"path:{src}->{dst}", size=1.0))
        numbered = [s for s in steps if s is not None]
        tm = (curve.t0 + curve.t1) / 2
        mx, my = curve.at(tm)
        nx, ny = _reading_normal(curve.normal_at(tm))
        for i, step in enumerate(numbered):
            offset = ((len(numbered) - 1) / 2 - i) * LABEL_SPACING_PX
            event = events_by_step[step]
            before = events_by_step.get(step - 1)
            why = (before.route or {}).get("why", "") if before else "the run starts"
            attempt = f" (attempt {event.attempt})" if event.attempt > 1 else ""
            annotations.append(dict(
                x=mx, y=my, xref="x", yref="y", xshift=nx * offset, yshift=ny * offset,
                text=f"<b>{step}</b>", showarrow=False, name=f"step:{step}",
                font=dict(size=11, color=COLOR_PATH), bgcolor="#ffffff", bordercolor=COLOR_PATH,
                borderwidth=1, borderpad=2,
                hovertext=_wrap(f"Step {step}: {src} → {dst}{attempt}. Why: {why}"),
                hoverlabel=dict(bgcolor="#ffffff")))
        if failed:
            annotations.append(dict(x=mx, y=my, xref="x", yref="y", text="<b>error</b>",
                                    showarrow=False, name="error",
                                    font=dict(size=11, color=COLOR_ERROR), bgcolor="#ffffff",
                                    bordercolor=COLOR_ERROR, borderwidth=1, borderpad=2,
                                    hovertext=_wrap(run.error or "")))

    # Nodes: rounded boxes (shapes, below the traces) and one marker trace on top of them.
    events_of: dict[str, list] = defaultdict(list)
    for event in run.events:
        events_of[event.node].append(event)
    statuses = node_statuses(run)
    shapes, xs, ys, labels, hovers, symbols, sizes, colors, text_colors, text_pos = (
        [], [], [], [], [], [], [], [], [], [])
    for node in nodes:
        x, y = pos[node]
        xs.append(x)
        ys.append(y)
        hovers.append(_node_hover(node, events_of.get(node, []), run))
        if node in (START, END):
            reached = node == START and bool(transitions) or node == END and any(
                d == END for _, d, _ in transitions)
            symbols.append("circle")
            sizes.append(14)
            colors.append(COLOR_PATH if reached else COLOR_TERMINAL)
            labels.append("start" if node == START else "end")
            text_colors.append(COLOR_TERMINAL)
            text_pos.append("bottom center")
            continue
        status = statuses.get(node, NOT_VISITED)
        fill = STATUS_COLORS[status]
        visits = len(events_of.get(node, []))
        labels.append(f"<b>{_esc(node)}</b>" + (f"<br>×{visits}" if visits > 1 else ""))
        symbols.append("square")
        sizes.append(30)
        colors.append(fill)
        text_colors.append(STATUS_TEXT_COLORS[status])
        text_pos.append("middle center")
        shapes.append(_rounded_box(boxes[node], fill,
                                   COLOR_BORDER if status == NOT_VISITED else fill))
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers+text", name="nodes", customdata=list(nodes), text=labels,
        textposition=text_pos, textfont=dict(size=12, color=text_colors),
        marker=dict(symbol=symbols, size=sizes, color=colors, line=dict(width=0)),
        selected=dict(marker=dict(opacity=1)), unselected=dict(marker=dict(opacity=1)),
        hovertext=hovers, hovertemplate="%{hovertext}<extra></extra>", showlegend=False,
        hoverlabel=dict(bgcolor="#ffffff", bordercolor=COLOR_BORDER, align="left",
                        font=dict(size=12, color=COLOR_TEXT_DARK))))

    # A legend for the colours (traces with no points: nothing to hover or select).
    for status in (OK, WEAK, FAILED, NOT_VISITED):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=STATUS_LABELS[status],
                                 marker=dict(symbol="square", size=12, color=STATUS_COLORS[status],
                                             line=dict(width=1, color=COLOR_BORDER)),
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="path (step n)",
                             line=dict(color=COLOR_PATH, width=3), hoverinfo="skip"))

    xs_all = [b.x - b.hw for b in boxes.values()] + [b.x + b.hw for b in boxes.values()]
    ys_all = [b.y - b.hh for b in boxes.values()] + [b.y + b.hh for b in boxes.values()]
    curve_pts = [p for c in curves.values() for p in c.points(12)]
    ys_all += [p[1] for p in curve_pts]
    n_title_lines = _title(run.stop_reason).count("<br>") + 1
    fig.update_layout(
        title=dict(text=_title(run.stop_reason), x=0.01, xanchor="left", font=dict(size=15)),
        shapes=shapes, annotations=annotations, showlegend=True,
        legend=dict(orientation="h", x=0.5, xanchor="center", y=-0.02, yanchor="top",
                    itemclick=False, itemdoubleclick=False, font=dict(size=11)),
        xaxis=dict(visible=False, range=[min(xs_all) - 0.15, max(xs_all) + 0.15],
                   fixedrange=True),
        yaxis=dict(visible=False, range=[min(ys_all) - 0.2, max(ys_all) + 0.2], fixedrange=True),
        height=460 + (110 if any(p[1] <= EXTRA_ROW_Y for p in pos.values()) else 0),
        margin=dict(l=10, r=10, t=30 + 22 * n_title_lines, b=40),
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)",
        hovermode="closest", hoverdistance=30, clickmode="event+select", dragmode=False)
    return fig


def _rounded_box(box: _Box, fill: str, line: str, r: float = 0.07) -> dict:
    x0, x1, y0, y1 = box.x - box.hw, box.x + box.hw, box.y - box.hh, box.y + box.hh
    path = (f"M {x0 + r},{y0} L {x1 - r},{y0} Q {x1},{y0} {x1},{y0 + r} "
            f"L {x1},{y1 - r} Q {x1},{y1} {x1 - r},{y1} L {x0 + r},{y1} "
            f"Q {x0},{y1} {x0},{y1 - r} L {x0},{y0 + r} Q {x0},{y0} {x0 + r},{y0} Z")
    return dict(type="path", path=path, xref="x", yref="y", fillcolor=fill,
                line=dict(color=line, width=1.2), layer="below")
