"""Charts built from Runs.

The path unrolled into attempts, a timeline (Gantt) of node durations, and the bar and latency charts of
Insights.

Pure functions, like :mod:`rag.trace.flow` (which draws the flow itself): nothing imports streamlit,
nothing is built at import time, and every figure can be checked from its JSON.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rag.models import Run
from rag.trace import flow as viz
from rag.trace import formats, views
from rag.trace.flow import esc, wrap_html
from rag.trace.pricing import Price, event_cost, format_cost, load_prices
from rag.trace.replay import COLOR_REPLAY
from rag.trace.story import rounds, steps

if TYPE_CHECKING:  # plotly is imported when a figure is built, not with the library
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

# --------------------------------------------------------------------------- unrolled path

ROW_PX = 30
BAND_COLORS = ("#f5f7fa", "#e9edf3")


def path_figure(run: Run, *, title: str | None = None) -> go.Figure:
    """The run's path unrolled, top to bottom.

    One box per step labelled ``k. label`` (see :func:`rag.trace.story.step_label`) and coloured by its
    verdict (:data:`rag.views.STATUS_COLORS`), with a band per retrieval attempt (``Attempt r``), so loops
    read as a sequence.

    The step trace is named ``steps`` (text in step order, ``customdata`` = node name, hover =
    what it decided and why); bands are layout shapes named ``attempt:r``. Height is
    ``ROW_PX`` px per step plus margins.
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

    story = steps(run)
    statuses = [views.event_status(e, run.options.min_relevant) for e in run.events]
    if run.error and statuses:
        statuses[-1] = views.FAILED
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
    for s, status in zip(story, statuses, strict=False):
        shapes.append(dict(type="rect", x0=0.2, x1=0.98, y0=-s.step - 0.38, y1=-s.step + 0.38,
                           xref="x", yref="y", fillcolor=views.STATUS_COLORS[status],
                           line=dict(width=0), layer="below", name=f"step:{s.step}"))
    hovers = [f"<b>{s.step}. {esc(s.label)}</b><br>{wrap_html(s.decided, 70, 4)}<br>"
              + (f"→ {esc(s.next)}: " if s.next else "") + wrap_html(s.why, 70, 3)
              for s in story]
    fig = go.Figure(go.Scatter(
        x=[0.23] * len(story), y=[-s.step for s in story], mode="text", name="steps",
        text=[f"<b>{s.step}.</b> {esc(s.label)}" for s in story],
        textposition="middle right", customdata=[s.node for s in story],
        textfont=dict(size=12, color=[views.STATUS_TEXT_COLORS[st] for st in statuses]),
        hovertext=hovers, hovertemplate="%{hovertext}<extra></extra>", showlegend=False))
    n = max(1, len(story))
    fig.update_layout(
        title=dict(text=esc(title), x=0.01, font=dict(size=13)) if title else None,
        shapes=shapes, annotations=annotations, showlegend=False,
        xaxis=dict(visible=False, range=[0, 1], fixedrange=True),
        yaxis=dict(visible=False, range=[-n - 0.6, -0.4], fixedrange=True),
        height=ROW_PX * n + (60 if title else 24), margin=dict(l=4, r=4, t=36 if title else 8, b=8),
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)", dragmode=False,
        hoverlabel=dict(bgcolor="#ffffff", align="left"))
    return fig


# --------------------------------------------------------------------------- timeline

TICK_CHARS = 20
"""Characters per line of a timeline label before it wraps."""
TICK_PX = 7
"""Width of one label character at the axis font (12 px), in px, for the left margin."""


def tick_label(text: str, width: int = TICK_CHARS) -> str:
    """``text`` (``8. grade_documents 3 of 3``) in lines of at most ``width`` characters, escaped.

    Lines are joined by ``<br>``. A trailing ``k of n`` stays whole, on the last line when it fits; a longer
    name breaks after an underscore (``finalize_with_`` / ``caveat``), else every ``width`` characters.
    """
    m = re.fullmatch(r"(.*?)((?: \d+ of \d+)?)", " ".join(text.split()))
    head, tail = (m.group(1), m.group(2).strip()) if m else (text, "")
    lines: list[str] = []
    while len(head) > width:
        cut = head.rfind("_", 0, width) + 1 or head.rfind(" ", 0, width + 1) + 1 or width
        lines.append(head[:cut].rstrip())
        head = head[cut:]
    lines.append(head)
    if tail:
        if len(lines[-1]) + 1 + len(tail) <= width:
            lines[-1] += " " + tail
        else:
            lines.append(tail)
    return "<br>".join(esc(line) for line in lines)


def timeline_figure(run: Run, prices: Mapping[str, Price] | None = None) -> go.Figure:
    """A Gantt chart of the run.

    One horizontal bar per step (``k. label``, step 1 on top) from its start to its end, in ms since the run
    started, coloured by its verdict.

    The bar trace is named ``steps``; ``base`` holds the start offsets (ms), ``x`` the
    durations (ms), ``customdata`` rows ``[node, llm_calls, prompt_tokens, completion_tokens,
    cost]`` (cost as text: ``$0.0012``, ``$0`` or ``n/a``). Bars of steps that called an LLM are
    labelled with their tokens and cost; the hover shows them for every step.
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library


    prices = load_prices() if prices is None else prices
    story = steps(run)
    t0 = min((e.started_at for e in run.events), default=0.0)
    labels = [tick_label(f"{s.step}. {s.label}") for s in story]
    longest = max((len(line) for lab in labels for line in lab.split("<br>")), default=0)
    costs = [event_cost(e, run, prices) for e in run.events]
    texts = [f"{e.prompt_tokens + e.completion_tokens} tok · {format_cost(c)}"
             if e.llm_calls or e.prompt_tokens or e.completion_tokens else ""
             for e, c in zip(run.events, costs, strict=False)]
    statuses = [views.event_status(e, run.options.min_relevant) for e in run.events]
    fig = go.Figure(go.Bar(
        y=labels, x=[max(e.duration_ms, 0.05) for e in run.events],
        base=[round((e.started_at - t0) * 1000, 3) for e in run.events], orientation="h",
        name="steps", marker=dict(color=[views.STATUS_COLORS[s] if s != views.NOT_VISITED
                                         else views.STATUS_COLORS[views.VISITED] for s in statuses]),
        customdata=[[e.node, e.llm_calls, e.prompt_tokens, e.completion_tokens, format_cost(c)]
                    for e, c in zip(run.events, costs, strict=False)],
        text=texts, textposition="outside", cliponaxis=False,
        hovertemplate=("<b>%{y}</b><br>starts at %{base:.1f} ms, lasts %{x:.1f} ms<br>"
                       "%{customdata[1]} LLM call(s), %{customdata[2]} prompt + "
                       "%{customdata[3]} completion tokens, %{customdata[4]}<extra></extra>")))
    total_tokens = run.prompt_tokens + run.completion_tokens
    fig.update_layout(
        title=dict(text=(f"{formats.ms(run.duration_ms)} · {formats.plural(run.llm_calls, 'LLM call')} · "
                         f"{total_tokens} tokens"), x=0.01, font=dict(size=13)),
        xaxis=dict(title="ms since the run started", rangemode="tozero"),
        # Labels wrapped to TICK_CHARS and a left margin that holds them: never clipped, even on a phone
        yaxis=dict(autorange="reversed", type="category", automargin=True, ticksuffix=" "),
        height=80 + (34 if "<br>" in "".join(labels) else 24) * max(1, len(labels)),
        margin=dict(l=TICK_PX * longest + 16, r=90, t=40, b=40),
        showlegend=False, plot_bgcolor="rgba(0,0,0,0)", bargap=0.25)
    return fig


# --------------------------------------------------------------------------- insights


def bar_figure(counts: Sequence[tuple[str, float]] | Mapping[str, float], *, title: str,
               horizontal: bool = False, value_label: str = "runs") -> go.Figure:
    """A bar chart of ``counts`` (label -> value, in the order given), named ``bars``.

    ``horizontal`` puts labels on the y axis, first on top (for long labels such as paths).
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

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
    fig.update_layout(title=dict(text=esc(title), x=0.01, font=dict(size=14)),
                      height=max(260, 60 + 28 * len(items)) if horizontal else 300,
                      margin=dict(l=10, r=10, t=40, b=10), showlegend=False,
                      yaxis=dict(autorange="reversed", automargin=True) if horizontal else None)
    return fig


def latency_figure(latencies_ms: Sequence[float], p50: float | None,
                   p95: float | None) -> go.Figure:
    """A histogram of run latencies.

    (ms), named ``latency``, with the p50 and p95 marked as vertical lines (shapes named ``p50`` and ``p95``).
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

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


OUTCOME_COLORS = {"answered_clean": views.STATUS_COLORS[views.OK], "caveat": views.STATUS_COLORS[views.WEAK],
                  "abstained": views.STATUS_COLORS[views.FAILED]}
"""Evaluation outcome -> bar colour: the flow's colours for finalize, a caveat, and fallback."""


def outcomes_figure(presets: Mapping[str, Mapping]) -> go.Figure:
    """Stacked bars, one per preset: questions answered clean (finalize), with a caveat, and abstained.

    ``presets`` is ``rag eval``'s per-preset summary (label -> ``{"answered_clean", "caveat",
    "abstained", ...}``); traces are named after the three outcomes.
    """
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

    labels = list(presets)
    fig = go.Figure()
    for key, name in (("answered_clean", "answered clean"), ("caveat", "with a caveat"),
                      ("abstained", "abstained")):
        values = [presets[p].get(key, 0) for p in labels]
        fig.add_trace(go.Bar(x=labels, y=values, name=name, text=values, textposition="inside",
                             marker=dict(color=OUTCOME_COLORS[key])))
    fig.update_layout(barmode="stack", height=320, title=dict(text="How each pipeline ended", x=0.01),
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.15),
                      yaxis=dict(title="questions"))
    return fig


def hits_figure(presets: Mapping[str, Mapping]) -> go.Figure:
    """Grouped bars per preset: answer hit and source hit, in [0, 1] (missing figures are left out)."""
    import plotly.graph_objects as go  # plotly loads when a figure is built, not with the library

    labels = list(presets)
    fig = go.Figure()
    for key, name in (("answer_hit", "answer hit"), ("source_hit", "source hit")):
        values = [presets[p].get(key) for p in labels]
        if all(v is None for v in values):
            continue
        fig.add_trace(go.Bar(x=labels, y=values, name=name,
                             text=[f"{v:.0%}" if v is not None else "–" for v in values],
                             textposition="auto"))
    fig.update_layout(barmode="group", height=320, title=dict(text="Answer and source hits", x=0.01),
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.15),
                      yaxis=dict(range=[0, 1], tickformat=".0%"))
    return fig
