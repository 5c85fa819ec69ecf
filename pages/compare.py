"""Compare page: one question under 2 to 4 pipelines at once, answers and paths side by side."""

import streamlit as st

from pages import _runs, _shared
from rag.trace import charts as figures, story
from rag.config import MAX_PIPELINES, TOGGLES, parse_pipelines
from rag.models import Comparison
from rag.trace.story import grounded_verdict, useful_verdict
from rag.run import run_comparison
from rag.config import PRESETS, Options
from rag.trace.export import comparison_html, comparison_json
from rag.trace.pricing import DEFAULT_PRICES, format_cost, run_cost
from rag.run import make_context
from rag.store.chroma import StoreError

TOGGLE_LABELS = {"grading": "Grade chunks", "rewriting": "Rewrite the query",
                 "web_fallback": "Web fallback", "grounding_check": "Grounding check",
                 "answer_check": "Answer check", "decomposition": "Decompose the question"}
DEFAULT_PRESETS = ["naive", "crag", "full"]

st.title("Compare")
st.caption("One question, 2 to 4 pipelines at the same time: see what self-correction changes.")
comparisons: dict = st.session_state.setdefault("cmp_comparisons", {})
try:
    prices = _runs.prices()
except ValueError as exc:
    st.error(f"{exc}. Costs use the built-in prices.")
    prices = dict(DEFAULT_PRICES)

kb_name = _shared.current_kb_name()
try:
    kb = _shared.knowledge_base(kb_name)
    n_chunks = kb.count()
except Exception as exc:  # Chroma unreachable, bad name or embedding mismatch: say what broke
    st.error(f"Cannot open the knowledge base '{kb_name}': {exc}")
    st.stop()

# -- what to compare -----------------------------------------------------------------------
presets = st.multiselect("Pipelines", list(PRESETS), default=DEFAULT_PRESETS,
                         format_func=lambda k: PRESETS[k][0], key="cmp_w_presets",
                         max_selections=MAX_PIPELINES,
                         help="Naive RAG is everything off; Full is everything on.")
custom_on = st.toggle("Add a custom pipeline", key="cmp_w_custom")
customs: list[str] = []
if custom_on:
    cols = st.columns(len(TOGGLES))
    picked = [t for t, col in zip(TOGGLES, cols)
              if col.checkbox(TOGGLE_LABELS.get(t, t.replace("_", " ")), value=t == "grading",
                              key=f"cmp_w_c_{t}")]
    customs = ["+".join(picked) or "none"]
with st.expander("Budgets (for every pipeline)"):
    d = Options()
    n1, n2, n3 = st.columns(3)
    numbers = dict(
        top_k=n1.number_input("top_k", 1, 50, d.top_k, key="cmp_w_top_k"),
        min_relevant=n2.number_input("min_relevant", 1, 50, d.min_relevant,
                                     key="cmp_w_min_relevant"),
        max_rewrites=n3.number_input("max_rewrites", 0, 5, d.max_rewrites,
                                     key="cmp_w_max_rewrites"))

question = st.text_input("Question", key="cmp_w_question",
                         placeholder="Ask the same question of every pipeline")
if n_chunks == 0:
    st.info(f"The knowledge base '{kb_name}' is empty. Upload documents on the Documents page "
            "(or load the samples on the Chat page), then compare.")
go = st.button("Compare", type="primary", key="cmp_run", disabled=n_chunks == 0,
               icon=":material/compare_arrows:")

if go:
    try:
        pipelines = parse_pipelines(presets, customs, **{k: int(v) for k, v in numbers.items()})
        if not question.strip():
            raise ValueError("type a question first")
    except ValueError as exc:
        st.error(f"Cannot compare: {exc}")
    else:
        try:
            context = make_context(_shared.session_settings(), kb)
            with st.spinner(f"Running {len(pipelines)} pipelines at once…"):
                cmp = run_comparison(question, context, pipelines)
        except (StoreError, ValueError) as exc:
            st.error(f"The comparison could not be run: {exc}")
        except Exception as exc:  # e.g. Chroma failing while reading term statistics
            st.error(f"The comparison could not be run: {type(exc).__name__}: {exc}")
        else:
            comparisons[cmp.id] = cmp
            st.session_state["cmp_current"] = cmp.id
            for run in cmp.runs:
                _shared.runs()[run.id] = run
            try:
                _runs.store().save_comparison(cmp, _runs.session_id())
            except Exception as exc:  # the comparison stays usable in this session
                st.warning(f"The comparison could not be saved to the history: "
                           f"{type(exc).__name__}: {exc}")

if not comparisons:
    st.stop()

# -- results -------------------------------------------------------------------------------
current = st.session_state.get("cmp_current")
if current not in comparisons:
    current = list(comparisons)[-1]
if len(comparisons) > 1:
    ids = list(reversed(comparisons))
    current = st.selectbox("Comparison", ids, index=ids.index(current), key="cmp_w_pick",
                           format_func=lambda i: f"{_shared.when(comparisons[i].created_at):%H:%M:%S}"
                                                 f" · {comparisons[i].question[:80]}")
    st.session_state["cmp_current"] = current
cmp: Comparison = comparisons[current]

st.subheader(f"“{cmp.question}”")
secrets = _runs.secrets()
a, b, _ = st.columns([1, 1, 2])
a.download_button("Download HTML report", key="cmp_dl_html", on_click="ignore",
                  icon=":material/download:", mime="text/html",
                  file_name=f"retrace-comparison-{cmp.id[:8]}.html",
                  data=lambda: comparison_html(cmp, prices=prices, secrets=secrets),
                  help="One self-contained file: opens offline, with every run's replay.")
b.download_button("Download JSON", key="cmp_dl_json", on_click="ignore",
                  icon=":material/data_object:", mime="application/json",
                  file_name=f"retrace-comparison-{cmp.id[:8]}.json",
                  data=lambda: comparison_json(cmp, prices=prices, secrets=secrets))

e = _shared.md_escape
for col, label, run in zip(st.columns(len(cmp.runs)), cmp.labels, cmp.runs):
    with col:
        st.markdown(f"#### {e(label)}")
        kind = story.stop_kind(run)
        alert = {story.ANSWERED: st.success, story.CAVEAT: st.warning}.get(kind, st.error)
        alert(e(story.headline(run)))
        tokens = run.prompt_tokens + run.completion_tokens
        st.markdown(f"| LLM calls | tokens | cost | latency |\n|---|---|---|---|\n"
                    f"| {run.llm_calls} | {tokens} | {e(format_cost(run_cost(run, prices)))} | "
                    f"{run.duration_ms:.0f} ms |")
        grounded, useful = grounded_verdict(run), useful_verdict(run)
        g_color = "green" if grounded == "grounded" else "gray" if grounded == "not checked" \
            else "red"
        u_color = "green" if useful == "useful" else "gray" if useful == "not checked" else "red"
        st.markdown(f":{g_color}-badge[grounding: {e(grounded)}] "
                    f":{u_color}-badge[answer check: {e(useful)}]")
        st.plotly_chart(figures.path_figure(run), width="stretch", key=f"cmp_path_{run.id}",
                        config={"displaylogo": False, "displayModeBar": False})
        if run.error:
            st.error(e(run.answer))
        else:
            st.markdown(e(run.answer).replace("\n", "  \n"))
        for c in run.citations:
            with st.expander(e(_shared.citation_label(c))):
                st.text(c.text or "(no text stored for this chunk)")
        if st.button("Open trace", key=f"cmp_trace_{run.id}", icon=":material/account_tree:"):
            _shared.open_trace(run.id)
