"""The Evaluate page through AppTest: the sample question set over the sample documents, real graph."""

from __future__ import annotations

import json
import re

from streamlit.testing.v1 import AppTest

from rag.config import Settings
from rag.eval import load_items
from rag.samples import SAMPLES_DIR, load_samples
from rag.store.chroma import open_knowledge_base
from tests.e2e.test_app_pages import APP

SAMPLE_SET = SAMPLES_DIR / "eval" / "sample-questions.jsonl"


def test_evaluate_samples_table_charts_rows_into_trace_and_report(data_dir):
    kb = open_knowledge_base(Settings.from_env({}, data_dir=data_dir))
    load_samples(kb)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/evaluate.py").run()
    assert not at.exception, at.exception
    sample = load_items(SAMPLE_SET)
    n = len(sample)
    unanswerable = {i.id for i in sample if i.answerable is False}
    assert n >= 12 and len(unanswerable) >= 3
    assert any(f"{n} questions; {len(unanswerable)} marked unanswerable" in c.value for c in at.caption)
    at.multiselect(key="ev_w_presets").set_value(["naive", "full"])
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception

    result = at.session_state["ev_result"]
    assert set(result["presets"]) == {"naive", "full"} and len(result["items"]) == 2 * n
    naive, full = result["presets"]["naive"], result["presets"]["full"]
    assert naive["answered"] + naive["abstained"] == n and naive["caveat"] == 0
    # Naive RAG answers questions the samples cannot answer; Full abstains on every one of them.
    ends = {(i["preset"], i["id"]): i["end"] for i in result["items"]}
    assert any(ends["naive", q] == "finalize" for q in unanswerable), ends
    assert all(ends["full", q] == "fallback" for q in unanswerable), ends
    assert full["source_hit"] is not None and full["questions"] == n

    table = at.dataframe[0].value
    assert list(table["pipeline"]) == ["Naive RAG", "Full"]
    assert {"Answered clean", "With caveat", "Abstained", "Answer hit", "Source hit", "Latency p50",
            "LLM calls"} <= set(table.columns)
    # one format per kind of figure: shares "80 %", ms "1,234 ms", means "1.5", counts "8"
    assert all(re.fullmatch(r"\d+ %|—", v) for v in table["Answer hit"]), list(table["Answer hit"])
    assert all(re.fullmatch(r"[\d,]+ ms", v) for v in table["Latency p50"]), list(table["Latency p50"])
    assert all(re.fullmatch(r"\d+\.\d", v) for v in table["LLM calls"]), list(table["LLM calls"])
    assert list(table["Questions"]) == [str(n), str(n)]
    assert all(re.fullmatch(r"\d+ %|—", v) for v in table["Clean precision"]), list(table["Clean precision"])
    assert "Confidently wrong" in table.columns
    charts = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    names = {t.get("name") for c in charts for t in c["data"]}
    assert {"answered clean", "with a caveat", "abstained"} <= names
    rows = at.dataframe[1].value
    assert len(rows) == 2 * n and set(rows["ended in"]) <= {"finalize", "finalize_with_caveat", "fallback"}

    # every run is in the history, so a row opens in Trace
    from rag.history import RunStore

    store = RunStore(data_dir / "runs.sqlite")
    assert all(store.get(i["run_id"]) is not None for i in result["items"])
    at.session_state["trace_run_id"] = result["items"][-1]["run_id"]
    at.switch_page("app_pages/trace.py").run()
    assert not at.exception, at.exception
    assert any(result["items"][-1]["question"] in m.value.replace("\\", "") for m in at.markdown)


def test_a_bad_question_set_is_one_line(data_dir):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/evaluate.py").run()
    at.radio(key="ev_w_source").set_value("Upload a question set (JSONL)").run()
    assert not at.exception, at.exception
    assert at.button(key="ev_run").disabled
