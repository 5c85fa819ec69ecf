"""Trace page: replay a run on the flow step by step, with every decision, verdict and reason;
reopen, filter, export and delete runs from the history."""

import streamlit as st

from pages import _runs, _shared
from rag.models import GradeDetail
from rag.trace import charts as figures
from rag.trace import replay, story, views
from rag.trace.export import run_html, run_json
from rag.trace.pricing import (DEFAULT_PRICES, event_cost, format_cost, node_totals, run_cost,
                          unpriced_models)
from rag.history import RunOwnedElsewhere
from rag.config import preset_label, preset_of

st.title("Trace")

if notice := st.session_state.pop("trace_notice", None):
    st.success(notice)

session_runs: dict = st.session_state.get("runs", {})
sid = _runs.session_id()
try:
    store = _runs.store()
    stored_total = store.count()
except Exception as exc:  # unreadable data dir: this session's runs still work
    store, stored_total = None, 0
    st.caption(f"The run history is unavailable ({type(exc).__name__}: {exc}); showing this "
               "session's runs only.")
try:
    prices = _runs.prices()
except ValueError as exc:
    st.error(f"{exc}. Costs use the built-in prices.")
    prices = dict(DEFAULT_PRICES)

if not session_runs and not stored_total:
    st.info("No run to show yet. Ask a question on the Chat page (or compare pipelines on the "
            "Compare page), then open its trace here.")
    st.stop()

# -- history: filter, pick ---------------------------------------------------------------
c1, c2, c3 = st.columns([3, 2, 1.2], vertical_alignment="bottom")
query = c1.text_input("Filter by question", key="trace_w_filter",
                      placeholder="words in the question")
kinds = c2.multiselect("Ending", list(story.STOP_KINDS), format_func=story.STOP_KINDS.get,
                       key="trace_w_kinds", placeholder="any ending")
all_sessions = c3.toggle("All sessions", key="trace_w_all",
                         help="Also list runs made by other browser sessions, earlier sessions "
                              "and the command line. They open read-only.")

# id -> (created_at, preset, question)
entries: dict[str, tuple[float, str, str]] = {}
if store is not None:
    try:
        for r in store.list(None if all_sessions else sid, query=query or None,
                            stop_kinds=kinds or None):
            entries[r.id] = (r.created_at, r.preset, r.question)
    except Exception as exc:
        st.caption(f"The run history could not be read: {type(exc).__name__}: {exc}")
for r in session_runs.values():
    if r.id not in entries and (not query or query.lower() in r.question.lower()) and (
            not kinds or story.stop_kind(r) in kinds):
        entries[r.id] = (r.created_at, preset_of(r.options), r.question)
order = sorted(entries, key=lambda rid: entries[rid][0], reverse=True)

if not order:
    if query or kinds:
        st.info("No run matches the filter.")
    else:
        st.info("No run in this session yet. Ask a question on the Chat page, or switch on "
                "**All sessions** to open runs kept from earlier sessions.")
    st.stop()

run_id = st.session_state.get("trace_run_id")
if run_id not in entries:
    run_id = order[0]
st.session_state["trace_run_id"] = run_id


def _pick_run() -> None:
    st.session_state["trace_run_id"] = st.session_state["trace_w_run"]


if len(order) > 1:
    # Driven by trace_run_id, so "Open trace" on the Chat page selects the run it came from.
    st.session_state["trace_w_run"] = run_id
    st.selectbox("Run", order, key="trace_w_run", on_change=_pick_run,
                 format_func=lambda rid: _runs.run_label(*entries[rid]),
                 help="Newest first. Filter above; switch on All sessions for older runs.")

loaded: dict = st.session_state.setdefault("trace_loaded", {})
run = session_runs.get(run_id) or loaded.get(run_id)
if run is None and store is not None:
    run = store.get(run_id)
    if run is not None:
        loaded[run_id] = run
if run is None:
    st.error("This run is no longer in the history (it was deleted).")
    st.stop()

# -- the run at a glance -----------------------------------------------------------------
st.markdown(f"**Question:** {_shared.md_escape(run.question)}")
kind = story.stop_kind(run)
reason = _shared.md_escape(story.headline(run))
if kind in (story.ERROR, story.ABSTAINED):
    st.error(reason, icon=":material/block:")
elif kind == story.CAVEAT:
    st.warning(reason, icon=":material/warning:")
elif kind == story.ANSWERED:
    st.success(reason, icon=":material/check_circle:")
else:
    st.info(reason)
cost = run_cost(run, prices)
missing = unpriced_models(run, prices)
models = ", ".join(f"{k} {v}" for k, v in sorted(run.models.items())) or "no LLM"
st.caption(_shared.md_escape(
    f"{story.totals_line(run, cost)} · {preset_label(preset_of(run.options))} · engine "
    f"{run.engine} ({models}) · top_k {run.options.top_k}, min_relevant "
    f"{run.options.min_relevant}, max_rewrites {run.options.max_rewrites}"
    + (f" · no price for {', '.join(missing)} (set RAG_PRICES_JSON)" if missing else "")))

owner = store.owner(run.id) if store is not None else None
mine = owner == sid or (owner is None and run.id in session_runs)
secrets = _runs.secrets()
a, b, c = st.columns([1, 1, 2])
a.download_button("Download HTML report", key="trace_dl_html", on_click="ignore",
                  icon=":material/download:", mime="text/html",
                  file_name=f"retrace-run-{run.id[:8]}.html",
                  data=lambda: run_html(run, prices=prices, secrets=secrets),
                  help="One self-contained file: opens offline, with the replay.")
b.download_button("Download JSON", key="trace_dl_json", on_click="ignore",
                  icon=":material/data_object:", mime="application/json",
                  file_name=f"retrace-run-{run.id[:8]}.json",
                  data=lambda: run_json(run, prices=prices, secrets=secrets))
if mine:
    with c.popover("Delete this run", icon=":material/delete:"):
        st.markdown("This removes the run from the history for good.")
        if st.button("Delete permanently", type="primary", key="trace_delete_confirm"):
            try:
                if store is not None:
                    store.delete(run.id, sid)
            except RunOwnedElsewhere as exc:
                st.error(str(exc))
            else:
                session_runs.pop(run.id, None)
                loaded.pop(run.id, None)
                st.session_state.pop("trace_run_id", None)
                st.session_state["trace_notice"] = f"Deleted the run “{run.question[:60]}”."
                st.rerun()
else:
    c.caption("Made by another session: read-only.")


# -- replay --------------------------------------------------------------------------------
def _badge(ok: bool, yes: str, no: str) -> str:
    return f":green-badge[{yes}]" if ok else f":red-badge[{no}]"


def show_step(s: story.Step, event, n: int) -> None:
    """One step in full: what it decided, why it went on, and its verdicts with their reasons."""
    e = _shared.md_escape
    st.markdown(f"**Step {s.step} of {n} · {e(s.label)}** — {e(s.decided)}")
    st.markdown(f"→ **{e(s.next)}**: {e(s.why)}" if s.next else f"■ {e(s.why)}")
    d = event.detail
    if isinstance(d, GradeDetail):
        lines = []
        for v in d.verdicts:
            fb = f" :orange-badge[fallback: {e(v.fallback)}]" if v.fallback else ""
            lines.append(f"- {_badge(v.relevant, 'relevant', 'not relevant')} "
                         f":gray-badge[{e(v.grade)}] **{e(v.label())}** — {e(v.reasoning)}{fb}")
        st.markdown("\n".join(lines) or "No chunk to grade.")
    elif s.node in ("check_grounding", "grade_answer"):
        passed = bool(getattr(d, "grounded" if s.node == "check_grounding" else "useful", False))
        yes, no = ("grounded", "not grounded") if s.node == "check_grounding" else ("useful", "not useful")
        confidence = getattr(d, "confidence", None)
        st.markdown(_badge(passed, yes, no) + (f" confidence {confidence:.2f}" if confidence is not None else ""))
    items = views.view(s.node).items(d)
    if s.node == "generate":
        st.markdown("Cites " + e(", ".join(items)) if items else "Cites nothing.")
    elif items:
        st.markdown("\n".join(f"- {e(item)}" for item in items))
    if s.reasoning:
        st.caption(f"Reasoning: {e(s.reasoning)}")
    for f in s.fallbacks:
        st.markdown(f":orange-badge[fallback] {e(f)}")
    if event.llm_calls:
        st.caption(f"{event.llm_calls} LLM call(s) · {event.prompt_tokens} + "
                   f"{event.completion_tokens} tokens · "
                   f"{format_cost(event_cost(event, run, prices))} · {event.duration_ms:.0f} ms")


st.subheader("Replay")
steps = story.steps(run)
events = {ev.step: ev for ev in run.events}
n = len(steps)
step = n
if n:
    step = st.slider("Step", 0, n, n, key=f"trace_w_step_{run.id}",
                     help="Shows the run up to this step on the flow, and the step in full "
                          "below. ▶ Play on the figure animates the whole run.")


# Each click remounts the chart under a new key: plotly would otherwise keep the clicked
# point selected and dim everything else.
flow_key = f"trace_flow_{st.session_state.get('trace_flow_clicks', 0)}"


def _on_click() -> None:
    selection = st.session_state.get(flow_key)
    points = (selection or {}).get("selection", {}).get("points", [])
    node = next((p.get("customdata") for p in points if p.get("customdata")), None)
    if node:
        st.session_state["trace_w_node"] = node
    st.session_state["trace_flow_clicks"] = st.session_state.get("trace_flow_clicks", 0) + 1


st.plotly_chart(replay.replay_figure(run, step=step), width="stretch", key=flow_key,
                on_select=_on_click, selection_mode="points",
                config={"displaylogo": False})
st.caption("Boxes are coloured by the verdict of their last visit; blue arrows are the run's "
           "path, numbered by step; orange is the replay so far. Click a box for its visits.")
with st.container(border=True):
    if step:
        show_step(steps[step - 1], events[steps[step - 1].step], n)
    else:
        st.markdown("**Step 0** — the run has not started. Move the slider, or press ▶ Play on "
                    "the figure.")

# -- node details (a click on the flow, or a pick here) ------------------------------------
visited = list(dict.fromkeys(s.node for s in steps))
options = visited + [x for x in views.VIEWS if x not in visited]
if st.session_state.get("trace_w_node") not in (None, *options):
    st.session_state.pop("trace_w_node")
node = st.pills("Node details", options, key="trace_w_node",
                format_func=lambda x: {"__start__": "start", "__end__": "end"}.get(x, x),
                help="Click a box on the flow, or pick a node, to see every visit to it.")
if node:
    visits = [s for s in steps if s.node == node]
    with st.container(border=True):
        if not visits:
            st.markdown(f"**{_shared.md_escape(node)}** was not visited in this run.")
        for s in visits:
            show_step(s, events[s.step], n)

# -- the path unrolled ---------------------------------------------------------------------
st.subheader("Path, unrolled by attempt")
left, right = st.columns([3, 2])
with left:
    for r in story.rounds(run):
        chain = " → ".join(f"**{s.step}** {_shared.md_escape(s.label)}" for s in r.steps)
        st.markdown(f"**{_shared.md_escape(r.title)}**  \n{chain}")
with right:
    st.plotly_chart(figures.path_figure(run), width="stretch", key="trace_path",
                    config={"displaylogo": False, "displayModeBar": False})

# -- verdicts ------------------------------------------------------------------------------
st.subheader("Grader verdicts")
verdicts = story.verdict_rows(run)
if verdicts:
    st.dataframe(verdicts, hide_index=True, width="stretch", row_height=64,
                 column_order=["step", "attempt", "source", "page", "grade", "relevant",
                               "reasoning", "query"]
                 + (["fallback"] if any(v["fallback"] for v in verdicts) else []),
                 column_config={
                     "step": st.column_config.NumberColumn("Step", width="small"),
                     "attempt": st.column_config.NumberColumn("Attempt", width="small"),
                     "source": st.column_config.TextColumn("Source"),
                     "page": st.column_config.NumberColumn("Page", width="small"),
                     "grade": st.column_config.TextColumn("Grade", width="small"),
                     "relevant": st.column_config.CheckboxColumn("Relevant", width="small"),
                     "reasoning": st.column_config.TextColumn("Reasoning", width="large"),
                     "fallback": st.column_config.TextColumn("Fallback"),
                     "query": st.column_config.TextColumn("Query", width="medium")})
else:
    st.caption("No chunk was graded in this run (grading was off, or the run stopped first).")
for chk in story.checks(run):
    name = "Grounding check" if chk.kind == "grounding" else "Answer check"
    ok = (_badge(chk.passed, "grounded", "not grounded") if chk.kind == "grounding"
          else _badge(chk.passed, "useful", "not useful"))
    fb = f" :orange-badge[fallback: {_shared.md_escape(chk.fallback)}]" if chk.fallback else ""
    claims = "".join(f"\n- ungrounded: {_shared.md_escape(x)}" for x in chk.claims)
    st.markdown(f"**Step {chk.step} · {name}** {ok}{fb} — "
                f"{_shared.md_escape(chk.reasoning)}{claims}")

# -- steps and timeline --------------------------------------------------------------------
st.subheader("Steps")
st.dataframe(story.event_rows(run), hide_index=True, width="stretch",
             column_config={
                 "step": st.column_config.NumberColumn("Step", width="small"),
                 "node": st.column_config.TextColumn("Node"),
                 "attempt": st.column_config.NumberColumn("Attempt", width="small"),
                 "duration_ms": st.column_config.NumberColumn("ms", format="%.1f", width="small"),
                 "summary": st.column_config.TextColumn("Summary", width="large"),
                 "next": st.column_config.TextColumn("Next"),
                 "why": st.column_config.TextColumn("Why", width="medium")})

st.subheader("Timeline")
st.plotly_chart(figures.timeline_figure(run, prices), width="stretch", key="trace_timeline",
                config={"displaylogo": False})
if run.llm_calls:
    st.dataframe(node_totals(run, prices), hide_index=True, width="stretch",
                 column_config={
                     "node": st.column_config.TextColumn("Node"),
                     "visits": st.column_config.NumberColumn("Visits"),
                     "duration_ms": st.column_config.NumberColumn("ms", format="%.1f"),
                     "llm_calls": st.column_config.NumberColumn("LLM calls"),
                     "tokens": st.column_config.NumberColumn("Tokens"),
                     "cost": st.column_config.TextColumn("Cost")})
else:
    st.caption("0 LLM calls: the offline engine ran, so nothing was spent.")

# -- answer and events ---------------------------------------------------------------------
st.subheader("Answer")
if run.error:
    st.error(_shared.md_escape(run.answer))
elif run.answer:
    st.markdown(_shared.md_escape(run.answer).replace("\n", "  \n"))
else:
    st.caption("No answer.")
for cit in run.citations:
    with st.expander(_shared.md_escape(_shared.citation_label(cit))):
        st.text(cit.text or "(no text stored for this chunk)")

st.subheader("Events")
for ev in run.events:
    visit = f" (visit {ev.attempt})" if ev.attempt > 1 else ""
    with st.expander(f"**{ev.step}. {_shared.md_escape(ev.node)}**{visit} — "
                     f"{_shared.md_escape(ev.summary)}"):
        if ev.route:
            to, why = ev.route.get("to", "?"), ev.route.get("why", "")
            st.markdown(f"→ **{_shared.md_escape(to)}**: {_shared.md_escape(why)}")
        st.json(ev.model_dump(mode="json"), expanded=2)
