"""The flow figure: a Run drawn over the graph that ran it, with its path, verdicts and hover text.

Pure functions: nothing here imports streamlit or runs anything at import time, so the figures
can be tested from their JSON without a browser. The flow figure takes its nodes and edges from
``build_graph().get_graph()`` and only the path from the Run, so it can never disagree with the
graph that actually ran. What each node means (colour, hover lines, place) comes from
:data:`rag.trace.views.VIEWS`.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from rag.graph.build import build_graph
from rag.models import Run, TraceEvent
from rag.text import clip
from rag.trace import formats
from rag.trace.geometry import (
    END,
    EXTRA_ROW_Y,
    LABEL_SPACING_PX,
    START,
    Curve,
    arrow_annotation,
    node_boxes,
    node_positions,
    reading_normal,
    rounded_box,
    route_edges,
    self_loop,
)
from rag.trace.views import (
    FAILED,
    NOT_VISITED,
    OK,
    STATUS_COLORS,
    STATUS_LABELS,
    STATUS_TEXT_COLORS,
    WEAK,
    detail_lines,
    event_status,
    short,
)

if TYPE_CHECKING:  # plotly is imported when a figure is built, not with the library
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

COLOR_BORDER = "#c5cad3"
COLOR_EDGE = "#c5cad3"
"""Faint grey: every edge of the graph."""
COLOR_PATH = "#2563eb"
"""The run's path, drawn over the edges (the app's primary colour)."""
COLOR_ERROR = "#d64545"
COLOR_TERMINAL = "#6b7280"
COLOR_TEXT_DARK = "#1f2937"
COLOR_TEXT_LIGHT = "#ffffff"

HOVER_WIDTH = 72
"""Characters per hover line before wrapping."""


def node_statuses(run: Run) -> dict[str, str]:
    """Node name -> the status of its last visit in ``run`` (see :func:`event_status`).

    The node a run stopped in with an error is ``failed``. Nodes not visited are absent.
    """
    statuses = {e.node: event_status(e, run.options.min_relevant) for e in run.events}
    if node := _error_node(run):
        statuses[node] = FAILED
    return statuses


def _error_node(run: Run) -> str | None:
    """The node a run's error happened in, if any."""
    return run.error_node if run.error else None


# --------------------------------------------------------------------------- hover text


def esc(text: Any) -> str:
    """Plain text safe inside plotly's pseudo-HTML labels."""
    return (str(text).replace("&", "&#38;").replace("<", "&#60;").replace(">", "&#62;"))


def _wrap(text: Any, width: int = HOVER_WIDTH, indent: str = "") -> str:
    lines = textwrap.wrap(str(text), width, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False) or [""]
    return "<br>".join(esc(line) for line in lines)


def _event_hover(event: TraceEvent) -> str:
    head = (f"<b>Step {event.step}</b> · attempt {event.attempt} · "
            f"{formats.ms(event.duration_ms)}")
    lines = [head, _wrap(event.summary)]
    if event.route:
        lines.append(_wrap(f"→ next: {event.route.to}: {event.route.why}",
                           indent="   "))
    lines += [_wrap(line, indent="   ") for line in detail_lines(event)]
    return "<br>".join(lines)


def _node_hover(node: str, events: list[TraceEvent], run: Run) -> str:
    if node == START:
        return f"<b>start</b><br>question: {_wrap(short(run.question, 200))}"
    if node == END:
        return "<b>end</b>" + (f"<br>{_wrap(run.stop_reason)}" if run.stop_reason else "")
    if not events and node != _error_node(run):
        return f"<b>{esc(node)}</b><br>not visited in this run"
    visits = f" ×{len(events)}" if len(events) > 1 else ""
    parts = [f"<b>{esc(node)}</b>{visits}"] + [_event_hover(e) for e in events]
    if node == _error_node(run):
        parts.append(f"<b>Stopped by an error here</b><br>{_wrap(run.error)}")
    return "<br><br>".join(parts)


# --------------------------------------------------------------------------- figure


def _graph_parts(graph) -> tuple[list[str], list[tuple[str, str]]]:
    if graph is None:
        graph = build_graph()
    if hasattr(graph, "get_graph"):
        graph = graph.get_graph()
    nodes = list(graph.nodes)
    edges = [(e.source, e.target) for e in graph.edges]
    return nodes, edges


def wrap_html(text: object, width: int, max_lines: int = 2) -> str:
    """``text`` wrapped at ``width`` characters into at most ``max_lines`` plotly lines (``<br>``), escaped.

    A cut last line ends with an ellipsis.
    """
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if len(lines) > max_lines:  # the last line cut at a word boundary, with an ellipsis
        lines = lines[:max_lines - 1] + [clip(" ".join(lines[max_lines - 1:]), width)]
    return "<br>".join(esc(line) for line in lines)


def _transitions(run: Run) -> list[tuple[str, str, int | None]]:
    """The path as transitions: step k enters path[k-1]; then the end, or the node that failed."""
    transitions: list[tuple[str, str, int | None]] = []
    prev = START
    for event in run.events:
        transitions.append((prev, event.node, event.step))
        prev = event.node
    error_node = _error_node(run)
    if error_node:
        transitions.append((prev, error_node, None))
    elif run.events and not run.events[-1].route:
        transitions.append((prev, END, None))
    return transitions


def _step_labels(curve: Curve, src: str, dst: str, numbered: list[int],
                 events_by_step: dict[int, TraceEvent]) -> list[dict]:
    """One numbered label per step taken along ``curve``, stacked across it, with why it was taken."""
    tm = (curve.t0 + curve.t1) / 2
    mx, my = curve.at(tm)
    nx, ny = reading_normal(curve.normal_at(tm))
    out = []
    for i, step in enumerate(numbered):
        offset = ((len(numbered) - 1) / 2 - i) * LABEL_SPACING_PX
        event = events_by_step[step]
        before = events_by_step.get(step - 1)
        why = before.route.why if before and before.route else ("" if before else "the run starts")
        attempt = f" (attempt {event.attempt})" if event.attempt > 1 else ""
        out.append(dict(
            x=mx, y=my, xref="x", yref="y", xshift=nx * offset, yshift=ny * offset,
            text=f"<b>{step}</b>", showarrow=False, name=f"step:{step}",
            font=dict(size=11, color=COLOR_PATH), bgcolor="#ffffff", bordercolor=COLOR_PATH,
            borderwidth=1, borderpad=2,
            hovertext=_wrap(f"Step {step}: {src} → {dst}{attempt}. Why: {why}"),
            hoverlabel=dict(bgcolor="#ffffff")))
    return out


LABEL_CHARS = 14
"""A node name longer than this is drawn on two lines, broken after an underscore."""


def node_label(node: str, width: int = LABEL_CHARS) -> str:
    """``node``'s name for its box, bold and escaped: on two lines when it is longer than ``width``.

    Broken after the underscore nearest its middle (``contextualize_`` / ``question``), so a label stays
    about as wide as its box and a narrow figure neither cuts it nor runs it into its neighbours.
    """
    cuts = [i + 1 for i, ch in enumerate(node) if ch == "_"]
    if len(node) <= width or not cuts:
        return f"<b>{esc(node)}</b>"
    cut = min(cuts, key=lambda i: abs(i - len(node) / 2))
    return f"<b>{esc(node[:cut])}<br>{esc(node[cut:])}</b>"


def flow_figure(run: Run, graph=None) -> go.Figure:
    """The run drawn over its graph: a plotly Figure of every node and edge, with the path.

    ``graph`` is a compiled LangGraph graph or its ``get_graph()`` drawing; by default
    ``build_graph()``. Every node of the graph gets a box (``__start__``/``__end__`` a small
    marker), placed by :data:`POSITIONS` (unknown nodes in an extra row), every edge a faint grey
    curve with an arrowhead. The path of ``run`` is drawn on top: the transition into step k is
    a blue arrow labelled ``k`` (1..n, in the run's order; an annotation named ``step:k``);
    nodes visited more than once are labelled ``name ×visits``. Each box is coloured by the
    verdict of its last visit (:data:`STATUS_COLORS`), its hover lists every visit (step,
    attempt, summary, ``→ next: why``, compact detail), and the node trace (named ``nodes``)
    carries ``customdata`` = node name per point, for click selection. The figure has no title (the
    pages and the export state the stop reason once, above it). Edge traces are named
    ``edge:src->dst``, path traces ``path:src->dst``.
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

    nodes, edges = _graph_parts(graph)
    for node in list(run.path) + [n for n in [_error_node(run)] if n]:
        if node not in nodes:  # a run from another graph: show what it did rather than crash
            nodes.append(node)
    pos = node_positions(nodes)
    boxes = node_boxes(pos)

    transitions = _transitions(run)
    error_node = _error_node(run)

    curves = route_edges(edges + [(s, d) for s, d, _ in transitions if (s, d) not in edges],
                          pos, boxes)

    fig = go.Figure()
    annotations: list[dict] = []
    for src, dst in edges:
        curve = curves.get((src, dst)) or self_loop(boxes[src])
        ex, ey = zip(*curve.points(), strict=True)
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name=f"edge:{src}->{dst}",
                                 line=dict(color=COLOR_EDGE, width=1.3), hoverinfo="skip",
                                 showlegend=False))
        annotations.append(arrow_annotation(curve, COLOR_EDGE, 1.3, f"edge:{src}->{dst}", size=1.1))

    # Path: one thick curve per distinct transition, then a label per step along it.
    by_pair: dict[tuple[str, str], list[int | None]] = defaultdict(list)
    for src, dst, step in transitions:
        by_pair[(src, dst)].append(step)
    events_by_step = {e.step: e for e in run.events}
    for (src, dst), steps in by_pair.items():
        curve = curves.get((src, dst)) or self_loop(boxes[src])
        failed = dst == error_node and None in steps
        color = COLOR_ERROR if failed else COLOR_PATH
        px, py = zip(*curve.points(), strict=True)
        fig.add_trace(go.Scatter(x=px, y=py, mode="lines", name=f"path:{src}->{dst}",
                                 line=dict(color=color, width=3, dash="dot" if failed else None),
                                 hoverinfo="skip", showlegend=False))
        annotations.append(arrow_annotation(curve, color, 2.2, f"path:{src}->{dst}", size=1.0))
        annotations += _step_labels(curve, src, dst, [s for s in steps if s is not None], events_by_step)
        mx, my = curve.at((curve.t0 + curve.t1) / 2)
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
    shapes: list[dict] = []
    xs: list[float] = []
    ys: list[float] = []
    labels: list[str] = []
    hovers: list[str] = []
    symbols: list[str] = []
    sizes: list[float] = []
    colors: list[str] = []
    text_colors: list[str] = []
    text_pos: list[str] = []
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
        labels.append(node_label(node) + (f"<br>×{visits}" if visits > 1 else ""))
        symbols.append("square")
        sizes.append(30)
        colors.append(fill)
        text_colors.append(STATUS_TEXT_COLORS[status])
        text_pos.append("middle center")
        shapes.append(rounded_box(boxes[node], fill,
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
    fig.update_layout(  # no title: the page says the stop reason once, above the figure
        shapes=shapes, annotations=annotations, showlegend=True,
        # Above the flow: below it, a narrow screen wraps it over the replay's slider and Play.
        legend=dict(orientation="h", x=0.5, xanchor="center", y=1.0, yanchor="bottom",
                    itemclick=False, itemdoubleclick=False, font=dict(size=11)),
        xaxis=dict(visible=False, range=[min(xs_all) - 0.15, max(xs_all) + 0.15],
                   fixedrange=True),
        yaxis=dict(visible=False, range=[min(ys_all) - 0.2, max(ys_all) + 0.2], fixedrange=True),
        height=460 + (110 if any(p[1] <= EXTRA_ROW_Y for p in pos.values()) else 0),
        margin=dict(l=10, r=10, t=16, b=40),
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)",
        hovermode="closest", hoverdistance=30, clickmode="event+select", dragmode=False)
    return fig


