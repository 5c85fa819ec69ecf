"""Trace page.

Replay a run on the flow step by step, with every decision, verdict and reason; reopen, filter, export and
delete runs from the history.
"""

import streamlit as st

from app_pages import _login, _replay, _rerun, _session, _tables, _ui
from app_pages._safe import safe
from rag.history import RunOwnedElsewhere, RunStore, merge_summaries
from rag.models import Run
from rag.trace import charts as figures
from rag.trace import story
from rag.trace.export import run_html, run_json
from rag.trace.pricing import node_totals

st.title("Trace")

if notice := st.session_state.pop("trace_notice", None):
    st.success(safe(notice))

session_runs = _session.runs()
sid = _session.session_id()
store: RunStore | None
try:
    store = _session.store()
    stored_total = store.count()
except Exception as exc:  # unreadable data dir: this session's runs still work
    store, stored_total = None, 0
    st.caption(f"The run history is unavailable ({safe(type(exc).__name__)}: {safe(exc)}); "
               "showing this session's runs only.")
prices = _session.prices()

if not session_runs and not stored_total:
    st.info("No run to show yet. Ask a question on the Chat page (or compare pipelines on the "
            "Compare page), then open its trace here.")
    st.stop()

# -- history: filter, pick ---------------------------------------------------------------
c1, c2, c3 = st.columns([3, 2, 1.2], vertical_alignment="bottom")
query = c1.text_input("Filter by question", key="trace_w_filter",
                      placeholder="words in the question") or None
kinds = c2.multiselect("Ending", list(story.STOP_KINDS), format_func=lambda k: story.STOP_KINDS[k],
                       key="trace_w_kinds", placeholder="any ending") or None
# Everyone's runs: without login the one local user, with login the admins only.
all_sessions = _login.sees_everyone() and c3.toggle(
    _login.all_label(), key="trace_w_all",
    help="Also list runs made by others (other browser sessions or users, and the command line). They "
         "open read-only.")
listed = None
if store is not None:
    try:
        listed = store.history(session_runs.values(), sid, all_sessions=all_sessions,
                               query=query, stop_kinds=kinds)
    except Exception as exc:
        st.caption(f"The run history could not be read: {safe(type(exc).__name__)}: {safe(exc)}")
if listed is None:  # this session's runs only
    listed = merge_summaries([], session_runs.values(), sid, query=query, stop_kinds=kinds)
entries = {s.id: s for s in listed}  # newest first

if not entries:
    if query or kinds:
        st.info("No run matches the filter.")
    else:
        st.info("No run in this session yet. Ask a question on the Chat page, or switch on "
                "**All sessions** to open runs kept from earlier sessions.")
    st.stop()

run_id = st.session_state.get("trace_run_id")
if run_id not in entries:
    run_id = next(iter(entries))
st.session_state["trace_run_id"] = run_id


def _pick_run() -> None:
    st.session_state["trace_run_id"] = st.session_state["trace_w_run"]


if len(entries) > 1:
    # Driven by trace_run_id, so "Open trace" on the Chat page selects the run it came from.
    st.session_state["trace_w_run"] = run_id
    st.selectbox("Run", list(entries), key="trace_w_run", on_change=_pick_run,
                 format_func=lambda i: _tables.run_label(entries[i].created_at, entries[i].preset,
                                                     entries[i].question),
                 help="Newest first. Filter above; switch on All sessions for older runs.")

loaded: dict[str, Run] = st.session_state.setdefault("trace_loaded", {})
found = session_runs.get(run_id) or loaded.get(run_id)
if found is None and store is not None and (found := store.get(run_id)) is not None:
    loaded[run_id] = found
if found is None:
    st.error("This run is no longer in the history (it was deleted).")
    st.stop()
run: Run = found

# -- the run at a glance -----------------------------------------------------------------
st.markdown(f"**Question:** {safe(run.question)}")
_ui.stop_alert(run)
st.caption(safe(_ui.run_facts(run, prices)))

owner = store.owner(run.id) if store is not None else None
mine = owner == sid or (owner is None and run.id in session_runs)
secrets = _session.secrets()
a, b, c = st.columns([1, 1, 2])
_tables.downloads("trace", f"retrace-run-{run.id[:8]}", columns=(a, b),
              html=lambda: run_html(run, prices=prices, secrets=secrets),
              json=lambda: run_json(run, prices=prices, secrets=secrets),
              html_help="One self-contained file: opens offline, with the replay.")
if not mine:
    c.caption("Made by another session: read-only.")
else:
    with c.popover("Delete this run", icon=":material/delete:"):
        st.markdown("This removes the run from the history for good.")
        if st.button("Delete permanently", type="primary", key="trace_delete_confirm"):
            try:
                if store is not None:
                    store.delete(run.id, sid)
            except RunOwnedElsewhere as exc:
                st.error(safe(exc))
            else:
                session_runs.pop(run.id, None)
                loaded.pop(run.id, None)
                st.session_state.pop("trace_run_id", None)
                st.session_state["trace_notice"] = f"Deleted the run “{run.question[:60]}”."
                st.rerun()

# -- replay, and node details (a click on the flow, or a pick) -----------------------------
st.subheader("Replay")
steps = story.steps(run)
_replay.replay(run, steps, prices, key="trace", node_key="trace_w_node",  # with node details
               step_action=lambda r, step: _rerun.rerun_popover(r, step, key="trace"))
if run.parent_run_id:
    st.caption(f"A re-run of run {safe(run.parent_run_id)} from {safe(run.from_node)}: steps 1 to "
               f"{run.reused_steps} were reused from run {safe(run.parent_run_id)}, not executed again.")

# -- the path unrolled ---------------------------------------------------------------------
st.subheader("Path, unrolled by attempt")
left, right = st.columns([3, 2])
for r in story.rounds(run):
    chain = " → ".join(f"**{s.step}** {safe(s.label)}" for s in r.steps)
    left.markdown(f"**{safe(r.title)}**  \n{chain}")
right.plotly_chart(figures.path_figure(run), width="stretch", key="trace_path",
                   config={"displaylogo": False, "displayModeBar": False})

# -- verdicts, steps, timeline -------------------------------------------------------------
st.subheader("Grader verdicts")
if verdicts := story.verdict_rows(run):
    _tables.verdicts_table(verdicts)
else:
    st.caption("No chunk was graded in this run (grading was off, or the run stopped first).")
_ui.checks(run)

st.subheader("Steps")
_tables.steps_table(story.event_rows(run))

st.subheader("Timeline")
st.plotly_chart(figures.timeline_figure(run, prices), width="stretch", key="trace_timeline",
                config={"displaylogo": False})
if run.llm_calls:
    _tables.node_totals_table(node_totals(run, prices))
else:
    st.caption("0 LLM calls: the offline engine ran, so nothing was spent.")

# -- answer and events ---------------------------------------------------------------------
st.subheader("Answer")
_ui.answer(run, empty="No answer.")
_ui.citations(run.citations, key="trace", knowledge_base=run.knowledge_base)
st.subheader("Events")
_ui.events(run)
