"""The Compare, Insights and Trace.

(history, replay, node details) pages through AppTest, on a real Chroma holding the two RAG papers and a real
run history (SQLite) in a temporary data dir.
"""

from __future__ import annotations

import json

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rag.history import RunStore
from rag.trace import insights, story
from tests.conftest import ROOT
from tests.e2e.conftest import plain
from tests.run_fixtures import CLAIM, QUESTION, llm_run

APP = str(ROOT / "app.py")
ME = "session-me"



@pytest.fixture
def data_dir(papers_copy):
    """The two papers' data dir, copied for this test (its own history)."""
    return papers_copy


def open_app(session_id: str | None = ME) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if session_id:
        at.session_state["session_id"] = session_id
    at.run()
    assert not at.exception, at.exception
    return at


def chart_keys(at: AppTest) -> list[str]:
    return [c.key for c in at.get("plotly_chart")]


def figure(at: AppTest, key: str) -> dict:
    [chart] = [c for c in at.get("plotly_chart") if c.key == key or c.key.startswith(f"{key}_")]
    return json.loads(chart.proto.spec)


def markdown(at: AppTest) -> str:
    return "\n".join(plain(m.value) for m in at.markdown)


# --------------------------------------------------------------------------- compare


def test_compare_three_presets_side_by_side_then_open_a_trace(data_dir):
    at = open_app()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="cmp_w_presets").value == ["naive", "crag", "full"]
    at.text_input(key="cmp_w_question").input(QUESTION)
    at.button(key="cmp_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]

    [cmp] = at.session_state["cmp_comparisons"].values()
    assert cmp.labels == ["Naive RAG", "Corrective RAG (CRAG)", "Full"]
    heads = [plain(m.value) for m in at.markdown if m.value.startswith("#### ")]
    assert heads == ["#### Naive RAG", "#### Corrective RAG (CRAG)", "#### Full"]
    # a small flow per path, in the order of the columns, each with its own path
    keys = [k for k in chart_keys(at) if k.startswith("cmp_path_")]
    assert keys == [f"cmp_path_{r.id}" for r in cmp.runs]
    for run in cmp.runs:
        steps = next(t for t in figure(at, f"cmp_path_{run.id}")["data"] if t["name"] == "steps")
        assert steps["customdata"] == run.path
    assert cmp.runs[0].path == ["retrieve", "generate", "finalize"]
    # answers with their citations, calls / tokens / cost / latency, and the verdicts
    text = markdown(at)
    metrics = next(d.value for d in at.dataframe if "latency_ms" in d.value.columns)
    assert list(metrics["pipeline"]) == cmp.labels
    assert list(metrics["latency_ms"]) == [round(r.duration_ms) for r in cmp.runs]
    assert set(metrics["cost"]) == {"$0"} and set(metrics["tokens"]) == {0}
    for run in cmp.runs:
        for c in run.citations:
            assert any(plain(e.label).startswith(f"[{c.n}] {c.source}") for e in at.expander)
    assert text.count(":gray-badge[grounding: not checked]") == 2  # naive and CRAG
    assert "grounding: grounded" in text or "grounding: not grounded" in text
    assert len([b for b in at.button if b.key and b.key.startswith("cmp_trace_")]) == 3
    assert [d.label for d in at.get("download_button")] == ["Download HTML report",
                                                            "Download JSON"]

    # every run is in the history, under this session, tied to the comparison
    store = RunStore(data_dir / "runs.sqlite")
    saved = store.list(ME)
    assert {s.id for s in saved} == {r.id for r in cmp.runs}
    assert {s.comparison_id for s in saved} == {cmp.id}
    assert store.get_comparison(cmp.id).labels == cmp.labels

    # open the Full run on the Trace page
    full = cmp.runs[2]
    at.button(key=f"cmp_trace_{full.id}").click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title][-1] == "Trace"
    assert at.selectbox(key="trace_w_run").value == full.id
    alerts = [plain(a.value) for kind in ("success", "warning", "error") for a in getattr(at, kind)]
    assert full.stop_reason in alerts


def trace_of(at: AppTest) -> dict:
    return figure(at, "trace_flow")


def test_compare_custom_pipeline_and_bad_input(data_dir):
    at = open_app()
    at.switch_page("app_pages/compare.py").run()
    at.button(key="cmp_run").click().run()
    assert [e.value for e in at.error] == ["Cannot compare: type a question first"]

    at.multiselect(key="cmp_w_presets").set_value(["naive"])
    at.text_input(key="cmp_w_question").input(QUESTION)
    at.button(key="cmp_run").click().run()
    assert [plain(e.value) for e in at.error] == [
        "Cannot compare: compare 2 to 4 pipelines (got 1)"]

    at.toggle(key="cmp_w_custom").set_value(True).run()
    at.checkbox(key="cmp_w_c_grading").check()
    at.checkbox(key="cmp_w_c_answer_check").check().run()
    at.button(key="cmp_run").click().run()
    assert not at.exception and not at.error
    [cmp] = at.session_state["cmp_comparisons"].values()
    assert cmp.labels == ["Naive RAG", "Custom: grading, answer check"]
    custom = cmp.runs[1]
    assert custom.options.grading and custom.options.answer_check
    assert not custom.options.rewriting and "grade_answer" in custom.path


def test_compare_on_an_empty_knowledge_base_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "empty"))
    st.cache_resource.clear()
    at = open_app()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, at.exception
    assert any("is empty" in i.value for i in at.info)
    assert at.button(key="cmp_run").disabled
    st.cache_resource.clear()


# --------------------------------------------------------------------------- trace + history


def test_history_my_runs_all_sessions_filter_and_read_only(data_dir, runs):
    store = RunStore(data_dir / "runs.sqlite")
    store.save(runs["naive"], ME)
    store.save(runs["rewritten"], ME)
    store.save(runs["abstained"], "somebody-else")

    at = open_app()
    at.switch_page("app_pages/trace.py").run()
    assert not at.exception, at.exception
    box = at.selectbox(key="trace_w_run")
    assert box.options[0].endswith(runs["rewritten"].question)  # newest first
    assert {plain(o).split(" · ")[-1] for o in box.options} == {QUESTION, runs["rewritten"].question}
    assert box.value == runs["rewritten"].id

    # another session's run is only listed on purpose, and opens read-only
    at.toggle(key="trace_w_all").set_value(True).run()
    assert len(at.selectbox(key="trace_w_run").options) == 3
    at.text_input(key="trace_w_filter").input("tungsten").run()
    assert not at.exception, at.exception
    assert not [s for s in at.selectbox if s.key == "trace_w_run"]  # a single match: nothing to choose
    assert any(runs["abstained"].stop_reason in plain(e.value) for e in at.error)
    assert "Made by another session: read-only." in [c.value for c in at.caption]
    assert not [b for b in at.button if b.key == "trace_delete_confirm"]

    at.text_input(key="trace_w_filter").input("").run()
    at.multiselect(key="trace_w_kinds").set_value(["caveat"]).run()
    assert not [s for s in at.selectbox if s.key == "trace_w_run"]
    assert plain(at.warning[0].value) == runs["rewritten"].stop_reason

    # delete my own run: gone from the history, the others stay
    at.button(key="trace_delete_confirm").click().run()
    assert not at.exception, at.exception
    assert store.get(runs["rewritten"].id) is None and store.get(runs["abstained"].id)
    assert any(s.value.startswith("Deleted the run") for s in at.success)


def test_history_survives_a_restart(data_dir, runs):
    """A run made in one session is there after a restart (a new process, a new session)."""
    at = open_app()
    at.switch_page("app_pages/chat.py").run()
    at.chat_input[0].set_value(QUESTION).run()
    assert not at.exception, at.exception
    run_id = at.session_state["chat_messages"][-1]["run_id"]
    assert RunStore(data_dir / "runs.sqlite").owner(run_id) == ME

    st.cache_resource.clear()  # as after a restart: nothing cached, only the files remain
    later = open_app(session_id=None)
    later.switch_page("app_pages/trace.py").run()
    assert not later.exception, later.exception
    assert "No run in this session yet" in later.info[0].value  # not someone else's by accident
    later.toggle(key="trace_w_all").set_value(True).run()
    assert not later.exception, later.exception
    assert any(QUESTION in plain(m.value) for m in later.markdown)
    assert later.session_state["trace_run_id"] == run_id
    assert "Made by another session: read-only." in [c.value for c in later.caption]


def test_replay_step_slider_and_node_details(data_dir, runs):
    run = runs["rewritten"]
    RunStore(data_dir / "runs.sqlite").save(run, ME)
    at = open_app()
    at.switch_page("app_pages/trace.py").run()
    n = len(run.events)
    assert chart_keys(at) == ["trace_flow_0", "trace_path", "trace_timeline"]
    fig = trace_of(at)
    caption = next(t for t in fig["data"] if t["name"] == "replay:caption")["text"][0]
    assert not fig.get("frames") and caption.startswith(f"<b>Step {n} of {n}")

    slider = at.slider(key=f"trace_w_step_{run.id}")
    assert slider.value == n
    i = run.path.index("retrieve")  # after whatever runs once first (decompose_query)
    k = i + 3  # the first rewrite
    slider.set_value(k).run()
    assert not at.exception, at.exception
    fig = trace_of(at)
    caption = next(t for t in fig["data"] if t["name"] == "replay:caption")["text"][0]
    assert caption.startswith(f"<b>Step {k} of {n}")
    assert next(t for t in fig["data"] if t["name"] == "replay:current")["customdata"] == \
        ["rewrite_query"]
    text = markdown(at)
    rewrite = run.events[k - 1]
    assert f"Step {k} of {n} · rewrite 1 of 2** — {rewrite.summary}" in text
    assert f"→ **retrieve**: {rewrite.route.why}" in text
    assert f"new query: “{rewrite.detail.query}”" in text

    # node details: every visit of grade_documents, each verdict on its chunk with its reason
    at.pills(key="trace_w_node").set_value("grade_documents").run()
    assert not at.exception, at.exception
    text = markdown(at)
    gradings = [e for e in run.events if e.node == "grade_documents"]
    for g, e in enumerate(gradings, 1):
        assert f"Step {e.step} of {n} · grade_documents {g} of 3**" in text
        for v in story.chunk_verdicts(e):
            assert f"**{v.source} p.{v.page}** — {v.reasoning}" in text
    # the loops unrolled, by attempt
    assert "**Attempt 2: “" in text and f"**{k}** rewrite 1 of 2" in text
    assert f"**{k + 3}** rewrite 2 of 2" in text


def test_llm_run_shows_claims_fallbacks_tokens_and_cost(data_dir, papers_kb, tmp_path):
    from tests.fakes.servers import FakeOpenAI

    server = FakeOpenAI().start()
    try:
        run = llm_run(server, papers_kb, tmp_path / "llm")
    finally:
        server.stop()
    RunStore(data_dir / "runs.sqlite").save(run, ME)
    at = open_app()
    at.switch_page("app_pages/trace.py").run()
    assert not at.exception, at.exception
    # (issue 10: the rewrite brings back the same evidence, so the answer is not generated and
    # checked again; the old second rewrite, where the rewriter fell back, no longer happens)
    assert [plain(w.value) for w in at.warning] == [
        "Answered with caveat: the rewrite budget (2) was spent and 1 claim could not be verified and "
        "the evidence did not change after the last correction, so the previous answer stands"]
    text = markdown(at)
    assert text.count(f"ungrounded: {CLAIM}") >= 1  # the failed check lists its claim
    assert ":red-badge[not grounded]" in text
    at.pills(key="trace_w_node").set_value("rewrite_query").run()
    text = markdown(at)
    rewrite = next(e for e in run.events if e.node == "rewrite_query")
    assert rewrite.detail.query[:30] in text
    caption = " ".join(plain(c.value) for c in at.caption)
    assert f"{run.llm_calls} LLM calls" in caption
    assert "no price for" in caption  # the fake models have no price: said, not guessed
    per_node = at.dataframe[-1].value
    assert set(per_node["node"]) >= {"grade_documents", "generate", "check_grounding"}
    assert per_node["tokens"].sum() == run.prompt_tokens + run.completion_tokens


# --------------------------------------------------------------------------- insights


def test_insights_over_my_runs_and_all_sessions(data_dir, runs):
    at = open_app()
    at.switch_page("app_pages/insights.py").run()
    assert not at.exception, at.exception
    assert "No saved runs yet" in at.info[0].value

    store = RunStore(data_dir / "runs.sqlite")
    mine = [runs["answered"], runs["naive"], runs["rewritten"]]
    for r in mine:
        store.save(r, ME)
    store.save(runs["abstained"], "somebody-else")
    at.run()
    assert not at.exception, at.exception
    want = insights.compute(mine)
    metrics = {m.label: m.value for m in at.metric}
    # one format per kind of figure (rag.trace.formats): shares "80 %", means "1.5", ms "1,234 ms"
    assert metrics["Rewrite rate"] == f"{round(want.rewrite_rate * 100)} %"
    assert metrics["Rewrites per answered question"] == f"{want.mean_rewrites_answered:.1f}"
    assert metrics["Grounding checks"] == str(want.grounding_checks)
    assert metrics["Latency p50"] == f"{round(want.latency_p50_ms):,} ms"
    assert metrics["LLM calls per question"] == "0.0"
    assert chart_keys(at) == ["ins_stop", "ins_strategies", "ins_latency"]
    stop = next(t for t in figure(at, "ins_stop")["data"] if t["name"] == "bars")
    assert dict(zip(stop["x"], stop["y"], strict=False)) == want.stop_kinds
    strategies = next(t for t in figure(at, "ins_strategies")["data"] if t["name"] == "bars")
    assert sum(strategies["y"]) == runs["rewritten"].rewrites
    paths = at.dataframe[0].value
    assert dict(zip(paths["path"], paths["runs"], strict=False)) == dict(want.paths)
    by_pipeline = at.dataframe[1].value
    assert dict(zip(by_pipeline["pipeline"], by_pipeline["runs"], strict=False)) == {
        "Full": 1, "Naive RAG": 1, "Custom": 1}

    at.toggle(key="ins_w_all").set_value(True).run()
    assert "Over 4 runs" in at.caption[0].value
    stop = next(t for t in figure(at, "ins_stop")["data"] if t["name"] == "bars")
    assert dict(zip(stop["x"], stop["y"], strict=False))["No answer (abstained)"] == 1

    at.multiselect(key="ins_w_presets").set_value(["Naive RAG"]).run()
    assert not at.exception, at.exception
    assert "Over 1 run," in at.caption[0].value
    assert {m.label: m.value for m in at.metric}["Rewrite rate"] == "0 %"


def test_a_run_that_failed_before_any_step_still_opens(data_dir):
    from rag.config import Options
    from rag.models import Run

    run = Run(question="Why?", options=Options(), engine="local",
              error="ConnectionError in retrieve: Chroma is down", error_node="retrieve",
              stop_reason="Stopped by an error: ConnectionError in retrieve: Chroma is down",
              answer="The run stopped because of an error; see the trace for where.")
    RunStore(data_dir / "runs.sqlite").save(run, ME)
    at = open_app()
    at.switch_page("app_pages/trace.py").run()
    assert not at.exception, at.exception
    assert plain(at.error[0].value) == run.stop_reason
    assert not at.slider  # nothing to replay
    fig = trace_of(at)
    caption = next(t for t in fig["data"] if t["name"] == "replay:caption")["text"][0]
    assert caption.startswith("<b>Step 0 of 0") and not fig.get("frames")
    assert "0 LLM calls" in " ".join(c.value for c in at.caption)
