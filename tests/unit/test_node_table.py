"""What a node is comes from one table, rag.models.NODES: trace views, story, insights and bench read it."""

from __future__ import annotations

import pytest

from rag import models
from rag.bench.qa import committed_answer
from rag.config import Options
from rag.graph.build import build_graph
from rag.models import (
    ANSWERED,
    NODES,
    EndDetail,
    GenerateDetail,
    Node,
    RewriteDetail,
    Run,
    TraceEvent,
)
from rag.trace import insights, pricing, story, views

BRIEF = "finalize_briefly"
"""A node the graph does not have: added below as one row of NODES."""


def _event(step: int, node: str, detail, summary: str = "done") -> TraceEvent:
    return TraceEvent(step=step, node=node, attempt=1, started_at=0.0, duration_ms=1.0, summary=summary,
                      detail=detail, llm_calls=1)


def _run(*path: str) -> Run:
    details = {"generate": GenerateDetail(answer="Paris [1]"), "rewrite_query": RewriteDetail(rewrite=1)}
    events = [_event(i, n, details.get(n, EndDetail())) for i, n in enumerate(path, 1)]
    return Run(question="q", options=Options(), engine="openai", path=list(path), events=events,
               models={"grader": "small", "generator": "big"}, answer="Paris [1]")


def test_every_node_of_the_graph_has_its_row():
    drawn = set(build_graph().get_graph().nodes) - {"__start__", "__end__"}
    assert drawn == set(NODES) == set(views.VIEWS)
    assert models.TERMINALS == ("finalize", "finalize_with_caveat", "fallback", "reply_directly")
    assert models.ANSWERED_ENDS == ("finalize", "finalize_with_caveat")


def test_a_node_added_as_one_row_is_read_by_every_view(monkeypatch):
    monkeypatch.setitem(NODES, BRIEF, Node(EndDetail, role="grader", ending=ANSWERED, commits_answer=True))
    run = _run("retrieve", "generate", BRIEF)
    assert story.stop_kind(run) == story.ANSWERED
    assert story.event_summary(run.events[-1]) == "Answered"  # an ending says how the run ended
    assert committed_answer(run) == "Paris [1]"
    assert pricing.event_model(run.events[-1], run) == "small"  # priced as the grader
    assert views.event_status(run.events[-1]) == views.VISITED  # no VIEWS row: shown, neutral
    monkeypatch.delitem(NODES, BRIEF)
    assert story.stop_kind(run) == story.UNFINISHED and committed_answer(run) == ""
    assert pricing.event_model(run.events[-1], run) == "big"


@pytest.mark.parametrize(("end", "kind"), [("finalize", "answered"), ("finalize_with_caveat", "caveat"),
                                           ("fallback", "abstained"), ("reply_directly", "answered")])
def test_endings_read_the_table(end, kind):
    assert story.stop_kind(_run("retrieve", end)) == kind


def test_rounds_start_after_the_node_the_table_marks(monkeypatch):
    run = _run("route_question", "retrieve", "rewrite_query", "retrieve", "rewrite_query", "retrieve",
               "generate", "finalize")
    assert insights.path_key(run) == ("route_question → (retrieve → rewrite_query) ×2 → retrieve → "
                                      "generate → finalize")
    assert [s.round for s in story.steps(run)] == [1, 1, 1, 2, 2, 3, 3, 3]
    monkeypatch.setitem(NODES, "rewrite_query", Node(RewriteDetail))  # no longer starts a round
    assert [s.round for s in story.steps(run)] == [1] * 8
    assert insights.path_key(run) == " → ".join(run.path[:1]) + " → " + " → ".join(run.path[1:])
