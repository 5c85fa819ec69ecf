"""More plotly figures built from Runs: the flow with a step-by-step replay (plotly frames), the
path unrolled into attempts, a timeline (Gantt) of node durations, and charts for Insights.

Pure functions, like :mod:`rag.trace.flow` (which draws the flow itself): nothing imports streamlit,
nothing is built at import time, and every figure can be checked from its JSON.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from rag.trace import flow as viz
from rag.trace.story import Step, rounds, steps

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from rag.trace.pricing import Price
    from rag.models import Run

COLOR_REPLAY = "#f97316"
"""Orange: the steps replayed so far, and the node of the current step."""
REPLAY_TRACES = ("replay:trail", "replay:ring", "replay:current", "replay:caption")
"""The traces each replay frame updates, in this order."""
FRAME_MS = 900
"""How long Play shows each step, in ms."""
CAPTION_WIDTH = 125
RING_PAD = 0.07
"""How far the ring around the current node stands off its box, in data units."""


def _esc(text) -> str:
    return viz._esc(text)


def _wrap(text: str, width: int, max_lines: int = 2) -> str:
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "…"
    return "<br>".join(_esc(line) for line in lines)


def step_caption(step: Optional[Step], n: int) -> str:
    """The replay caption for ``step`` (None: before the first step), in plotly pseudo-HTML:
    ``Step 3 of 13 · rewrite 1 of 2 — decided … → next: why``."""
    if step is None:
        return (f"<b>Step 0 of {n}</b> · press ▶ Play, or drag the slider, to replay the run "
                "step by step")
    nxt = f" → {step.next}: {step.why}" if step.next else f" · {step.why}"
    body = _wrap(f"{step.decided}{nxt}", CAPTION_WIDTH)
    return f"<b>Step {step.step} of {n} · {_esc(step.label)}</b><br>{body}"


def _trace_xy(fig, name: str) -> tuple[list, list]:
    for t in fig.data:
        if t.name == name:
            return list(t.x), list(t.y)
    return [], []


def replay_figure(run: "Run", graph=None, *, step: Optional[int] = None) -> "go.Figure":
    """The flow of :func:`rag.viz.flow_figure` with a replay: plotly frames ``"0"`` .. ``"n"``
    (n = number of steps), where frame k draws steps 1..k as an orange trail along the edges
    taken, rings the node of step k, and captions it (node and attempt, what it decided, where
    it went next and why). A slider (one stop per frame) and Play / Pause buttons drive it.

    ``step`` (0..n, default n: the whole run) is the frame shown first; out-of-range values are
    clamped. The replay traces are named as in :data:`REPLAY_TRACES`; ``replay:current`` carries
    ``customdata`` = node name, like the ``nodes`` trace, for click selection.
    """
    import plotly.graph_objects as go

    fig = viz.flow_figure(run, graph)
    story = steps(run)
    n = len(story)
    step = n if step is None else max(0, min(n, int(step)))

    nodes = next(t for t in fig.data if t.name == "nodes")
    pos = {name: (x, y) for name, x, y in zip(nodes.customdata, nodes.x, nodes.y)}
    segments: list[tuple[list, list]] = []
    prev = viz.START
    for s in story:
        segments.append(_trace_xy(fig, f"path:{prev}->{s.node}"))
        prev = s.node

    x0, x1 = fig.layout.xaxis.range
    y0, y1 = fig.layout.yaxis.range
    caption_y = y0 - 0.3
    fig.update_yaxes(range=[y0 - 0.55, y1 + 0.3])  # room for the caption and the ring's label

    def ring(node: str) -> tuple[list, list]:
        x, y = pos[node]
        if node in (viz.START, viz.END):
            hw = hh = viz.MARKER_R + RING_PAD
        else:
            hw, hh = viz.BOX_W / 2 + RING_PAD, viz.BOX_H / 2 + RING_PAD
        return ([x - hw, x + hw, x + hw, x - hw, x - hw], [y - hh, y - hh, y + hh, y + hh, y - hh])

    def frame_data(k: int) -> list[dict]:
        xs: list = []
        ys: list = []
        for sx, sy in segments[:k]:
            xs += sx + [None]
            ys += sy + [None]
        current = story[k - 1] if k else None
        node = current.node if current else viz.START
        rx, ry = ring(node)
        cx, cy = pos[node]
        label = f"{k}. {current.label}" if current else "start"
        return [
            dict(type="scatter", x=xs, y=ys),
            dict(type="scatter", x=rx, y=ry),
            dict(type="scatter", x=[cx], y=[cy + (viz.BOX_H / 2 + 0.17)], text=[_esc(label)],
                 customdata=[node]),
            dict(type="scatter", x=[x0 + 0.05], y=[caption_y], text=[step_caption(current, n)]),
        ]

    first = frame_data(step)
    # The trail glows under the blue path; ring, label and caption sit on top of everything.
    trail = go.Scatter(x=first[0]["x"], y=first[0]["y"], mode="lines", name=REPLAY_TRACES[0],
                       line=dict(color=COLOR_REPLAY, width=9), opacity=0.45, hoverinfo="skip",
                       showlegend=False)
    ring_trace = go.Scatter(x=first[1]["x"], y=first[1]["y"], mode="lines",
                            name=REPLAY_TRACES[1], line=dict(color=COLOR_REPLAY, width=4),
                            hoverinfo="skip", showlegend=False)
    current = go.Scatter(x=first[2]["x"], y=first[2]["y"], mode="text", name=REPLAY_TRACES[2],
                         text=first[2]["text"], customdata=first[2]["customdata"],
                         textfont=dict(size=12, color=COLOR_REPLAY), hoverinfo="skip",
                         showlegend=False)
    caption = go.Scatter(x=first[3]["x"], y=first[3]["y"], mode="text", name=REPLAY_TRACES[3],
                         text=first[3]["text"], textposition="middle right",
                         textfont=dict(size=13, color=viz.COLOR_TEXT_DARK), hoverinfo="skip",
                         showlegend=False)
    base = list(fig.data)
    fig = go.Figure(data=[trail] + base + [ring_trace, current, caption], layout=fig.layout)
    indices = [0, len(base) + 1, len(base) + 2, len(base) + 3]
    fig.frames = [go.Frame(name=str(k), data=frame_data(k), traces=indices)
                  for k in range(n + 1)]

    def goto(k: int) -> dict:
        return dict(label=str(k), method="animate",
                    args=[[str(k)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                         transition=dict(duration=0))])

    height = fig.layout.height + 70
    fig.update_layout(
        height=height,
        margin=dict(b=fig.layout.margin.b + 70),
        sliders=[dict(active=step, steps=[goto(k) for k in range(n + 1)], x=0.16, len=0.84,
                      y=-0.1, yanchor="top", pad=dict(t=0, b=0),
                      currentvalue=dict(prefix="Step ", visible=True, font=dict(size=12)),
                      font=dict(size=10))],
        updatemenus=[dict(type="buttons", direction="left", showactive=False, x=0.0, y=-0.1,
                          xanchor="left", yanchor="top", pad=dict(t=18, r=6),
                          buttons=[
                              dict(label="▶ Play", method="animate",
                                   args=[[str(k) for k in range(n + 1)],
                                         dict(mode="immediate", fromcurrent=False,
                                              frame=dict(duration=FRAME_MS, redraw=True),
                                              transition=dict(duration=0))]),
                              dict(label="❚❚ Pause", method="animate",
                                   args=[[None], dict(mode="immediate",
                                                      frame=dict(duration=0, redraw=False),
                                                      transition=dict(duration=0))])])])
    return fig


# --------------------------------------------------------------------------- unrolled path

ROW_PX = 30
BAND_COLORS = ("#f5f7fa", "#e9edf3")


def path_figure(run: "Run", *, title: Optional[str] = None) -> "go.Figure":
    """The run's path unrolled, top to bottom: one box per step labelled ``k. label`` (see
    :func:`rag.story.step_label`) and coloured by its verdict (:data:`rag.viz.STATUS_COLORS`),
    with a band per retrieval attempt (``Attempt r``), so loops read as a sequence.

    The step trace is named ``steps`` (text in step order, ``customdata`` = node name, hover =
    what it decided and why); bands are layout shapes named ``attempt:r``. Height is
    ``ROW_PX`` px per step plus margins.
    """
    import plotly.graph_objects as go

    story = steps(run)
    statuses = [viz.event_status(e, run.options.min_relevant) for e in run.events]
    if run.error and statuses:
        statuses[-1] = viz.FAILED
    shapes: list[dict] = []
    annotations: list[dict] = []
    for i, r in enumerate(rounds(run)):
        top = -r.steps[0].step + 0.5
        bottom = -r.steps[-1].step - 0.5
        shapes.append(dict(type="rect", x0=0, x1=1, y0=bottom, y1=top, xref="x", yref="y",
                           fillcolor=BAND_COLORS[i % 2], line=dict(width=0), layer="below",
                           name=f"attempt:{r.number}"))
        annotations.append(dict(x=0.09, y=(top + bottom) / 2, xref="x", yref="y",
                                text=f"Attempt {r.number}", showarrow=False,
                                textangle=-90 if len(r.steps) > 2 else 0,
                                font=dict(size=10, color=viz.COLOR_TERMINAL)))
    for s, status in zip(story, statuses):
        shapes.append(dict(type="rect", x0=0.2, x1=0.98, y0=-s.step - 0.38, y1=-s.step + 0.38,
                           xref="x", yref="y", fillcolor=viz.STATUS_COLORS[status],
                           line=dict(width=0), layer="below", name=f"step:{s.step}"))
    hovers = [f"<b>{s.step}. {_esc(s.label)}</b><br>{_wrap(s.decided, 70, 4)}<br>"
              + (f"→ {_esc(s.next)}: " if s.next else "") + _wrap(s.why, 70, 3)
              for s in story]
    fig = go.Figure(go.Scatter(
        x=[0.23] * len(story), y=[-s.step for s in story], mode="text", name="steps",
        text=[f"<b>{s.step}.</b> {_esc(s.label)}" for s in story],
        textposition="middle right", customdata=[s.node for s in story],
        textfont=dict(size=12, color=[viz.STATUS_TEXT_COLORS[st] for st in statuses]),
        hovertext=hovers, hovertemplate="%{hovertext}<extra></extra>", showlegend=False))
    n = max(1, len(story))
    fig.update_layout(
        title=dict(text=_esc(title), x=0.01, font=dict(size=13)) if title else None,
        shapes=shapes, annotations=annotations, showlegend=False,
        xaxis=dict(visible=False, range=[0, 1], fixedrange=True),
        yaxis=dict(visible=False, range=[-n - 0.6, -0.4], fixedrange=True),
        height=ROW_PX * n + (60 if title else 24), margin=dict(l=4, r=4, t=36 if title else 8, b=8),
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)", dragmode=False,
        hoverlabel=dict(bgcolor="#ffffff", align="left"))
    return fig


# --------------------------------------------------------------------------- timeline


def timeline_figure(run: "Run", prices: Mapping[str, "Price"] | None = None) -> "go.Figure":
    """A Gantt chart of the run: one horizontal bar per step (``k. label``, step 1 on top) from
    its start to its end, in ms since the run started, coloured by its verdict.

    The bar trace is named ``steps``; ``base`` holds the start offsets (ms), ``x`` the
    durations (ms), ``customdata`` rows ``[node, llm_calls, prompt_tokens, completion_tokens,
    cost]`` (cost as text: ``$0.0012``, ``$0`` or ``n/a``). Bars of steps that called an LLM are
    labelled with their tokens and cost; the hover shows them for every step.
    """
    import plotly.graph_objects as go

    from rag.trace.pricing import event_cost, format_cost, load_prices

    prices = load_prices() if prices is None else prices
    story = steps(run)
    t0 = min((e.started_at for e in run.events), default=0.0)
    labels = [f"{s.step}. {s.label}" for s in story]
    costs = [event_cost(e, run, prices) for e in run.events]
    texts = [f"{e.prompt_tokens + e.completion_tokens} tok · {format_cost(c)}"
             if e.llm_calls or e.prompt_tokens or e.completion_tokens else ""
             for e, c in zip(run.events, costs)]
    statuses = [viz.event_status(e, run.options.min_relevant) for e in run.events]
    fig = go.Figure(go.Bar(
        y=labels, x=[max(e.duration_ms, 0.05) for e in run.events],
        base=[round((e.started_at - t0) * 1000, 3) for e in run.events], orientation="h",
        name="steps", marker=dict(color=[viz.STATUS_COLORS[s] if s != viz.NOT_VISITED
                                         else viz.COLOR_VISITED for s in statuses]),
        customdata=[[e.node, e.llm_calls, e.prompt_tokens, e.completion_tokens, format_cost(c)]
                    for e, c in zip(run.events, costs)],
        text=texts, textposition="outside", cliponaxis=False,
        hovertemplate=("<b>%{y}</b><br>starts at %{base:.1f} ms, lasts %{x:.1f} ms<br>"
                       "%{customdata[1]} LLM call(s), %{customdata[2]} prompt + "
                       "%{customdata[3]} completion tokens, %{customdata[4]}<extra></extra>")))
    total_tokens = run.prompt_tokens + run.completion_tokens
    fig.update_layout(
        title=dict(text=(f"{run.duration_ms:.0f} ms · {run.llm_calls} LLM call(s) · "
                         f"{total_tokens} tokens"), x=0.01, font=dict(size=13)),
        xaxis=dict(title="ms since the run started", rangemode="tozero"),
        yaxis=dict(autorange="reversed", type="category"),
        height=80 + 24 * max(1, len(labels)), margin=dict(l=10, r=90, t=40, b=40),
        showlegend=False, plot_bgcolor="rgba(0,0,0,0)", bargap=0.25)
    return fig


# --------------------------------------------------------------------------- insights


def bar_figure(counts: Sequence[tuple[str, float]] | Mapping[str, float], *, title: str,
               horizontal: bool = False, value_label: str = "runs") -> "go.Figure":
    """A bar chart of ``counts`` (label -> value, in the order given), named ``bars``.
    ``horizontal`` puts labels on the y axis, first on top (for long labels such as paths)."""
    import plotly.graph_objects as go

    items = list(counts.items()) if isinstance(counts, Mapping) else list(counts)
    labels = [str(k) for k, _ in items]
    values = [v for _, v in items]
    if horizontal:
        bar = go.Bar(y=labels, x=values, orientation="h", name="bars", text=values,
                     textposition="auto", marker=dict(color=viz.COLOR_PATH),
                     hovertemplate=f"%{{y}}<br>%{{x}} {value_label}<extra></extra>")
    else:
        bar = go.Bar(x=labels, y=values, name="bars", text=values, textposition="auto",
                     marker=dict(color=viz.COLOR_PATH),
                     hovertemplate=f"%{{x}}<br>%{{y}} {value_label}<extra></extra>")
    fig = go.Figure(bar)
    fig.update_layout(title=dict(text=_esc(title), x=0.01, font=dict(size=14)),
                      height=max(260, 60 + 28 * len(items)) if horizontal else 300,
                      margin=dict(l=10, r=10, t=40, b=10), showlegend=False,
                      yaxis=dict(autorange="reversed", automargin=True) if horizontal else None)
    return fig


def latency_figure(latencies_ms: Sequence[float], p50: Optional[float],
                   p95: Optional[float]) -> "go.Figure":
    """A histogram of run latencies (ms), named ``latency``, with the p50 and p95 marked as
    vertical lines (shapes named ``p50`` and ``p95``)."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Histogram(x=list(latencies_ms), name="latency", nbinsx=20,
                                 marker=dict(color=viz.COLOR_PATH)))
    for name, value in (("p50", p50), ("p95", p95)):
        if value is not None:
            fig.add_vline(x=value, line=dict(color=COLOR_REPLAY, dash="dash"), name=name,
                          annotation_text=f"{name} {value:.0f} ms")
    fig.update_layout(title=dict(text="Latency per run", x=0.01, font=dict(size=14)),
                      xaxis=dict(title="ms"), yaxis=dict(title="runs"), height=300,
                      margin=dict(l=10, r=10, t=40, b=10), showlegend=False)
    return fig
