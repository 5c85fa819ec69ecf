"""The Trace page's replay: the flow figure stepped through a run, and every visit to a node."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app_pages._safe import safe
from app_pages._ui import step_card
from rag.models import Run
from rag.trace import replay as replays
from rag.trace import story, views

FLOW_MIN_PX = 720
"""Narrowest width the flow is drawn at (its labels and boxes need it); a narrower screen scales it down."""
FLOW_CSS = ("<style>[class*='_flowfit'][class*='st-key-']{overflow:hidden}"
            f"[class*='_flowbox'][class*='st-key-']{{min-width:{FLOW_MIN_PX}px}}</style>")
"""Our own constant CSS (no data in it): the flow keeps FLOW_MIN_PX, and its frame clips what overflows."""
FLOW_FIT_JS = """<script>(() => {
  const W = __W__;
  const fit = () => document.querySelectorAll("[class*='_flowfit'][class*='st-key-']").forEach(frame => {
    const gd = frame.querySelector(".js-plotly-plot");
    if (!gd) return;
    const s = Math.min(1, frame.clientWidth / W);
    const scale = s < 1 ? "scale(" + s + ")" : "";
    if (gd.style.transform !== scale) {
      gd.style.transformOrigin = "0 0";
      gd.style.transform = scale;
    }
    const h = s < 1 ? Math.ceil(gd.offsetHeight * s) + "px" : "";
    if (frame.style.maxHeight !== h) {
      frame.style.maxHeight = h;
      frame.style.minHeight = "0";
    }
  });
  const w = window.parent === window ? window : window.parent;
  if (!w.__retraceFlowFit) {
    w.__retraceFlowFit = true;
    const doc = w.document;
    new w.ResizeObserver(fit).observe(doc.body);
    new w.MutationObserver(fit).observe(doc.body, {childList: true, subtree: true});
  }
  fit();
})();</script>""".replace("__W__", str(FLOW_MIN_PX))
"""Our own constant script (no data in it): on a screen narrower than the flow, the whole flow is scaled
down to the width there is (a CSS transform on plotly's own element, which plotly maps taps through), so
nothing is cropped."""


FRAME_S = replays.FRAME_MS / 1000
"""How long Play shows each step, in seconds (as the HTML export's Play)."""


StepAction = Callable[[Run, int], None]
"""Draws a control under the replay's current step: ``(run, step)``, the step 1-based."""


def replay(run: Run, steps: list[story.Step], prices: dict, *, key: str, node_key: str,
           step_action: StepAction | None = None) -> None:
    """Play / Pause, a step slider, the flow replayed up to that step, that step in full, and node details.

    The slider (``{key}_w_step_{run id}``) is the one step control; Play moves it one step every
    :data:`FRAME_S` seconds, from the start (or from where it stands), to the last step, and the flow rings
    the current step's node. A click on a box selects it in :func:`node_details` (keyed ``node_key``).
    One fragment: a step of the replay redraws only this part of the page. ``step_action`` draws a control
    under each step shown (the Trace page's Re-run from here).
    """
    playing = st.session_state.get(f"{key}_playing") == run.id
    st.fragment(_section, run_every=FRAME_S if playing else None)(run, steps, prices, key=key,
                                                                   node_key=node_key, step_action=step_action)


def _section(run: Run, steps: list[story.Step], prices: dict, *, key: str, node_key: str,
             step_action: StepAction | None) -> None:
    _player(run, len(steps), key=key)
    _flow(run, steps, prices, key=key, node_key=node_key, step_action=step_action)
    node_details(run, steps, prices, key=node_key)


def _player(run: Run, n: int, *, key: str) -> None:
    """Play / Pause; while playing, each run of the fragment moves the slider one step on."""
    playing_key, step_key, toggled = f"{key}_playing", f"{key}_w_step_{run.id}", f"{key}_play_toggled"
    st.session_state.setdefault(step_key, n)
    if st.session_state.pop(toggled, False):
        st.rerun()  # the whole page: the fragment's clock starts or stops with it
    playing = st.session_state.get(playing_key) == run.id
    if playing:
        if st.session_state[step_key] >= n:  # the last step was shown: stop there
            st.session_state[playing_key] = None
            st.rerun()
        st.session_state[step_key] += 1

    def toggle() -> None:
        if playing:
            st.session_state[playing_key] = None
        else:
            if st.session_state.get(step_key, n) >= n:  # from the start
                st.session_state[step_key] = 0
            st.session_state[playing_key] = run.id
        st.session_state[toggled] = True

    st.button("Pause" if playing else "Play", key=f"{key}_play", on_click=toggle, disabled=not n,
              icon=":material/pause:" if playing else ":material/play_arrow:",
              help="Steps through the run on the flow, one step every "
                   f"{FRAME_S:g} s, from the start (or from the step shown) to the end.")


def _flow(run: Run, steps: list[story.Step], prices: dict, *, key: str, node_key: str,
          step_action: StepAction | None = None) -> None:
    events = {ev.step: ev for ev in run.events}
    n = step = len(steps)
    if n:
        step = st.slider("Step", 0, n, key=f"{key}_w_step_{run.id}",
                         help="Shows the run up to this step on the flow, and the step in full "
                              "below.")
    # Each click remounts the chart under a new key: plotly would otherwise keep the clicked
    # point selected and dim everything else.
    clicks = f"{key}_flow_clicks"
    flow_key = f"{key}_flow_{st.session_state.get(clicks, 0)}"

    def on_click() -> None:
        points = (st.session_state.get(flow_key) or {}).get("selection", {}).get("points", [])
        if node := next((p.get("customdata") for p in points if p.get("customdata")), None):
            st.session_state[node_key] = node
        st.session_state[clicks] = st.session_state.get(clicks, 0) + 1

    # The slider is the one step control: the figure has no Play or slider of its own to disagree with it.
    # On a narrow screen the flow is drawn at its readable width and scaled down to fit (FLOW_FIT_JS).
    st.html(FLOW_CSS)
    st.html(FLOW_FIT_JS, unsafe_allow_javascript=True)
    with st.container(key=f"{key}_flowfit"), st.container(key=f"{key}_flowbox"):
        st.plotly_chart(replays.replay_figure(run, step=step, controls=False), width="stretch",
                        key=flow_key, on_select=on_click, selection_mode="points",
                        config={"displaylogo": False})
    st.caption("Boxes are coloured by the verdict of their last visit; blue arrows are the run's "
               "path, numbered by step; orange is the replay so far, ringing the current step. Click a "
               "box for its visits.")
    with st.container(border=True):
        if step:
            step_card(steps[step - 1], events[steps[step - 1].step], n, run, prices)
            if step_action is not None:
                step_action(run, steps[step - 1].step)
        else:
            st.markdown(f"**Step 0 of {n}** — the run has not started. Press Play, or move the slider.")


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


