"""The trace flow figure and tables, checked from the figure's JSON on real runs (real Chroma)."""

from __future__ import annotations

import json
import re

import pytest

from rag.config import preset_options
from rag.engines.local import LocalEngine
from rag.graph.build import build_graph
from rag.models import Run
from rag.run import make_context, run_question
from rag.store.bm25 import lexical_stats
from rag.trace import flow as viz
from rag.trace import geometry, story, views
from tests.run_fixtures import QUESTION, WEAK_QUESTION


@pytest.fixture(scope="module")
def ctx(papers_kb):
    return make_context(papers_kb.settings, papers_kb)


@pytest.fixture(scope="module")
def answered(runs) -> Run:
    """The full pipeline on a question the papers answer (the shared run of tests/conftest.py)."""
    run = runs["answered"]
    assert run.error is None and run.path[-1] in ("finalize", "finalize_with_caveat"), run.path
    return run


@pytest.fixture(scope="module")
def naive(runs) -> Run:
    """Plain single-pass RAG: retrieve, generate, finalize (the shared run)."""
    return runs["naive"]


@pytest.fixture(scope="module")
def rewritten(ctx) -> Run:
    """Wants more relevant chunks than top_k can ever hold, so it always spends both rewrites, tries the.

    (unconfigured) web, and answers with a caveat.
    """
    run = run_question(WEAK_QUESTION, ctx, preset_options("full", decomposition=False))
    assert run.path.count("retrieve") == 3 and run.rewrites == 2, run.path
    assert run.path[-1] == "finalize_with_caveat", run.stop_reason
    return run


@pytest.fixture(scope="module")
def abstained(runs) -> Run:
    """The full pipeline on a question the papers cannot answer (the shared run)."""
    return runs["abstained"]


def figure_json(run: Run, graph=None) -> dict:
    return json.loads(viz.flow_figure(run, graph).to_json())


def trace(fig: dict, name: str) -> dict:
    return next(t for t in fig["data"] if t.get("name") == name)


def node_points(fig: dict) -> dict[str, dict]:
    """Node name -> its label, colour and hover text, from the node trace."""
    t = trace(fig, "nodes")
    return {
        name: {"text": text, "color": color, "hover": hover, "x": x, "y": y}
        for name, text, color, hover, x, y in zip(
            t["customdata"], t["text"], t["marker"]["color"], t["hovertext"], t["x"], t["y"], strict=False
        )
    }


def plain(html: str) -> str:
    """Hover pseudo-HTML back to plain text: line breaks to spaces, tags and entities out."""
    text = re.sub(r"<[^>]+>", " ", html.replace("<br>", " "))
    text = re.sub(r"&#(\d+);", lambda m: chr(int(m.group(1))), text)
    return " ".join(text.split())


def test_every_node_of_the_graph_has_a_marker_with_its_name(answered):
    fig = figure_json(answered)
    graph_nodes = list(build_graph().get_graph().nodes)
    assert "__start__" in graph_nodes and "__end__" in graph_nodes
    points = node_points(fig)
    assert list(points) == graph_nodes
    for name, point in points.items():
        if name not in ("__start__", "__end__"):
            assert name in point["text"].replace("<br>", "")  # long names on two lines
            assert max(len(line) for line in re.sub(r"</?b>", "", point["text"]).split("<br>")) <= 14
    # no two nodes share a place
    assert len({(p["x"], p["y"]) for p in points.values()}) == len(points)


def test_every_graph_edge_is_drawn_with_an_arrow(answered):
    fig = figure_json(answered)
    edges = [(e.source, e.target) for e in build_graph().get_graph().edges]
    assert len(edges) >= 20
    arrows = {a["name"] for a in fig["layout"]["annotations"] if a.get("showarrow")}
    for src, dst in edges:
        t = trace(fig, f"edge:{src}->{dst}")
        assert t["line"]["color"] == viz.COLOR_EDGE and len(t["x"]) > 2
        assert f"edge:{src}->{dst}" in arrows


def test_path_is_numbered_in_the_runs_order_along_its_edges(rewritten):
    fig = figure_json(rewritten)
    labels = {a["name"]: a for a in fig["layout"]["annotations"] if a.get("name", "").startswith("step:")}
    n = len(rewritten.events)
    assert sorted(labels, key=lambda s: int(s.split(":")[1])) == [f"step:{k}" for k in range(1, n + 1)]
    previous = "__start__"
    for k, node in enumerate(rewritten.path, 1):
        label = labels[f"step:{k}"]
        assert re.sub(r"<[^>]+>", "", label["text"]) == str(k)
        path = trace(fig, f"path:{previous}->{node}")  # the step sits on the edge it took
        assert path["line"]["color"] == viz.COLOR_PATH
        assert (
            min(abs(x - label["x"]) + abs(y - label["y"]) for x, y in zip(path["x"], path["y"], strict=False))
            < 0.05
        )
        assert f"{previous} → {node}" in plain(label["hovertext"])
        previous = node
    trace(fig, f"path:{previous}->__end__")
    # repeated edges stack their labels apart, in step order (top-down on a rightward edge)
    again = [
        labels[f"step:{k}"]
        for k, (a, b) in enumerate(zip(["__start__"] + rewritten.path, rewritten.path, strict=False), 1)
        if (a, b) == ("retrieve", "grade_documents")
    ]
    assert len(again) == 3
    shifts = [a.get("yshift", 0) for a in again]
    assert shifts == sorted(shifts, reverse=True) and len(set(shifts)) == 3


def test_repeated_nodes_are_labelled_by_visits(rewritten):
    points = node_points(figure_json(rewritten))
    assert "×3" in points["retrieve"]["text"]
    assert "×3" in points["grade_documents"]["text"]
    assert "×2" in points["rewrite_query"]["text"]
    assert "×" not in points["generate"]["text"]
    hover = plain(points["retrieve"]["hover"])
    for e in (e for e in rewritten.events if e.node == "retrieve"):
        assert f"Step {e.step} · attempt {e.attempt}" in hover


def expected_color(event, min_relevant: int) -> str:
    """The colour rule of the brief, restated independently of rag.viz."""
    d = event.detail if isinstance(event.detail, dict) else event.detail.model_dump(by_alias=True)
    node = event.node
    if d.get("fallbacks"):  # an engine fallback judgment is never a clean pass
        rest = {k: v for k, v in d.items() if k != "fallbacks"}
        clean = expected_color(event.model_copy(update={"detail": rest}), min_relevant)
        return views.STATUS_COLORS[views.WEAK] if clean == views.STATUS_COLORS[views.OK] else clean
    if node == "retrieve":
        return views.STATUS_COLORS[views.OK] if d["chunks"] else views.STATUS_COLORS[views.FAILED]
    if node == "grade_documents":
        return (
            views.STATUS_COLORS[views.OK]
            if d["evidence"] >= min_relevant
            else views.STATUS_COLORS[views.WEAK]
            if d["evidence"]
            else views.STATUS_COLORS[views.FAILED]
        )
    if node == "web_search":
        return (
            views.STATUS_COLORS[views.OK]
            if d["results"]
            else (
                views.STATUS_COLORS[views.FAILED]
                if d["status"].startswith("failed")
                else views.STATUS_COLORS[views.WEAK]
            )
        )
    if node == "generate":
        return (
            views.STATUS_COLORS[views.FAILED]
            if not d["citations"]
            else views.STATUS_COLORS[views.WEAK]
            if d["weak_evidence"]
            else views.STATUS_COLORS[views.OK]
        )
    if node == "check_grounding":
        return views.STATUS_COLORS[views.OK] if d["grounded"] else views.STATUS_COLORS[views.FAILED]
    if node == "grade_answer":
        return views.STATUS_COLORS[views.OK] if d["useful"] else views.STATUS_COLORS[views.FAILED]
    if node == "route_question":  # issue 13: green when it sends the question to the knowledge base
        return views.STATUS_COLORS[views.OK if d["datasource"] == "kb" else views.VISITED]
    return {
        "reply_directly": views.STATUS_COLORS[views.OK],
        "decompose_query": views.STATUS_COLORS[views.OK],
        "rewrite_query": views.STATUS_COLORS[views.WEAK],
        "finalize": views.STATUS_COLORS[views.OK],
        "finalize_with_caveat": views.STATUS_COLORS[views.WEAK],
        "fallback": views.STATUS_COLORS[views.FAILED],
    }[node]


@pytest.mark.parametrize("which", ["answered", "naive", "rewritten", "abstained"])
def test_nodes_are_coloured_by_the_verdict_of_their_last_visit(which, request):
    run: Run = request.getfixturevalue(which)
    points = node_points(figure_json(run))
    last = {e.node: e for e in run.events}
    for node, point in points.items():
        if node in ("__start__", "__end__"):
            continue
        want = (
            expected_color(last[node], run.options.min_relevant)
            if node in last
            else views.STATUS_COLORS[views.NOT_VISITED]
        )
        assert point["color"] == want, (node, last.get(node))


def test_colours_of_known_endings(naive, rewritten, abstained):
    ok = node_points(figure_json(naive))
    assert [ok[n]["color"] for n in naive.path] == [views.STATUS_COLORS[views.OK]] * 3
    assert ok["grade_documents"]["color"] == views.STATUS_COLORS[views.NOT_VISITED]

    weak = node_points(figure_json(rewritten))
    # never min_relevant relevant, two rewrites, a skipped web search, a caveat: amber
    for node in ("grade_documents", "rewrite_query", "web_search", "finalize_with_caveat"):
        assert weak[node]["color"] == views.STATUS_COLORS[views.WEAK], node
    assert weak["finalize"]["color"] == views.STATUS_COLORS[views.NOT_VISITED]

    bad = node_points(figure_json(abstained))
    assert bad["fallback"]["color"] == views.STATUS_COLORS[views.FAILED]
    # issue 13: the router sends the off-topic question away; nothing is retrieved or graded
    assert bad["route_question"]["color"] == views.STATUS_COLORS[views.VISITED]
    assert bad["grade_documents"]["color"] == views.STATUS_COLORS[views.NOT_VISITED]
    assert bad["generate"]["color"] == views.STATUS_COLORS[views.NOT_VISITED]


def test_hover_shows_each_visit_summary_route_and_detail(rewritten):
    points = node_points(figure_json(rewritten))
    for e in rewritten.events:
        hover = plain(points[e.node]["hover"])
        assert " ".join(e.summary.split()) in hover, e.summary
        if e.route:
            assert f"→ next: {e.route.to}: {' '.join(e.route.why.split())}" in hover
    grade = plain(points["grade_documents"]["hover"])
    assert "verdicts:" in grade and "relevant" in grade
    rewrite = plain(points["rewrite_query"]["hover"])
    first = next(e for e in rewritten.events if e.node == "rewrite_query")
    assert f"strategy: {first.detail.strategy}" in rewrite
    assert "not visited" in plain(points["finalize"]["hover"])


def test_no_title_repeats_the_stop_reason(rewritten):
    # the pages and the export say it once, above the figure (issue 11)
    title = json.loads(viz.flow_figure(rewritten).to_json())["layout"].get("title") or {}
    assert not title.get("text")


def test_a_run_that_errors_marks_the_node_it_stopped_in(papers_kb):
    class BrokenGrounding(LocalEngine):
        def check_grounding(self, answer, chunks):
            raise RuntimeError("grounding engine down")

    engine = BrokenGrounding(lexical_stats(papers_kb))
    ctx = make_context(papers_kb.settings, papers_kb, engine=engine)
    run = run_question(QUESTION, ctx, preset_options("full"))
    assert run.error and "check_grounding" in run.error
    fig = figure_json(run)
    points = node_points(fig)
    assert points["check_grounding"]["color"] == views.STATUS_COLORS[views.FAILED]
    assert "grounding engine down" in plain(points["check_grounding"]["hover"])
    assert trace(fig, "path:generate->check_grounding")["line"]["color"] == viz.COLOR_ERROR
    assert any(a.get("name") == "error" for a in fig["layout"]["annotations"])


def test_an_unknown_node_gets_a_place_instead_of_crashing(answered):
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class S(TypedDict, total=False):
        question: str

    def noop(state: S) -> dict:
        return {}

    g = StateGraph(S)
    for name in ("retrieve", "rerank", "generate", "finalize"):
        g.add_node(name, noop)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "rerank")
    g.add_edge("rerank", "generate")
    g.add_edge("generate", "finalize")
    g.add_edge("finalize", END)
    fig = figure_json(answered, g.compile())
    points = node_points(fig)
    assert "rerank" in points and points["rerank"]["color"] == views.STATUS_COLORS[views.NOT_VISITED]
    assert points["rerank"]["y"] == geometry.EXTRA_ROW_Y
    # the run's own nodes are still shown, even those the given graph lacks
    assert {"grade_documents", "check_grounding"} <= set(points)


def test_verdict_rows_are_every_verdict_of_every_grading(rewritten):
    rows = story.verdict_rows(rewritten)
    gradings = [e for e in rewritten.events if e.node == "grade_documents"]
    # (6, then 10 and 8 after the two rewrites, whose retrievals also bring the named document's best
    # chunks; round 7's weak question)
    assert len(rows) == sum(len(e.detail.verdicts) for e in gradings) == 24
    assert [r["attempt"] for r in rows] == [e.attempt for e in gradings for _ in e.detail.verdicts]
    queries = [e.detail.query for e in rewritten.events if e.node == "retrieve"]
    # the query each chunk was fetched for: the first row of each grading holds its retrieval's query
    firsts = [rows[sum(len(g.detail.verdicts) for g in gradings[:i])] for i in range(len(gradings))]
    assert [r["query"] for r in firsts] == queries
    for r in rows:
        assert set(r) >= {
            "step",
            "attempt",
            "query",
            "source",
            "page",
            "grade",
            "relevant",
            "reasoning",
            "fallback",
        }
        assert r["grade"] in ("high", "medium", "low") and isinstance(r["relevant"], bool)
        assert r["source"].endswith(".pdf") and r["page"] >= 1 and r["reasoning"]
        assert r["fallback"] is None


def test_event_rows_are_one_per_step(rewritten):
    rows = story.event_rows(rewritten)
    assert [r["step"] for r in rows] == list(range(1, len(rewritten.events) + 1))
    assert [r["node"] for r in rows] == rewritten.path
    for r, e in zip(rows, rewritten.events, strict=False):
        assert r["summary"] == story.event_summary(e) and r["duration_ms"] == e.duration_ms
        assert r["attempt"] == e.attempt
        assert (r["next"], r["why"]) == ((e.route.to, e.route.why) if e.route else (None, None))


def test_no_grading_means_no_verdicts(naive):
    assert story.verdict_rows(naive) == []
    assert len(story.event_rows(naive)) == 3
