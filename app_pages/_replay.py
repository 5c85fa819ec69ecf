"""The Trace page's replay: the flow figure stepped through a run, and every visit to a node."""

from __future__ import annotations

import streamlit as st

from app_pages._safe import safe
from app_pages._ui import step_card
from rag.models import Run
from rag.trace import replay as replays
from rag.trace import story, views

FLOW_MIN_PX = 720
"""Narrowest width the flow is drawn at (its labels and boxes need it); a narrower screen scrolls it."""
FLOW_CSS = (f"<style>div:has(> [class*='_flowbox'][class*='st-key-']){{overflow-x:auto}}"
            f"[class*='_flowbox'][class*='st-key-']{{min-width:{FLOW_MIN_PX}px}}</style>")
"""Our own constant CSS (no data in it): the flow's container scrolls, the figure keeps FLOW_MIN_PX."""


def replay(run: Run, steps: list[story.Step], prices: dict, *, key: str) -> None:
    """A step slider.

    (``{key}_w_step_{run id}``), the flow replayed up to that step (a click on a box selects it in
    :func:`node_details`), and that step in full below.
    """
    events = {ev.step: ev for ev in run.events}
    n = step = len(steps)
    if n:
        step = st.slider("Step", 0, n, n, key=f"{key}_w_step_{run.id}",
                         help="Shows the run up to this step on the flow, and the step in full "
                              "below.")
    # Each click remounts the chart under a new key: plotly would otherwise keep the clicked
    # point selected and dim everything else.
    clicks = f"{key}_flow_clicks"
    flow_key = f"{key}_flow_{st.session_state.get(clicks, 0)}"

    def on_click() -> None:
        points = (st.session_state.get(flow_key) or {}).get("selection", {}).get("points", [])
        if node := next((p.get("customdata") for p in points if p.get("customdata")), None):
            st.session_state[f"{key}_w_node"] = node
        st.session_state[clicks] = st.session_state.get(clicks, 0) + 1

    # The slider is the one step control: the figure has no Play or slider of its own to disagree with it.
    # On a narrow screen the flow keeps a readable width and scrolls sideways (FLOW_CSS).
    st.html(FLOW_CSS)
    with st.container(key=f"{key}_flowbox"):
        st.plotly_chart(replays.replay_figure(run, step=step, controls=False), width="stretch",
                        key=flow_key, on_select=on_click, selection_mode="points",
                        config={"displaylogo": False})
    st.caption("Boxes are coloured by the verdict of their last visit; blue arrows are the run's "
               "path, numbered by step; orange is the replay so far. Click a box for its visits.")
    with st.container(border=True):
        if step:
            step_card(steps[step - 1], events[steps[step - 1].step], n, run, prices)
        else:
            st.markdown(f"**Step 0 of {n}** — the run has not started. Move the slider to replay it.")


def node_details(run: Run, steps: list[story.Step], prices: dict, *, key: str) -> None:
    """Pills of every node (those visited first), keyed ``key``; the picked node's visits in full."""
    events = {ev.step: ev for ev in run.events}
    visited = list(dict.fromkeys(s.node for s in steps))
    options = visited + [x for x in views.VIEWS if x not in visited]
    if st.session_state.get(key) not in (None, *options):
        st.session_state.pop(key)
    node = st.pills("Node details", options, key=key,
                    format_func=lambda x: safe({"__start__": "start", "__end__": "end"}.get(x, x)),
                    help="Click a box on the flow, or pick a node, to see every visit to it.")
    if node:
        with st.container(border=True):
            visits = [s for s in steps if s.node == node]
            if not visits:
                st.markdown(f"**{safe(node)}** was not visited in this run.")
            for s in visits:
                step_card(s, events[s.step], len(steps), run, prices)


