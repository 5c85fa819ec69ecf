"""Issue 13: route_question, switch_retriever, the time budget, the checks in one round, the caches.

route_question offline and through the fake LLM server; the time budget of every run; the checks in one
round, the prefetched first hop, the speculative answer and the retrieval cache; and the new node and
strategy in every view (flow, replay, Compare, HTML export).
"""

from __future__ import annotations

import json
import re
import time

import pytest

from rag.config import PRESETS, Options, Settings, preset_options
from rag.engines.llm import GradeCache, LLMEngine
from rag.engines.local import LocalEngine
from rag.graph.prefetch import RETRIEVAL_CACHE
from rag.ingest.pipeline import ingest_files
from rag.models import RetrieveDetail, RewriteDetail, RouteDetail
from rag.run import make_context, run_comparison, run_live, run_question
from rag.store.bm25 import lexical_stats
from rag.store.chroma import open_knowledge_base
from rag.trace import flow, views
from rag.trace.export import run_html
from rag.trace.geometry import MARKERS, node_boxes, node_positions
from rag.trace.replay import replay_figure
from tests.fakes.servers import BlackHole, Reply, default_script, user_text
from tests.integration.test_architecture import assert_route_is_path
from tests.run_fixtures import QUESTION

HELLO = "hello"
CUDA = "RuntimeError: CUDA error: device-side assert triggered"
FIFA = "Who won the 2022 FIFA World Cup?"
GPU_NOTES = """# GPU troubleshooting notes

RuntimeError: CUDA error: device-side assert triggered usually means that an index was out of
range on the GPU: a label larger than the number of classes given to the loss, or a token id
beyond the size of the embedding table. Run again with CUDA_LAUNCH_BLOCKING=1 so that the error
is raised by the kernel that failed, or run the same batch on the CPU for a clear message.

Out of memory errors (CUDA out of memory) are fixed by a smaller batch size or gradient checkpointing.
"""
COOKING = """# Bread

Bread is made of flour, water, salt and yeast. The dough rises for two hours before baking at
230 degrees Celsius for about thirty minutes.
"""


@pytest.fixture(scope="module")
def gpu_kb(tmp_path_factory):
    """A knowledge base of two notes: GPU troubleshooting and bread."""
    root = tmp_path_factory.mktemp("gpu")
    (root / "gpu.md").write_text(GPU_NOTES)
    (root / "bread.md").write_text(COOKING)
    settings = Settings.from_env({}, data_dir=root / "data")
    kb = open_knowledge_base(settings, "gpu")
    assert all(r.ok for r in ingest_files(kb, [root / "gpu.md", root / "bread.md"]))
    kb.settings = settings
    return kb


def _route(run):
    event = run.events[0]
    assert event.node == "route_question" and isinstance(event.detail, RouteDetail)
    return event.detail


# -- offline rules --------------------------------------------------------------------------
def test_hello_gets_a_direct_reply_with_no_retrieval(papers_kb):
    run = run_question(HELLO, make_context(papers_kb.settings, papers_kb), preset_options("full"))
    assert run.path == ["route_question", "reply_directly"]
    assert _route(run).datasource == "none" and "greeting" in _route(run).reasoning
    assert not any(isinstance(e.detail, RetrieveDetail) for e in run.events)
    assert run.answer.startswith("Hello") and run.citations == []
    assert run.stop_reason.startswith("Answered directly, without retrieval")
    assert_route_is_path(run)


def test_an_error_message_goes_to_bm25(gpu_kb):
    ctx = make_context(gpu_kb.settings, gpu_kb)
    run = run_question(CUDA, ctx, preset_options("full", retrieval="dense"))
    route = _route(run)
    assert route.datasource == "kb" and route.retrieval_mode == "bm25", route
    assert "RuntimeError" in route.reasoning
    retrieved = next(e.detail for e in run.events if isinstance(e.detail, RetrieveDetail))
    assert retrieved.mode == "bm25" and retrieved.chunks[0].source == "gpu.md"
    assert run.path[-1] in ("finalize", "finalize_with_caveat") and run.citations
    # a conceptual question keeps the configured default with the offline (lexical) embeddings
    run = run_question("How does bread rise?", ctx, preset_options("full", retrieval="dense"))
    assert _route(run).retrieval_mode == "dense" and "lexical" in _route(run).reasoning


def test_an_out_of_scope_question_goes_to_the_web_or_abstains(papers_kb, tavily):
    alone = run_question(FIFA, make_context(papers_kb.settings, papers_kb), preset_options("full"))
    assert alone.path == ["route_question", "web_search", "fallback"]
    assert _route(alone).datasource == "web" and "FIFA World Cup" in _route(alone).reasoning
    assert alone.stop_reason == ("No answer: the question is outside the knowledge base (it never "
                                 "mentions 'FIFA World Cup'); web search skipped: no web search configured")
    assert alone.answer.startswith("I could not find an answer")

    settings = papers_kb.settings.with_(tavily_api_key="tvly-test", tavily_api_base_url=tavily.base_url)
    web = run_question(FIFA, make_context(settings, papers_kb), preset_options("full"))
    assert web.path[:3] == ["route_question", "web_search", "generate"], web.path
    assert tavily.requests and tavily.requests[0]["query"] == FIFA
    assert not any(isinstance(e.detail, RetrieveDetail) for e in web.events[:2])
    assert_route_is_path(web)
    # in the knowledge base's scope, the question is not sent to the web
    kept = run_question(QUESTION, make_context(settings, papers_kb), preset_options("full"))
    assert _route(kept).datasource == "kb" and "web_search" not in kept.path


def test_routing_is_off_in_naive_and_on_in_full():
    assert PRESETS["naive"][1]["routing"] is False and PRESETS["full"][1]["routing"] is True
    assert preset_options("naive").routing is False


# -- through the fake LLM server ------------------------------------------------------------
def _llm_settings(fake, data_dir, **extra) -> Settings:
    env = {"OPENAI_API_KEY": "sk-test-route", "OPENAI_BASE_URL": fake.base_url,
           "RAG_EMBEDDING_MODEL": "hashing", "RAG_LLM_TIMEOUT_S": "5", "RAG_LLM_MAX_RETRIES": "0"}
    return Settings.from_env({**env, **extra}, data_dir=data_dir)


def route_script(kind: str, body: dict) -> Reply:
    """A model that routes greetings nowhere, error messages to bm25, the World Cup to the web."""
    if kind == "RouteQuery":
        text = user_text(body)
        if "<question>hello</question>" in text:
            reply = {"datasource": "none", "retrieval_mode": "default", "hops": "one",
                     "reasoning": "A greeting."}
        elif "CUDA" in text:
            reply = {"datasource": "kb", "retrieval_mode": "bm25", "hops": "one",
                     "reasoning": "An exact error message."}
        elif "FIFA" in text:
            reply = {"datasource": "web", "retrieval_mode": "default", "hops": "one",
                     "reasoning": "Sports news, not papers."}
        else:
            reply = {"datasource": "kb", "retrieval_mode": "default", "hops": "one",
                     "reasoning": "About the papers."}
        return Reply(json.dumps(reply))
    if kind == "text":
        return Reply("Hello! Ask me about your documents.")
    return default_script(kind, body)


def test_llm_router_sends_each_question_where_it_belongs(papers_kb, gpu_kb, fake, tavily, tmp_path):
    fake.script = route_script
    settings = _llm_settings(fake, tmp_path / "llm")
    hello = run_question(HELLO, make_context(settings, papers_kb), preset_options("full"))
    assert hello.path == ["route_question", "reply_directly"]
    assert hello.answer == "Hello! Ask me about your documents."
    assert not _route(hello).fallbacks and hello.events[0].llm_calls == 1
    assert "RelevanceGrade" not in fake.kinds(), "a greeting was graded"
    # the router's prompt carries the collection's documents, fenced as data
    body = next(r for r in fake.requests if fake._kind(r) == "RouteQuery")
    assert "2005.11401v4_lewis_rag.pdf" in user_text(body)

    cuda = run_question(CUDA, make_context(settings, gpu_kb), preset_options("full", retrieval="dense"))
    assert _route(cuda).retrieval_mode == "bm25" and not _route(cuda).fallbacks
    assert next(e.detail for e in cuda.events if isinstance(e.detail, RetrieveDetail)).mode == "bm25"

    alone = run_question(FIFA, make_context(settings, papers_kb), preset_options("full"))
    assert alone.path == ["route_question", "web_search", "fallback"]
    assert "no web search configured" in alone.stop_reason
    with_web = settings.with_(tavily_api_key="tvly-test", tavily_api_base_url=tavily.base_url)
    web = run_question(FIFA, make_context(with_web, papers_kb), preset_options("full"))
    assert web.path[:2] == ["route_question", "web_search"] and tavily.requests
    assert_route_is_path(web)


def test_llm_router_failure_falls_back_to_the_rules(papers_kb, fake, tmp_path):
    fake.script = lambda kind, body: Reply(status=500) if kind == "RouteQuery" else default_script(kind, body)
    run = run_question(HELLO, make_context(_llm_settings(fake, tmp_path / "llm"), papers_kb),
                       preset_options("full"))
    assert run.path == ["route_question", "reply_directly"]
    assert _route(run).fallbacks == ["router fell back to rules: server error 500"]


# -- the full LLM path: one round for the checks, decomposition overlapped, cache ---------------
def test_full_on_the_llm_overlaps_decomposition_and_runs_the_checks_in_one_round(papers_kb, fake, tmp_path):
    def script(kind, body):
        reply = default_script(kind, body)
        slow = kind in ("GroundingCheck", "AnswerGrade")
        return Reply(delay_s=0.4, content=reply.content) if slow else reply

    fake.script = script
    settings = _llm_settings(fake, tmp_path / "llm")
    engine = LLMEngine(settings, LocalEngine(lexical_stats(papers_kb)), cache=GradeCache(), timeout_s=5,
                       max_retries=0)
    RETRIEVAL_CACHE.clear()
    run = run_question(QUESTION, make_context(settings, papers_kb, engine=engine), preset_options("full"))
    # the router found one hop: decompose_query is skipped (no plan); the first hop was graded in its round
    assert run.path == ["route_question", "retrieve", "grade_documents", "generate",
                        "check_grounding", "grade_answer", "finalize"], run.stop_reason
    assert_route_is_path(run)
    by = {e.node: e for e in run.events}
    assert _route(run).prefetched and _route(run).hops == "one"
    assert fake.kinds().count("Decomposition") == 0 and by["grade_documents"].llm_calls == 0
    # the answer was generated in the same round, from exactly the evidence grading kept
    assert by["generate"].detail.speculative and fake.kinds().count("stream") == 1
    assert all(v.cached for v in by["grade_documents"].detail.verdicts)
    assert fake.kinds().count("RelevanceGrade") == len(by["grade_documents"].detail.verdicts)
    # both checks took 0.4 s and ran together: their bars overlap, one round of wall time
    check, useful = by["check_grounding"], by["grade_answer"]
    # (an overlap, not a time limit: speed is measured in benchmarks; load stretches both bars)
    assert useful.detail.concurrent and useful.started_at < check.started_at + check.duration_ms / 1000
    assert run.llm_calls == sum(e.llm_calls for e in run.events) == len(fake.kinds())

    again = run_question(QUESTION, make_context(settings, papers_kb, engine=engine), preset_options("full"))
    retrieved = next(e for e in again.events if e.node == "retrieve")
    assert retrieved.detail.cached and "cached" in retrieved.summary


# -- switch_retriever -----------------------------------------------------------------------
def test_switch_retriever_retries_with_another_mode_before_rewriting(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    run = run_question(QUESTION, ctx, preset_options("full", top_k=20, min_relevant=20, decomposition=False))
    assert_route_is_path(run)
    rewrites = [e.detail for e in run.events if isinstance(e.detail, RewriteDetail)]
    assert [r.strategy for r in rewrites][:2] == ["switch_retriever", "expand_terms"], rewrites
    switch = rewrites[0]
    assert (switch.from_mode, switch.mode) == ("bm25", "hybrid") and switch.query == switch.from_query
    modes = [e.detail.mode for e in run.events if isinstance(e.detail, RetrieveDetail)]
    assert modes[:2] == ["bm25", "hybrid"] and run.rewrites == 2  # the same budget
    assert "after 2 rewrite(s)" in run.stop_reason or "rewrite budget (2)" in run.stop_reason
    lines = views.detail_lines(next(e for e in run.events if e.node == "rewrite_query"))
    assert "retrieval: bm25 -> hybrid" in lines


# -- every view shows the new node and the strategy -------------------------------------------
def test_views_show_route_question_and_switch_retriever(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    run = run_question(QUESTION, ctx, preset_options("full", top_k=20, min_relevant=20, decomposition=False))
    fig = flow.flow_figure(run)
    nodes = next(t for t in fig.data if t.name == "nodes")
    assert {"route_question", "reply_directly"} <= set(nodes.customdata)
    assert "switch_retriever" in json.dumps(fig.to_plotly_json(), default=str)
    replay = replay_figure(run)
    assert any("route_question" in json.dumps(f.to_plotly_json(), default=str) for f in replay.frames)
    html = run_html(run)
    assert "route_question" in html and "switch_retriever" in html
    comparison = run_comparison(QUESTION, ctx, [("Naive RAG", preset_options("naive")),
                                                ("Full", preset_options("full", top_k=20, min_relevant=20,
                                                                        decomposition=False))])
    assert comparison.runs[1].path[0] == "route_question" and comparison.runs[0].path[0] == "retrieve"


def test_no_two_boxes_of_the_flow_overlap():
    boxes = node_boxes(node_positions(list(views.VIEWS) + list(MARKERS)))
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            p, q = boxes[a], boxes[b]
            gap = 0.1
            assert abs(p.x - q.x) >= p.hw + q.hw + gap or abs(p.y - q.y) >= p.hh + q.hh + gap, (a, b)


# -- the time budget ------------------------------------------------------------------------
@pytest.fixture
def black_hole():
    server = BlackHole().start()
    yield server
    server.stop()


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_ends_within_its_time_budget_when_the_server_never_answers(papers_kb, black_hole,
                                                                                tmp_path, preset):
    # the default per-call timeout (20 s) and retries (2): the run's budget must win
    settings = Settings.from_env({"OPENAI_API_KEY": "sk-test-hole", "OPENAI_BASE_URL": black_hole.base_url,
                                  "RAG_EMBEDDING_MODEL": "hashing", "RAG_RUN_DEADLINE_S": "3"},
                                 data_dir=tmp_path / "data")
    assert settings.llm_timeout_s == 20 and settings.llm_max_retries == 2
    started = time.monotonic()
    run = run_question(QUESTION, make_context(settings, papers_kb), preset_options(preset))
    wall = time.monotonic() - started
    print(f"{preset}: {wall:.2f} s, {run.path}, {run.stop_reason}")
    assert wall <= 3 + 5, wall
    assert run.error is None and "time budget (3 s) spent" in run.stop_reason, run.stop_reason
    assert_route_is_path(run)
    assert black_hole.connections, "the server was never called"


def test_options_deadline_overrides_settings_and_bad_values_are_refused(papers_kb):
    with pytest.raises(ValueError, match="RAG_RUN_DEADLINE_S"):
        Settings.from_env({"RAG_RUN_DEADLINE_S": "0"})
    assert Settings.from_env({}).run_deadline_s == 60
    with pytest.raises(ValueError):
        Options(deadline_s=-1)
    ctx = make_context(papers_kb.settings, papers_kb)
    assert ctx.deadline_s == 60
    run = run_question(QUESTION, ctx, preset_options("full", deadline_s=0.001))
    assert "time budget (0.001 s) spent" in run.stop_reason and run.path[-1] in (
        "finalize_with_caveat", "fallback"), run.path


def test_a_timeout_reason_states_the_real_wait_with_retries(papers_kb, black_hole):
    settings = Settings.from_env({"OPENAI_API_KEY": "sk-test-hole", "OPENAI_BASE_URL": black_hole.base_url})
    engine = LLMEngine(settings, LocalEngine(lexical_stats(papers_kb)), cache=GradeCache(),
                       timeout_s=0.5, max_retries=2)
    started = time.monotonic()
    grade = engine.grade("what is RAG?", [next(papers_kb.iter_chunks())])[0]
    waited = time.monotonic() - started
    m = re.fullmatch(r"grader fell back to lexical: timeout after ([\d.]+) s \(3 attempts of 0.5 s\)",
                     grade.meta.fallback or "")
    assert m, grade.meta.fallback
    assert abs(float(m.group(1)) - waited) < 0.5 and waited >= 3 * 0.5 + 0.5 + 1.0 - 0.1


# -- the chat's live clock ------------------------------------------------------------------
def test_run_live_yields_the_elapsed_time_events_and_tokens_then_the_run(papers_kb, fake, tmp_path):
    def slow(kind, body):
        reply = default_script(kind, body)
        return Reply(delay_s=0.3, content=reply.content) if kind == "RouteQuery" else reply

    fake.script = slow
    ctx = make_context(_llm_settings(fake, tmp_path / "llm"), papers_kb)
    items = list(run_live(QUESTION, ctx, preset_options("full"), tick_s=0.05))
    kinds = [k for k, _ in items]
    assert kinds[-1] == "run" and kinds.count("run") == 1
    ticks = [v for k, v in items if k == "tick"]
    assert len(ticks) >= 3 and ticks == sorted(ticks) and ticks[-1] >= 0.3
    # the clock ticks while route_question waits 0.3 s for the model: before the first event, however
    # late a loaded machine delivers the first tick
    assert "tick" in kinds[:kinds.index("event")]
    run = items[-1][1]
    assert [e.node for k, e in items if k == "event"] == run.path
    assert "".join(t for k, t in items if k == "token").strip() == run.answer
    with pytest.raises(ValueError, match="empty"):
        list(run_live("  ", ctx))


# -- bench latency ------------------------------------------------------------------------------
def test_bench_latency_reports_each_preset_as_a_ratio_to_naive(tmp_path):
    from rag.bench.latency import format_latency, run_latency

    results = run_latency(delay_ms=50, questions=1, repeats=1, presets=("full", "naive"),
                          data_dir=tmp_path / "bench")
    assert [r.preset for r in results] == ["naive", "full"]
    naive, full = results
    assert naive.wall_p50_vs_naive == 1.0 and naive.llm_calls_mean == 1
    assert full.llm_calls_mean > naive.llm_calls_mean and full.wall_ms_p50 > naive.wall_ms_p50
    assert full.paths and full.paths[0].startswith("route_question")
    table = format_latency(results, 50)
    assert "full" in table and "Full p50" in table and "x naive" in table
    with pytest.raises(ValueError, match="unknown preset"):
        run_latency(presets=("fast",), data_dir=tmp_path / "bench")


def test_cli_ask_takes_a_deadline_and_turns_routing_off(papers_kb, cli):
    data = str(papers_kb.settings.data_dir)
    out = cli("ask", QUESTION, "--deadline", "0.001", "--json", "--data-dir", data,
              "--collection", papers_kb.name)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert "time budget (0.001 s) spent" in result["stop_reason"]
    off = cli("ask", HELLO, "--no-routing", "--json", "--data-dir", data, "--collection", papers_kb.name)
    assert off.returncode == 0, off.stderr
    assert "route_question" not in json.loads(off.stdout)["path"]
