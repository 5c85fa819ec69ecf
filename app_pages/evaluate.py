"""Evaluate page: run a question set through pipelines and measure what self-correction buys."""

import streamlit as st

from app_pages import _samples, _session, _tables
from app_pages._safe import safe
from rag.config import PRESETS, PRESETS_HELP, preset_label
from rag.eval import parse_items, run_eval
from rag.run import make_context
from rag.samples import SAMPLE_KB, SAMPLES_DIR
from rag.trace import charts, formats
from rag.trace.export import EVAL_COLUMNS, eval_cell, eval_citations, evaluation_html, evaluation_json

SAMPLE_SET = SAMPLES_DIR / "eval" / "sample-questions.jsonl"
SAMPLE, UPLOAD = "Sample questions (about the sample documents)", "Upload a question set (JSONL)"
FORMAT_HELP = ('One JSON object a line: {"id", "question", "answers"?: [...], "sources"?: [file names], '
               '"answerable"?: true/false}. Answers are matched after SQuAD normalisation; a source hit '
               "means the first citation comes from one of the sources.")

st.title("Evaluate")
_samples.notice()
st.caption("Run a question set through each pipeline on the current knowledge base: how often each "
           "answers, caveats or abstains, whether it finds the answer and the right source, and at what "
           "cost.")

kb_name = _session.current_kb_name()
with _session.stop_on_store_error(kb_name):
    kb = _session.knowledge_base(kb_name)
    n_chunks = kb.count()

source = st.radio("Question set", [SAMPLE, UPLOAD], key="ev_w_source", horizontal=True, help=FORMAT_HELP)
lines: list[str] = []
set_name = "sample-questions"
if source == UPLOAD:
    upload = st.file_uploader("Question set", type=["jsonl", "json", "txt"], key="ev_w_file",
                              help=FORMAT_HELP, label_visibility="collapsed")
    if upload is not None:
        lines = upload.getvalue().decode("utf-8", errors="replace").splitlines()
        set_name = upload.name.rsplit(".", 1)[0] or "questions"
elif SAMPLE_SET.is_file():
    lines = SAMPLE_SET.read_text(encoding="utf-8").splitlines()
    st.caption(f"Twelve questions the sample documents answer (some in other words than theirs) and four "
               f"they cannot. Select the knowledge base '{SAMPLE_KB}' for the answerable ones to count.")
    if kb_name != SAMPLE_KB and n_chunks:
        _samples.load_button("ev_samples_set", primary=False)

items = []
if lines:
    try:
        items = parse_items(lines, name=set_name)
    except ValueError as exc:
        st.error(safe(f"This question set cannot be read: {exc}"))
    else:
        st.caption(f"{formats.plural(len(items), 'question')}; "
                   f"{formats.count(sum(i.answerable is False for i in items))} marked unanswerable.")

presets = st.multiselect("Pipelines", list(PRESETS), default=["naive", "crag", "full"],
                         format_func=preset_label, key="ev_w_presets", help=PRESETS_HELP)
if n_chunks == 0:
    st.info(f"The knowledge base '{safe(kb_name)}' is empty. Upload documents on the Documents page, or "
            f"load {_samples.ABOUT}, then evaluate.")
    _samples.load_button("ev_samples")
go = st.button("Evaluate", type="primary", key="ev_run", icon=":material/fact_check:",
               disabled=not (items and presets and n_chunks))

if go:
    context = make_context(_session.session_settings(), kb)
    total = len(items) * len(presets)
    bar = st.progress(0.0, text=f"0 of {formats.plural(total, 'run')}")

    def progress(done: int, n: int) -> None:
        """Move the bar to run ``done`` of ``n``."""
        bar.progress(done / n, text=f"{formats.count(done)} of {formats.plural(n, 'run')}")

    try:
        made = run_eval(items, context, presets, store=_session.store(), session_id=_session.session_id(),
                        on_progress=progress)
    except (OSError, ValueError) as exc:
        st.error(safe(f"The evaluation stopped: {exc}"))
    else:
        st.session_state["ev_result"] = made.to_dict()
    bar.empty()

kept: dict | None = st.session_state.get("ev_result")
if not kept:
    st.stop()
result: dict = kept

by_label = {preset_label(p): f for p, f in result["presets"].items()}
st.subheader("By pipeline")
st.dataframe([{"pipeline": name, **{label: eval_cell(k, f.get(k)) for k, label in EVAL_COLUMNS}}
              for name, f in by_label.items()], hide_index=True, width="stretch")
left, right = st.columns(2)
left.plotly_chart(charts.outcomes_figure(by_label), width="stretch", key="ev_outcomes",
                  config={"displaylogo": False})
right.plotly_chart(charts.hits_figure(by_label), width="stretch", key="ev_hits",
                   config={"displaylogo": False})

st.subheader("Every question")


rows = [{"id": i["id"], "pipeline": preset_label(i["preset"]), "question": i["question"],
         "ended in": i["end"], "first citation": eval_citations(i, 1), "run": i["run_id"]}
        for i in result["items"]]
picked = st.dataframe(rows, hide_index=True, width="stretch", key="ev_items", on_select="rerun",
                      selection_mode="single-row", column_config={"run": None})
chosen = picked.selection.rows if picked and picked.selection else []
if chosen:
    row = rows[chosen[0]]
    if st.button(safe(f"Open {row['id']} ({row['pipeline']}) in Trace"), key="ev_open",
                 icon=":material/account_tree:"):  # the id comes from the uploaded set
        _session.open_trace(row["run"])
else:
    st.caption("Select a row to open its run in Trace.")

_tables.downloads("ev", set_name + "-evaluation", lambda: evaluation_html(result, secrets=_session.secrets()),
              lambda: evaluation_json(result, secrets=_session.secrets()), columns=tuple(st.columns(2)),
              html_help="One self-contained file: figures, charts and every question; no network needed.")
