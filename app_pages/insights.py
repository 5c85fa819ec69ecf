"""Insights page.

What the saved runs show, with charts (rewrites, hallucination detection, strategies, paths, stop reasons,
latency, LLM calls and tokens).
"""

import streamlit as st

from app_pages import _login, _session, _tables
from app_pages._safe import safe
from rag.config import preset_label, preset_of
from rag.trace import charts as figures
from rag.trace import formats, insights
from rag.trace.pricing import format_cost

st.title("Insights")
prices = _session.prices()

all_sessions = _login.sees_everyone() and st.toggle(  # with login on, for the admins only
    _login.all_label(), key="ins_w_all",
    help="Include runs made by others (other browser sessions or users, and the command line).")
session_runs = _session.runs().values()
try:
    runs = _session.store().load_with(session_runs, _session.session_id(),
                                      all_sessions=all_sessions)
except Exception as exc:  # unreadable history: this session's runs still count
    st.caption(f"The run history is unavailable ({safe(type(exc).__name__)}: {safe(exc)}); "
               "counting this session's runs only.")
    runs = list(session_runs)

if not runs:
    st.info("No saved runs yet. Ask questions on the Chat page or compare pipelines on the "
            "Compare page" + ("" if all_sessions else ", or switch on **All sessions** to "
                              "include runs kept from earlier sessions") + ".")
    st.stop()

ins = insights.compute(runs, prices)
presets = st.multiselect("Pipelines", list(ins.presets), key="ins_w_presets",
                         placeholder="every pipeline",
                         format_func=lambda p: f"{p} ({formats.plural(ins.presets[p], 'run')})")  # plain text
if presets:
    runs = [r for r in runs if preset_label(preset_of(r.options)) in presets]
    ins = insights.compute(runs, prices)

st.caption(f"Over {formats.plural(ins.runs, 'run')}, {formats.count(ins.answered)} answered "
           f"({'all sessions' if all_sessions else 'this session'}).")
m = st.columns(4)
m[0].metric("Rewrite rate", formats.share(ins.rewrite_rate), help="Share of runs that rewrote the query.")
m[1].metric("Rewrites per answered question", formats.mean(ins.mean_rewrites_answered))
m[2].metric("Hallucination detection rate", formats.share(ins.hallucination_rate),
            help=f"Grounding checks that failed: {formats.count(ins.grounding_failures)} of "
                 f"{formats.count(ins.grounding_checks)}.")
m[3].metric("Grounding checks", formats.count(ins.grounding_checks))
m = st.columns(4)
m[0].metric("Latency p50", formats.ms(ins.latency_p50_ms))
m[1].metric("Latency p95", formats.ms(ins.latency_p95_ms))
m[2].metric("LLM calls per question", formats.mean(ins.llm_calls_per_question))
m[3].metric("Tokens per question", formats.mean(ins.tokens_per_question),
            help=f"Cost per question: {safe(format_cost(ins.cost_per_question))}")

left, right = st.columns(2)
with left:
    st.plotly_chart(figures.bar_figure(ins.stop_kinds, title="How runs ended"),
                    width="stretch", key="ins_stop", config={"displaylogo": False})
with right:
    if ins.strategies:
        st.plotly_chart(figures.bar_figure(ins.strategies, title="Rewrite strategies",
                                           value_label="rewrites"),
                        width="stretch", key="ins_strategies", config={"displaylogo": False})
    else:
        st.caption("No query was rewritten in these runs.")
st.markdown("**Most frequent paths**")
top = max((count for _, count in ins.paths), default=1)
st.dataframe([{"path": path, "runs": count} for path, count in ins.paths], hide_index=True,
             width="stretch", row_height=56,
             column_config={"path": st.column_config.TextColumn("Path (repeated rounds folded)",
                                                                width=760),
                            "runs": st.column_config.ProgressColumn(
                                "Runs", format=formats.COUNT_FORMAT, width="small", min_value=0,
                                max_value=top)})
st.markdown("**By pipeline**")
_tables.by_pipeline_table(insights.by_pipeline(runs, prices))
st.plotly_chart(figures.latency_figure(ins.latencies_ms, ins.latency_p50_ms, ins.latency_p95_ms),
                width="stretch", key="ins_latency", config={"displaylogo": False})

st.markdown("**Feedback by pipeline**")
try:
    thumbs = _session.store().feedback(r.id for r in runs)
except Exception as exc:  # the rest of the page stands without it
    st.caption(f"Feedback is unavailable: {safe(exc)}")
    thumbs = {}
if thumbs:
    _tables.feedback_table(insights.feedback_by_pipeline(runs, thumbs))
else:
    st.caption("No answer in these runs has a thumbs up or down yet: rate answers on the Chat page.")
