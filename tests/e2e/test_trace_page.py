"""The Trace page through AppTest, on real runs over real papers in a real (temporary) Chroma."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app_pages._safe import safe as md_escape
from rag.config import preset_options
from rag.models import Run
from rag.run import make_context, run_question
from rag.trace import story
from tests.e2e.conftest import plain
from tests.run_fixtures import ABSENT, QUESTION, WEAK_QUESTION

PAGE = str(Path(__file__).resolve().parents[2] / "app_pages" / "trace.py")


@pytest.fixture(scope="module")
def ctx(papers_kb):
    return make_context(papers_kb.settings, papers_kb)


@pytest.fixture(scope="module")
def rewritten(ctx) -> Run:
    """More relevant chunks wanted than top_k holds: two rewrites, then a caveat."""
    run = run_question(WEAK_QUESTION, ctx, preset_options("full", decomposition=False))
    assert run.path[-1] == "finalize_with_caveat", run.stop_reason
    return run


@pytest.fixture(scope="module")
def naive(ctx) -> Run:
    run = run_question(QUESTION, ctx, preset_options("naive"))
    assert run.path[-1] == "finalize", run.stop_reason
    return run


@pytest.fixture(scope="module")
def abstained(ctx) -> Run:
    run = run_question(ABSENT, ctx, preset_options("full"))
    assert run.path[-1] == "fallback", run.stop_reason
    return run


def open_page(runs: dict[str, Run] | None, run_id: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    if runs is not None:
        at.session_state["runs"] = runs
    if run_id is not None:
        at.session_state["trace_run_id"] = run_id
    return at.run()


def figure_of(at: AppTest, key: str = "trace_flow") -> dict:
    """The figure of the chart ``key`` (the flow with its replay, by default)."""
    charts = [c for c in at.get("plotly_chart") if c.key.startswith(key)]
    assert len(charts) == 1, at.get("plotly_chart")
    return json.loads(charts[0].proto.spec)


def test_no_run_points_to_the_chat_page():
    at = open_page(None)
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Trace"]
    assert len(at.info) == 1 and "Chat page" in at.info[0].value
    assert not at.get("plotly_chart") and not at.dataframe


def test_a_run_shows_its_flow_verdicts_steps_and_answer(rewritten):
    at = open_page({rewritten.id: rewritten}, rewritten.id)
    assert not at.exception, at.exception
    assert not at.selectbox  # one run: nothing to choose
    assert any(md_escape(rewritten.question) in m.value for m in at.markdown)
    # the stop reason, prominently: a caveat is a warning
    assert [w.value for w in at.warning] == [md_escape(rewritten.stop_reason)]
    assert not at.success and not at.error

    fig = figure_of(at)
    nodes = next(t for t in fig["data"] if t.get("name") == "nodes")
    for node in ("__start__", "route_question", "reply_directly", "retrieve", "grade_documents",
                 "rewrite_query", "web_search",
                 "generate", "check_grounding", "grade_answer", "finalize",
                 "finalize_with_caveat", "fallback", "__end__"):
        assert node in nodes["customdata"]
    steps = [a for a in fig["layout"]["annotations"] if a.get("name", "").startswith("step:")]
    assert len(steps) == len(rewritten.events)

    verdicts, steps_table = at.dataframe[0].value, at.dataframe[1].value
    assert len(verdicts) == len(story.verdict_rows(rewritten)) == sum(
        len(e.detail.verdicts) for e in rewritten.events if e.node == "grade_documents")
    assert {"source", "page", "grade", "relevant", "reasoning"} <= set(verdicts.columns)
    assert all(verdicts["reasoning"].str.len() > 0)
    assert list(steps_table["node"]) == rewritten.path
    assert list(steps_table["summary"]) == [story.event_summary(e) for e in rewritten.events]

    # one expander per event with its JSON, plus one per citation
    labels = [e.label for e in at.expander]
    assert len(at.expander) == len(rewritten.events) + len(rewritten.citations)
    assert labels[-1].startswith(f"**{len(rewritten.events)}. finalize")
    assert len(at.json) == len(rewritten.events)
    assert json.loads(at.json[0].value)["node"] == "route_question"  # issue 13: the first node in Full


@pytest.mark.parametrize("which, kind", [("naive", "success"), ("abstained", "error")])
def test_stop_reason_is_shown_by_how_the_run_ended(which, kind, request):
    run: Run = request.getfixturevalue(which)
    at = open_page({run.id: run}, run.id)
    assert not at.exception, at.exception
    assert [e.value for e in getattr(at, kind)] == [md_escape(run.stop_reason)]
    assert [c.key for c in at.get("plotly_chart")] == ["trace_flow_0", "trace_path",
                                                       "trace_timeline"]


def test_several_runs_can_be_chosen_and_follow_trace_run_id(naive, rewritten, abstained):
    runs = {r.id: r for r in (naive, rewritten, abstained)}
    at = open_page(runs, rewritten.id)  # as "Open trace" on the Chat page leaves it
    assert not at.exception, at.exception
    [box] = at.selectbox
    assert box.value == rewritten.id
    assert box.options[0].endswith(abstained.question)  # newest first, labelled by question

    box.select(abstained.id).run()
    assert not at.exception, at.exception
    assert at.session_state["trace_run_id"] == abstained.id
    assert [e.value for e in at.error] == [md_escape(abstained.stop_reason)]
    assert not (figure_of(at)["layout"].get("title") or {}).get("text")  # said once, above

    # a trace_run_id that is gone falls back to the newest run
    at = open_page(runs, "no-such-run")
    assert not at.exception, at.exception
    assert at.selectbox[0].value == abstained.id


NESTED = ("Caveat: the rewrite budget (2) was spent and 1 claim could not be verified (caveat: the rewrite "
          "budget (2) was spent and only 1 relevant chunk(s) were found (2 wanted)).\n\nThe answer [1].")
CAVEAT_LINES = ["Caveat: the rewrite budget (2) was spent", "Caveat: 1 claim could not be verified",
                "Caveat: only 1 relevant chunk(s) were found (2 wanted)"]


def caveat_lines(at: AppTest) -> list[str]:
    return [plain(c.value).split("] ", 1)[-1] for c in at.caption if "Caveat:" in c.value]


def test_caveats_are_one_short_line_each_not_nested_on_trace_and_chat(rewritten, data_dir):
    run = rewritten.model_copy(update={"answer": NESTED})
    at = open_page({run.id: run}, run.id)
    assert not at.exception, at.exception
    assert caveat_lines(at) == CAVEAT_LINES
    assert md_escape("The answer [1].") in [m.value for m in at.markdown]
    assert not any("(caveat" in plain(m.value).lower() for m in [*at.markdown, *at.caption])

    chat = AppTest.from_file(str(Path(PAGE).parents[1] / "app.py"), default_timeout=60)
    chat.session_state["runs"] = {run.id: run}
    chat.session_state["chat_messages"] = [{"role": "user", "content": run.question, "run_id": None},
                                           {"role": "assistant", "content": run.answer, "run_id": run.id}]
    chat.run()
    assert not chat.exception, chat.exception
    assert caveat_lines(chat) == CAVEAT_LINES
