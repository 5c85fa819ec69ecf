"""Trace page: one run drawn over the graph, with every routing decision and grader verdict."""

import streamlit as st

from pages import _shared
from rag import viz

st.title("Trace")

runs: dict = st.session_state.get("runs", {})
if not runs:
    st.info("No run to show yet. Ask a question on the Chat page, then open its trace here.")
    st.stop()

run_id = st.session_state.get("trace_run_id")
if run_id not in runs:
    run_id = list(runs)[-1]
st.session_state["trace_run_id"] = run_id


def _pick_run() -> None:
    st.session_state["trace_run_id"] = st.session_state["trace_w_run"]


def _run_label(rid: str) -> str:
    r = runs[rid]
    question = r.question if len(r.question) <= 80 else r.question[:79] + "…"
    return f"{_shared.when(r.created_at):%H:%M:%S} · {question}"


if len(runs) > 1:
    # Driven by trace_run_id, so "Open trace" on the Chat page selects the run it came from.
    st.session_state["trace_w_run"] = run_id
    st.selectbox("Run", list(reversed(runs)), key="trace_w_run", format_func=_run_label,
                 on_change=_pick_run, help="This session's runs, newest first.")
run = runs[run_id]

st.markdown(f"**Question:** {_shared.md_escape(run.question)}")
last = run.path[-1] if run.path else None
reason = _shared.md_escape(run.stop_reason or "The run has no stop reason.")
if run.error or last == "fallback":
    st.error(reason, icon=":material/block:")
elif last == "finalize_with_caveat":
    st.warning(reason, icon=":material/warning:")
elif last == "finalize":
    st.success(reason, icon=":material/check_circle:")
else:
    st.info(reason)
st.caption(f"{len(run.events)} steps · {run.rewrites} rewrite(s) · {run.llm_calls} LLM call(s) · "
           f"{run.duration_ms:.0f} ms · engine {run.engine} · top_k {run.options.top_k}, "
           f"min_relevant {run.options.min_relevant}, max_rewrites {run.options.max_rewrites}")

st.plotly_chart(viz.flow_figure(run), width="stretch", key="trace_flow",
                config={"displaylogo": False})
st.caption("Boxes are coloured by the verdict of their last visit; blue arrows are the run's "
           "path, numbered by step. Hover a box for each visit's summary, route and detail.")

st.subheader("Grader verdicts")
verdicts = viz.verdict_rows(run)
if verdicts:
    st.dataframe(verdicts, hide_index=True, width="stretch",
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

st.subheader("Steps")
st.dataframe(viz.event_rows(run), hide_index=True, width="stretch",
             column_config={
                 "step": st.column_config.NumberColumn("Step", width="small"),
                 "node": st.column_config.TextColumn("Node"),
                 "attempt": st.column_config.NumberColumn("Attempt", width="small"),
                 "duration_ms": st.column_config.NumberColumn("ms", format="%.1f", width="small"),
                 "summary": st.column_config.TextColumn("Summary", width="large"),
                 "next": st.column_config.TextColumn("Next"),
                 "why": st.column_config.TextColumn("Why", width="medium")})

st.subheader("Answer")
if run.error:
    st.error(_shared.md_escape(run.answer))
elif run.answer:
    st.markdown(_shared.md_escape(run.answer).replace("\n", "  \n"))
else:
    st.caption("No answer.")
for c in run.citations:
    with st.expander(_shared.md_escape(_shared.citation_label(c))):
        st.text(c.text or "(no text stored for this chunk)")

st.subheader("Events")
for e in run.events:
    visit = f" (visit {e.attempt})" if e.attempt > 1 else ""
    with st.expander(f"**{e.step}. {_shared.md_escape(e.node)}**{visit} — "
                     f"{_shared.md_escape(e.summary)}"):
        if e.route:
            to, why = e.route.get("to", "?"), e.route.get("why", "")
            st.markdown(f"→ **{_shared.md_escape(to)}**: {_shared.md_escape(why)}")
        st.json(e.model_dump(mode="json"), expanded=2)
