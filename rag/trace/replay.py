"""The flow with a step-by-step replay (plotly frames).

The steps so far as an orange trail, the current node ringed, and a caption saying what it decided and where
it went next and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.models import Run
from rag.text import clip
from rag.trace import flow as viz
from rag.trace.flow import esc, wrap_html
from rag.trace.geometry import BOX_H, BOX_W, END, MARKER_R, START
from rag.trace.story import Step, steps

if TYPE_CHECKING:  # plotly is imported when a figure is built, not with the library
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

COLOR_REPLAY = "#f97316"
"""Orange: the steps replayed so far, and the node of the current step."""
REPLAY_TRACES = ("replay:trail", "replay:ring", "replay:current", "replay:caption")
"""The traces each replay frame updates, in this order."""
FRAME_MS = 900
"""How long Play shows each step, in ms."""
CAPTION_WIDTH = 125
RING_PAD = 0.07
"""How far the ring around the current node stands off its box, in data units."""


def step_caption(step: Step | None, n: int) -> str:
    """The replay caption for ``step`` (None: before the first step), in plotly pseudo-HTML.

    ``Step 3 of 13 · rewrite 1 of 2 — decided … → next: why``.
    """
    if step is None:
        return (f"<b>Step 0 of {n}</b> · drag the slider to replay the run "
                "step by step")
    nxt = f" → {step.next}: {step.why}" if step.next else f" · {step.why}"
    # what the step did, cut to one line's worth, so the decision (→ next) always shows
    body = wrap_html(f"{clip(step.decided, CAPTION_WIDTH)}{nxt}", CAPTION_WIDTH)
    return f"<b>Step {step.step} of {n} · {esc(step.label)}</b><br>{body}"


def _trace_xy(fig, name: str) -> tuple[list, list]:
    for t in fig.data:
        if t.name == name:
            return list(t.x), list(t.y)
    return [], []


def replay_figure(run: Run, graph=None, *, step: int | None = None, controls: bool = True) -> go.Figure:
    """The flow of :func:`rag.viz.flow_figure` with a replay: plotly frames ``"0"`` ..

    ``"n"`` (n = number of steps), where frame k draws steps 1..k as an orange trail along the edges taken,
    rings the node of step k, and captions it (node and attempt, what it decided, where it went next and why).
    A slider (one stop per frame) and Play / Pause buttons drive it.

    ``step`` (0..n, default n: the whole run) is the frame shown first; out-of-range values are
    clamped. The replay traces are named as in :data:`REPLAY_TRACES`; ``replay:current`` carries
    ``customdata`` = node name, like the ``nodes`` trace, for click selection.

    ``controls=False`` leaves out the frames, slider and Play: the figure shows ``step`` only, for a page
    whose own step control drives it (one control, so the figure and the page never disagree on the step).
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

    fig = viz.flow_figure(run, graph)
    story = steps(run)
    n = len(story)
    step = n if step is None else max(0, min(n, int(step)))

    nodes = next(t for t in fig.data if t.name == "nodes")
    pos = {name: (x, y) for name, x, y in zip(nodes.customdata, nodes.x, nodes.y, strict=False)}
    segments: list[tuple[list, list]] = []
    prev = START
    for s in story:
        segments.append(_trace_xy(fig, f"path:{prev}->{s.node}"))
        prev = s.node

    x0, x1 = fig.layout.xaxis.range
    y0, y1 = fig.layout.yaxis.range
    caption_y = y0 - 0.3
    fig.update_yaxes(range=[y0 - 0.55, y1 + 0.3])  # room for the caption and the ring's label

    def ring(node: str) -> tuple[list, list]:
        x, y = pos[node]
        if node in (START, END):
            hw = hh = MARKER_R + RING_PAD
        else:
            hw, hh = BOX_W / 2 + RING_PAD, BOX_H / 2 + RING_PAD
        return ([x - hw, x + hw, x + hw, x - hw, x - hw], [y - hh, y - hh, y + hh, y + hh, y - hh])

    def frame_data(k: int) -> list[dict]:
        xs: list = []
        ys: list = []
        for sx, sy in segments[:k]:
            xs += sx + [None]
            ys += sy + [None]
        current = story[k - 1] if k else None
        node = current.node if current else START
        rx, ry = ring(node)
        cx, cy = pos[node]
        label = f"{k}. {current.label}" if current else "start"
        return [
            dict(type="scatter", x=xs, y=ys),
            dict(type="scatter", x=rx, y=ry),
            dict(type="scatter", x=[cx], y=[cy + (BOX_H / 2 + 0.17)], text=[esc(label)],
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
    if not controls:
        return fig
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
