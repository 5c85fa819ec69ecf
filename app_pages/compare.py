"""Compare page: one question under 2 to 4 pipelines at once, answers and paths side by side."""

import pandas as pd
import streamlit as st

from app_pages import _pipeline, _samples, _session, _tables, _ui
from app_pages._safe import safe
from rag.config import (
    MAX_PIPELINES,
    PRESETS,
    PRESETS_HELP,
    TOGGLE_LABELS,
    TOGGLES,
    Options,
    parse_pipelines,
    preset_label,
)
from rag.models import Comparison
from rag.run import make_context, run_comparison
from rag.store.chroma import StoreError
from rag.trace import charts as figures
from rag.trace import diff as changed
from rag.trace import fork
from rag.trace.export import comparison_html, comparison_json
from rag.trace.story import grounded_verdict, useful_verdict

DEFAULT_PRESETS = ["naive", "crag", "full"]
VERDICT_COLOURS = {"grounded": "green", "useful": "green", "not checked": "gray"}
# Our own constant style of the first step where a re-run differs from its run (a string under it would
# be drawn: Streamlit's magic writes a page's bare literals).
DIFFERS_CSS = "background-color: rgba(255, 189, 69, 0.35); font-weight: bold"

st.title("Compare")
_samples.notice()
st.caption("One question, 2 to 4 pipelines at the same time: see what self-correction changes.")
comparisons: dict = st.session_state.setdefault("cmp_comparisons", {})
prices = _session.prices()

kb_name = _session.current_kb_name()
with _session.stop_on_store_error(kb_name):
    kb = _session.knowledge_base(kb_name)
    n_chunks = kb.count()

# -- what to compare -----------------------------------------------------------------------
presets = st.multiselect("Pipelines", list(PRESETS), default=DEFAULT_PRESETS,
                         format_func=preset_label, key="cmp_w_presets",
                         max_selections=MAX_PIPELINES, help=PRESETS_HELP)
customs: list[str] = []
if st.toggle("Add a custom pipeline", key="cmp_w_custom"):
    picked = [t for t, col in zip(TOGGLES, st.columns(len(TOGGLES)), strict=True)
              if col.checkbox(TOGGLE_LABELS[t][0], value=t == "grading", key=f"cmp_w_c_{t}")]
    customs = ["+".join(picked) or "none"]
with st.expander("Budgets (for every pipeline)"):
    d = Options()
    numbers = {name: col.number_input(label, low, high, getattr(d, name), key=f"cmp_w_{name}")
               for col, (name, (label, low, high, _))
               in zip(st.columns(3), _pipeline.NUMBERS.items(), strict=True)}

question = st.text_input("Question", key="cmp_w_question",
                         placeholder="Ask the same question of every pipeline")
if n_chunks == 0:
    st.info(f"The knowledge base '{safe(kb_name)}' is empty. Upload documents on the Documents "
            f"page, or load {_samples.ABOUT}, then compare.")
    _samples.load_button("cmp_samples")
go = st.button("Compare", type="primary", key="cmp_run", disabled=n_chunks == 0,
               icon=":material/compare_arrows:")

if go:
    try:
        pipelines = parse_pipelines(presets, customs, **{k: int(v) for k, v in numbers.items()})
        if not question.strip():
            raise ValueError("type a question first")
    except ValueError as exc:
        st.error(f"Cannot compare: {safe(exc)}")
    else:
        try:
            context = make_context(_session.session_settings(), kb)
            with st.spinner(f"Running {len(pipelines)} pipelines at once…"):
                made = run_comparison(question, context, pipelines)
        except (StoreError, ValueError) as exc:
            st.error(f"The comparison could not be run: {safe(exc)}")
        except Exception as exc:  # e.g. Chroma failing while reading term statistics
            st.error(f"The comparison could not be run: {safe(type(exc).__name__)}: {safe(exc)}")
        else:
            comparisons[made.id] = made
            st.session_state["cmp_current"] = made.id
            _session.runs().update({run.id: run for run in made.runs})
            try:
                _session.store().save_comparison(made, _session.session_id())
            except Exception as exc:  # the comparison stays usable in this session
                st.warning(safe(f"The comparison could not be saved to the history: "
                                f"{type(exc).__name__}: {exc}"))

if not comparisons:
    st.stop()

# -- results -------------------------------------------------------------------------------
current = st.session_state.get("cmp_current")
if current not in comparisons:
    current = list(comparisons)[-1]
    st.session_state["cmp_current"] = current


def _pick() -> None:
    st.session_state["cmp_current"] = st.session_state["cmp_w_pick"]


if len(comparisons) > 1:
    # Driven by cmp_current, so a new comparison is shown at once (the box would keep its old pick).
    st.session_state["cmp_w_pick"] = current
    ids = list(reversed(comparisons))
    st.selectbox("Comparison", ids, key="cmp_w_pick", on_change=_pick,
                 format_func=lambda i: f"{_tables.when(comparisons[i].created_at):%H:%M:%S}"
                                       f" · {comparisons[i].question[:80]}")
cmp: Comparison = comparisons[current]

st.subheader(f"“{safe(cmp.question)}”")
secrets = _session.secrets()
a, b, _ = st.columns([1, 1, 2])
_tables.downloads("cmp", f"retrace-comparison-{cmp.id[:8]}", columns=(a, b),
              html=lambda: comparison_html(cmp, prices=prices, secrets=secrets),
              json=lambda: comparison_json(cmp, prices=prices, secrets=secrets),
              html_help="One self-contained file: opens offline, with every run's replay.")
# One table, a row per pipeline: it fits four pipelines where per-column tables overflowed.
st.dataframe(changed.metric_rows(cmp, prices), hide_index=True, width="stretch", column_config={
    "pipeline": st.column_config.TextColumn("Pipeline"),
    "steps": _tables.count_column("Steps"),
    "llm_calls": _tables.count_column("LLM calls"),
    "tokens": _tables.count_column("Tokens"),
    "cost": st.column_config.TextColumn("Cost"),
    "latency_ms": _tables.ms_column("Latency")})

if (forked := fork.pair(cmp.runs)) is not None:
    parent, child = forked
    first = fork.first_difference(parent, child)
    st.subheader("The re-run beside its run")
    st.caption(f"Re-run of run {safe(parent.id)} from {safe(child.from_node)}: steps 1 to "
               f"{child.reused_steps} were reused from run {safe(parent.id)}, not executed again. "
               + (f"The first step where they differ is step {first}." if first
                  else "No step differs."))
    rows = fork.step_rows(parent, child)
    table = pd.DataFrame([{"step": r["step"], "run": r["parent"], "re-run": r["child"],
                           "": "reused" if r["reused"] else ("◀ first difference" if r["differs"] else "")}
                          for r in rows])
    # The first differing row stands out; the cells stay plain text (a dataframe renders no markdown).
    st.dataframe(table.style.apply(lambda row: [DIFFERS_CSS if row.step == first else ""] * len(row), axis=1),
                 hide_index=True, width="stretch", key="cmp_fork_steps")

st.subheader("What self-correction changed")
base = cmp.labels[changed.baseline(cmp)]
for change in changed.changes(cmp):
    steps = ", ".join(change.added_steps)
    st.markdown(f"**{safe(change.label)}** added: {safe(steps)}" if steps
                else f"**{safe(change.label)}** added no step over {safe(base)}.")
    if change.same_answer:
        st.caption(f"Same answer as {safe(base)}.")
    else:
        st.caption(f"Its answer against {safe(base)}'s: added words green, removed ones struck out.")
        st.html(changed.diff_html(change.diff))  # every word of the answers HTML-escaped
if differ := changed.verdict_differences(cmp):
    st.caption("The verdicts that differ:")
    st.dataframe(differ, hide_index=True, width="stretch")  # cells are plain text
else:
    st.caption("Every pipeline reached the same verdicts.")

for col, label, run in zip(st.columns(len(cmp.runs)), cmp.labels, cmp.runs, strict=True):
    with col:
        st.markdown(f"#### {safe(label)}")
        _ui.stop_alert(run, icons=False)
        grounded, useful = grounded_verdict(run), useful_verdict(run)
        st.markdown(f":{VERDICT_COLOURS.get(grounded, 'red')}-badge[grounding: {safe(grounded)}] "
                    f":{VERDICT_COLOURS.get(useful, 'red')}-badge[answer check: {safe(useful)}]")
        st.plotly_chart(figures.path_figure(run), width="stretch", key=f"cmp_path_{run.id}",
                        config={"displaylogo": False, "displayModeBar": False})
        _ui.answer(run)
        _ui.citations(run.citations, key=f"cmp_{run.id}", knowledge_base=run.knowledge_base)
        if st.button("Open trace", key=f"cmp_trace_{run.id}", icon=":material/account_tree:"):
            _session.open_trace(run.id)
