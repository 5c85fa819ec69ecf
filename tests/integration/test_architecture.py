"""Checks the architecture makes possible.

The recorded route is the path taken, RRF on hand-made rankings, hybrid retrieval inside the graph, the health
checks, and runs saved before details were typed still load (tests/fixtures/runs_v1.json was written by the
round-1 code).
"""

from __future__ import annotations

import ast
import io
import json
import sqlite3
import tokenize
from pathlib import Path

import pytest

from rag import health
from rag.config import PRESETS, Options, Settings, preset_options
from rag.history import RunStore
from rag.models import (
    DETAIL_TYPES,
    TERMINALS,
    Chunk,
    GenerateDetail,
    GradeDetail,
    RetrieveDetail,
    RewriteDetail,
    Run,
)
from rag.run import make_context, run_question
from rag.store.retrieval import reciprocal_rank_fusion, retrieve
from rag.trace import flow, story, views
from rag.trace.export import run_html
from tests.run_fixtures import ABSENT, QUESTION, WEAK_QUESTION

LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "runs_v1.json"
ROOT = Path(__file__).resolve().parents[2]
MAX_LOCAL_RAG_IMPORTS = 10
"""Issue 21: function-local imports of ``rag`` modules (each one a cycle or a slow import hidden)."""


def _sources() -> list[Path]:
    """Every Python file of the library and the app: rag/, app.py, app_pages/."""
    return sorted([*(ROOT / "rag").rglob("*.py"), ROOT / "app.py", *(ROOT / "app_pages").rglob("*.py")])


def local_rag_imports(source: str) -> list[int]:
    """Line numbers of the imports of ``rag`` or ``rag.*`` inside a function body of ``source``."""
    lines = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if any(n == "rag" or n.startswith("rag.") for n in names):
                lines.add(node.lineno)
    return sorted(lines)


def type_ignores(source: str) -> list[int]:
    """Line numbers of the ``type: ignore`` comments in ``source``."""
    return [tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT and "type:" in tok.string
            and tok.string.split("type:", 1)[1].strip().startswith("ignore")]


def assert_route_is_path(run: Run) -> None:
    """Every event's recorded route names the node that ran next; only terminals have none."""
    assert run.error is None, run.error
    for event, after in zip(run.events, run.events[1:], strict=False):
        assert event.route is not None and event.route.to == after.node, (event.node, event.route)
        assert event.route.why
    assert run.events[-1].node in TERMINALS and run.events[-1].route is None


@pytest.fixture(scope="module")
def offline(papers_kb):
    return make_context(papers_kb.settings, papers_kb)


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("question", [QUESTION, WEAK_QUESTION, ABSENT])
def test_recorded_route_is_the_path_taken(offline, preset, question):
    assert_route_is_path(run_question(question, offline, preset_options(preset)))


def test_recorded_route_is_the_path_on_the_rewrite_and_web_paths(papers_kb, tavily):
    settings = papers_kb.settings.with_(tavily_api_key="tvly-test", tavily_api_base_url=tavily.base_url)
    ctx = make_context(settings, papers_kb)
    rewritten = run_question(
        QUESTION, ctx, preset_options("full", top_k=20, min_relevant=20, decomposition=False)
    )
    assert "rewrite_query" in rewritten.path and "web_search" in rewritten.path
    assert_route_is_path(rewritten)
    web = run_question(ABSENT, ctx, preset_options("crag"))
    assert "web_search" in web.path and any(c.origin == "web" for c in web.citations), web.path
    assert_route_is_path(web)


def _chunk(cid: str) -> Chunk:
    return Chunk(id=cid, text=cid, source=f"{cid}.txt", page=1)


def test_reciprocal_rank_fusion_on_hand_made_rankings():
    a, b, c, d = (_chunk(x) for x in "abcd")
    fused = reciprocal_rank_fusion([[a, b, c], [c, a, d]], k=3, rrf_k=60)
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63 (Cormack et al. 2009)
    assert [x.id for x in fused] == ["a", "c", "b"]
    best = 2 / 61
    assert fused[0].score == round((1 / 61 + 1 / 62) / best, 4)
    assert fused[2].score == round((1 / 62) / best, 4)
    assert reciprocal_rank_fusion([[a], [a]], k=5)[0].score == 1.0
    assert reciprocal_rank_fusion([], k=3) == []


def test_hybrid_retrieval_inside_the_graph(offline, papers_kb):
    run = run_question(QUESTION, offline, preset_options("crag", retrieval="hybrid"))
    first = next(e for e in run.events if isinstance(e.detail, RetrieveDetail))
    assert first.detail.mode == "hybrid"
    expected = retrieve(papers_kb, QUESTION, 6, "hybrid")
    assert [c.id for c in first.detail.chunks] == [c.id for c in expected]
    assert all(0 < c.score <= 1 for c in first.detail.chunks)
    # fused from both rankings: scores are RRF scores normalised to [0, 1], not BM25's
    assert [c.score for c in first.detail.chunks] != [
        c.score for c in retrieve(papers_kb, QUESTION, 6, "bm25")
    ]


def test_health_checks_say_yes_and_no(tmp_path, fake, tavily):
    offline = Settings.from_env({}, data_dir=tmp_path)
    ok, line = health.check_store(offline)
    assert ok and "0 knowledge base(s)" in line
    ok, line = health.check_llm(offline)
    assert not ok and "offline engine" in line
    ok, line = health.check_embeddings(offline)
    assert ok and "dimensions" in line
    ok, line = health.check_web(offline)
    assert not ok and "No Tavily key" in line

    online = offline.with_(
        openai_api_key="sk-test",
        openai_base_url=fake.base_url,
        tavily_api_key="tvly-test",
        tavily_api_base_url=tavily.base_url,
    )
    ok, line = health.check_llm(online)
    assert ok and "replied" in line, line
    ok, line = health.check_web(online)
    assert ok and "2 results" in line, line
    tavily.status = 401
    ok, line = health.check_web(online)
    assert not ok and line.startswith("Tavily:"), line
    dead = Settings.from_env(
        {},
        data_dir=tmp_path,
        openai_api_key="sk-test",
        openai_base_url="http://127.0.0.1:9/v1",
        llm_timeout_s=1.0,
        llm_max_retries=0,
    )
    ok, line = health.check_llm(dead)
    assert not ok and "127.0.0.1:9" in line


def test_runs_saved_before_typed_details_still_load(tmp_path):
    raw = json.loads(LEGACY.read_text())
    runs = [Run.model_validate(r) for r in raw]
    for run in runs:
        for event in run.events:
            assert isinstance(event.detail, DETAIL_TYPES[event.node]), event.node
        assert story.steps(run) and story.headline(run)
    rewritten = next(r for r in runs if r.rewrites)
    rewrite = next(e.detail for e in rewritten.events if isinstance(e.detail, RewriteDetail))
    old = next(e["detail"] for e in raw[runs.index(rewritten)]["events"] if e["node"] == "rewrite_query")
    assert rewrite.from_query == old["from"] and rewrite.query == old["query"] and rewrite.strategy
    grading = next(e.detail for e in rewritten.events if isinstance(e.detail, GradeDetail))
    assert grading.verdicts and all(v.grade in ("high", "medium", "low") for v in grading.verdicts)
    answered = next(r for r in runs if r.path[-1] == "finalize")
    assert any(isinstance(e.detail, GenerateDetail) and e.detail.citations for e in answered.events)
    # every view reads them
    assert flow.flow_figure(answered).data and "Retrace run report" in run_html(answered)
    assert views.event_status(answered.events[-1]) == views.OK
    # and through the run history, from a row whose JSON is the old format
    store = RunStore(tmp_path / "runs.sqlite")
    store.save(answered, "alice")
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        db.execute(
            "UPDATE runs SET data = ? WHERE id = ?", (json.dumps(raw[runs.index(answered)]), answered.id)
        )
    loaded = store.get(answered.id)
    assert loaded is not None and [type(e.detail) for e in loaded.events] == [
        type(e.detail) for e in answered.events
    ]
    # the typed run writes out and reads back unchanged
    again = Run.model_validate_json(loaded.model_dump_json())
    assert again.model_dump() == loaded.model_dump()


def test_options_travel_in_the_context_not_the_state(offline):
    seen = []
    run_question(QUESTION, offline, Options(top_k=3, decomposition=False), on_event=seen.append)
    first = next(e for e in seen if isinstance(e.detail, RetrieveDetail))
    assert first.detail.top_k == 3 and len(first.detail.chunks) <= 3


def test_the_counters_see_what_they_count():
    source = (
        "import rag.models\n"
        "def f():\n"
        "    from rag.config import Options\n"
        "    import json\n"
        "    def g():\n"
        "        import rag\n"
        "    x = 1  # type: ignore[assignment]\n"
        "    y = '# type: ignore'\n"
    )
    assert local_rag_imports(source) == [3, 6]
    assert type_ignores(source) == [7]


def test_few_function_local_imports_of_rag_modules():
    found = {f"{p.relative_to(ROOT)}:{line}" for p in _sources() for line in local_rag_imports(p.read_text())}
    assert len(found) <= MAX_LOCAL_RAG_IMPORTS, sorted(found)


def test_no_type_ignore_in_the_library_or_the_app():
    found = [f"{p.relative_to(ROOT)}:{line}" for p in _sources() for line in type_ignores(p.read_text())]
    assert not found, found


def trace_reads(source: str) -> list[int]:
    """Lines that read the trace out of the state: ``state["events"]`` or ``state.get("events", …)``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        if key == "events" and isinstance(node, ast.Call | ast.Subscript):
            target = node.func.value if isinstance(node, ast.Call) else node.value
            if isinstance(target, ast.Name) and target.id == "state":
                found.append(node.lineno)
    return found


def test_the_trace_reader_finds_both_forms():
    assert trace_reads("a = state['events']\nb = state.get('events', [])\nc = out['events']\n") == [1, 2]


def test_no_node_reads_the_trace():
    """The trace is an output: nodes read earlier results from typed state fields.

    Only the recorder, which numbers the steps it writes, looks at it.
    """
    graph = ROOT / "rag" / "graph"
    found = [f"{p.name}:{line}" for p in sorted(graph.glob("*.py")) if p.name != "events.py"
             for line in trace_reads(p.read_text())]
    assert not found, found
