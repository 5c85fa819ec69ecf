"""Every branch of the routing table (DESIGN.md), the loop guard, and router purity."""

from __future__ import annotations

import copy
from itertools import product

import pytest

from rag.config import PRESETS, Options, preset_options
from rag.graph import routing
from rag.models import Chunk, Citation, Decision, Turn


def chunks(n: int, origin: str = "kb") -> list[Chunk]:
    return [Chunk(id=f"c{i}", text=f"text {i}", source="f.pdf", page=1, origin=origin) for i in range(n)]


CITED = [Citation(n=1, chunk_id="c0", source="f.pdf", page=1)]


def decide(decider, s):
    """The decider's Decision for state ``s`` under ``s["options"]``."""
    return decider(s, s["options"])


def route(decider, s) -> str:
    """The next node the decider picks."""
    return decide(decider, s).to


def state(**kw):
    base = {"question": "q", "options": Options(), "rewrites": 0, "web_searches": 0, "retrieved": chunks(6)}
    base.update(kw)
    return base


# -- after retrieve -------------------------------------------------------------------------
def test_retrieve_goes_to_grading_when_on():
    assert route(routing.decide_after_retrieve, state(retrieved=chunks(3))) == "grade_documents"


def test_retrieve_without_grading_generates_when_chunks_came_back():
    s = state(options=preset_options("naive"), retrieved=chunks(3))
    assert route(routing.decide_after_retrieve, s) == "generate"


def test_retrieve_without_grading_falls_back_on_nothing():
    s = state(options=preset_options("naive"), retrieved=[])
    assert route(routing.decide_after_retrieve, s) == "fallback"


# -- after grade_documents ------------------------------------------------------------------
def test_enough_relevant_generates():
    d = decide(routing.decide_after_grading, state(documents=chunks(2)))
    assert d.to == "generate" and "2 relevant" in d.why


def test_weak_evidence_rewrites_first():
    # routing off: the correction rewrites the query (with routing on it first switches mode, below)
    d = decide(routing.decide_after_grading, state(options=Options(routing=False), documents=chunks(1)))
    assert d.to == "rewrite_query" and "rewrite 1 of 2" in d.why


def test_weak_evidence_with_routing_switches_retriever_once_before_rewriting():
    d = decide(routing.decide_after_grading, state(documents=chunks(1)))
    assert d.to == "rewrite_query" and "switch to hybrid retrieval" in d.why
    assert routing.switch_to(state(documents=chunks(1)), Options()) == "hybrid"
    assert routing.switch_to(state(retrieval_mode="hybrid"), Options()) == "bm25"
    # once, only before any rewrite, never after a failed check, never with routing off
    assert routing.switch_to(state(mode_switched=True), Options()) is None
    assert routing.switch_to(state(rewrites=1), Options()) is None
    assert routing.switch_to(state(grounded=False), Options()) is None
    assert routing.switch_to(state(), Options(routing=False)) is None
    d = decide(routing.decide_after_grading, state(documents=chunks(1), rewrites=1, mode_switched=True))
    assert d.to == "rewrite_query" and "rewrite 2 of 2" in d.why
    after = decide(routing.decide_after_rewrite,
                   state(last_strategy="switch_retriever", retrieval_mode="hybrid"))
    assert after == Decision("retrieve", "retrieve again with hybrid")


# -- route_question and the time budget -------------------------------------------------------
def test_route_decisions():
    assert route(routing.decide_after_route, state(datasource="none")) == "reply_directly"
    assert route(routing.decide_after_route, state(datasource="web", web_available=True)) == "web_search"
    d = decide(routing.decide_after_route, state(datasource="web", web_available=False))
    assert d.to == "web_search" and "none is configured" in d.why  # web_search records the skip
    d = decide(routing.decide_after_route, state(datasource="web", web_available=True,
                                                 options=Options(web_fallback=False)))
    assert d.to == "fallback" and "web search is off" in d.why
    assert route(routing.decide_after_route, state(datasource="kb")) == "decompose_query"
    d = decide(routing.decide_after_route, state(datasource="kb", one_hop=True))
    assert d.to == "retrieve" and "one-hop" in d.why
    s = state(datasource="kb", options=Options(decomposition=False), retrieval_mode="bm25")
    assert decide(routing.decide_after_route, s) == Decision("retrieve", "knowledge base, bm25 retrieval")
    assert routing.decide_start(Options()).to == "route_question"
    assert routing.decide_start(preset_options("naive")).to == "retrieve"


def test_contextualize_comes_before_route_question():
    turns = ["an earlier turn"]
    assert routing.decide_start(Options(), turns).to == "contextualize_question"
    assert route(routing.decide_after_contextualize, state()) == "route_question"
    no_routing = state(options=Options(routing=False))
    assert route(routing.decide_after_contextualize, no_routing) == "decompose_query"


def test_out_of_time_keeps_the_answer_or_answers_fast_or_abstains():
    o = Options()
    d = routing.decide_out_of_time(state(answer="x [1]", citations=CITED), o, 60)
    assert d.to == "finalize_with_caveat" and d.why.startswith("time budget (60 s) spent")
    assert routing.decide_out_of_time(state(generations=0), o, 60).to == "generate"
    no_retrieval = {"question": "q", "datasource": "kb"}
    assert routing.decide_out_of_time(no_retrieval, o, 3).to == "retrieve"
    assert routing.decide_out_of_time({"question": "q", "datasource": "web"}, o, 3).to == "fallback"
    assert routing.decide_out_of_time(state(generations=1, citations=[]), o, 3).to == "fallback"


def test_rewrite_budget_spent_then_web():
    s = state(documents=chunks(1), rewrites=2)
    assert route(routing.decide_after_grading, s) == "web_search"


def test_rewriting_off_goes_to_web():
    s = state(options=Options(rewriting=False), documents=[])
    assert route(routing.decide_after_grading, s) == "web_search"


def test_after_web_with_one_relevant_generates_with_caveat():
    s = state(documents=chunks(1), rewrites=2, web_searches=1)
    d = decide(routing.decide_after_grading, s)
    assert d.to == "generate" and "caveat" in d.why


def test_nothing_relevant_and_no_correction_left_falls_back():
    s = state(documents=[], rewrites=2, web_searches=1)
    assert route(routing.decide_after_grading, s) == "fallback"


def test_empty_index_skips_rewrites():
    s = state(retrieved=[], documents=[])
    d = decide(routing.decide_after_grading, s)
    assert d.to == "web_search" and "no chunks" in d.why
    assert (
        route(routing.decide_after_grading, state(retrieved=[], documents=[], web_searches=1)) == "fallback"
    )


def test_zero_rewrite_budget_skips_rewrite():
    s = state(options=Options(max_rewrites=0, web_fallback=False), documents=[])
    assert route(routing.decide_after_grading, s) == "fallback"


def test_a_rewrite_that_retrieves_the_same_chunks_stops_rewriting():
    # issue 10: a rewrite that brings back the same chunks again earns nothing more
    s = state(documents=[], rewrites=1, repeated_retrieval=True)
    d = decide(routing.decide_after_grading, s)
    assert d.to == "web_search" and "same chunks again" in d.why
    s = state(documents=[], rewrites=1, repeated_retrieval=True, web_searches=1)
    d = decide(routing.decide_after_grading, s)
    assert d.to == "fallback" and "same chunks again" in d.why
    s = state(documents=chunks(1), rewrites=1, repeated_retrieval=True, web_searches=1)
    assert route(routing.decide_after_grading, s) == "generate"
    # the answer checks do not send the run back to rewriting either
    stuck = state(
        documents=chunks(2),
        citations=CITED,
        grounded=False,
        ungrounded_claims=["x"],
        rewrites=1,
        repeated_retrieval=True,
    )
    assert route(routing.decide_after_grounding, stuck) == "finalize_with_caveat"
    stuck = state(
        documents=chunks(2),
        citations=CITED,
        useful=False,
        rewrites=1,
        web_searches=1,
        repeated_retrieval=True,
    )
    assert route(routing.decide_after_answer_check, stuck) == "finalize_with_caveat"


def test_the_same_evidence_is_not_answered_again():
    # issue 10: an answer identical to an earlier one is not generated again
    same = [c.id for c in chunks(2)]
    d = decide(routing.decide_after_grading, state(documents=chunks(2), answered_with=same))
    assert d.to == "finalize_with_caveat" and d.why.startswith(routing.SAME_EVIDENCE)
    assert route(routing.decide_after_grading, state(documents=chunks(3), answered_with=same)) == "generate"
    d = decide(routing.decide_after_web_search, state(documents=chunks(2), answered_with=same))
    assert d.to == "finalize_with_caveat" and "web search added nothing" in d.why
    assert (
        route(
            routing.decide_after_web_search,
            state(documents=chunks(2) + chunks(1, "web")[:0] + [chunks(3)[2]], answered_with=same),
        )
        == "generate"
    )


# -- after rewrite_query / web_search -------------------------------------------------------
def test_rewrite_always_retrieves():
    assert decide(routing.decide_after_rewrite, state()).to == "retrieve"
    assert decide(routing.decide_after_decompose, state(sub_queries=["a", "b"])).to == "retrieve"


def test_web_with_evidence_generates_and_without_falls_back():
    assert route(routing.decide_after_web_search, state(documents=chunks(1, "web"))) == "generate"
    assert route(routing.decide_after_web_search, state(documents=[])) == "fallback"


# -- after generate and the checks ----------------------------------------------------------
def test_generate_goes_through_each_check_that_is_on():
    s = state(citations=CITED)
    assert route(routing.decide_after_generate, s) == "check_grounding"
    s = state(options=Options(grounding_check=False), citations=CITED)
    assert route(routing.decide_after_generate, s) == "grade_answer"
    s = state(options=Options(grounding_check=False, answer_check=False), citations=CITED)
    assert route(routing.decide_after_generate, s) == "finalize"


def test_generate_with_weak_evidence_and_no_checks_finalizes_with_caveat():
    s = state(
        options=Options(grounding_check=False, answer_check=False),
        citations=CITED,
        weak_evidence=True,
        documents=chunks(1),
    )
    assert route(routing.decide_after_generate, s) == "finalize_with_caveat"


def test_uncited_answer_falls_back():
    assert route(routing.decide_after_generate, state(citations=[])) == "fallback"


def test_grounded_goes_to_answer_check_or_finalize():
    assert route(routing.decide_after_grounding, state(grounded=True)) == "grade_answer"
    s = state(options=Options(answer_check=False), grounded=True)
    assert route(routing.decide_after_grounding, s) == "finalize"


def test_ungrounded_rewrites_while_budget_left_then_caveat():
    s = state(grounded=False, ungrounded_claims=["x"], rewrites=1)
    assert route(routing.decide_after_grounding, s) == "rewrite_query"
    s = state(grounded=False, ungrounded_claims=["x"], rewrites=2)
    d = decide(routing.decide_after_grounding, s)
    assert d.to == "finalize_with_caveat" and "budget spent" in d.why


def test_not_useful_tries_rewrite_then_web_then_caveat():
    # the knowledge base first: a rewrite (which searches the document the question names), then the web
    assert route(routing.decide_after_answer_check, state(useful=False)) == "rewrite_query"
    assert route(routing.decide_after_answer_check, state(useful=False, rewrites=2)) == "web_search"
    s = state(useful=False, web_searches=1, rewrites=2)
    assert route(routing.decide_after_answer_check, s) == "finalize_with_caveat"


def test_useful_finalizes():
    assert route(routing.decide_after_answer_check, state(useful=True)) == "finalize"
    s = state(useful=True, weak_evidence=True, documents=chunks(1))
    assert route(routing.decide_after_answer_check, s) == "finalize_with_caveat"


DECIDERS = [getattr(routing, name) for name in dir(routing) if name.startswith("decide_after_")]


@pytest.mark.parametrize("decider", DECIDERS, ids=lambda f: f.__name__)
def test_routers_never_mutate_state(decider):
    s = state(
        documents=chunks(1),
        citations=CITED,
        grounded=False,
        useful=False,
        ungrounded_claims=["x"],
        retrieved=chunks(2),
    )
    before = copy.deepcopy(s)
    decide(decider, s)
    assert s == before


DECIDERS = {
    "contextualize_question": routing.decide_after_contextualize,
    "route_question": routing.decide_after_route,
    "decompose_query": routing.decide_after_decompose,
    "retrieve": routing.decide_after_retrieve,
    "grade_documents": routing.decide_after_grading,
    "rewrite_query": routing.decide_after_rewrite,
    "web_search": routing.decide_after_web_search,
    "generate": routing.decide_after_generate,
    "check_grounding": routing.decide_after_grounding,
    "grade_answer": routing.decide_after_answer_check,
}
"""Node -> the decider it calls (rag/graph/nodes.py, checks.py, route.py)."""

OPTION_SETS = [*(preset_options(p) for p in PRESETS), Options(max_rewrites=0),
               Options(routing=False, rewriting=False, grounding_check=False),
               Options(web_fallback=False, answer_check=False)]


def _states():
    """Many states a decider may meet: every combination of the fields the deciders read."""
    same = [c.id for c in chunks(3)]
    for docs, retrieved, rewrites, webs, grounded, useful, cited, source, answered, repeated in product(
            [[], chunks(1), chunks(3)], [None, [], chunks(6)], [0, 2], [0, 1], [None, True, False],
            [None, True, False], [[], CITED], ["kb", "web", "none"], [None, same], [False, True]):
        s = {"question": "q", "documents": docs, "rewrites": rewrites, "web_searches": webs,
             "grounded": grounded, "useful": useful, "citations": cited, "datasource": source,
             "answered_with": answered, "repeated_retrieval": repeated, "ungrounded_claims": ["x"],
             "web_available": webs == 0, "answer": "a [1]" if cited else "", "generations": len(cited)}
        if retrieved is not None:
            s["retrieved"] = retrieved
        yield s


ANSWERED_NODES = ("generate", "check_grounding", "grade_answer")
"""Nodes that run only once an answer was generated."""


def _reachable(node: str, s: dict) -> bool:
    """Whether ``s`` can hold after ``node`` ran (retrieval before grading, citations before checks)."""
    if node in ("contextualize_question", "route_question"):
        return "retrieved" not in s and not s["citations"] and not s["documents"]
    searched = "retrieved" in s or s["datasource"] == "web"
    return searched and (bool(s["citations"]) or node not in ("check_grounding", "grade_answer"))


def test_every_decision_is_a_declared_edge():
    """What each decider returns, over every combination of the state it reads, is an edge of its node."""
    from rag.models import NODE_ORDER, TERMINALS

    assert set(TERMINALS) == {"finalize", "finalize_with_caveat", "fallback", "reply_directly"}
    assert set(routing.TARGETS) | set(routing.FIXED) == set(NODE_ORDER) - set(TERMINALS) == set(DECIDERS)
    seen: dict[str, set[str]] = {node: set() for node in DECIDERS}
    for s in _states():
        for o in OPTION_SETS:
            for node, decide in DECIDERS.items():
                d = decide(s, o)
                allowed = routing.TARGETS.get(node) or (routing.FIXED[node],)
                assert d.to in allowed, (node, d, s, o)
                assert d.why, (node, d)
                seen[node].add(d.to)
                if node in routing.TARGETS and _reachable(node, s):
                    after = {**s, "generations": 1} if node in ANSWERED_NODES else s
                    late = routing.decide_out_of_time(after, o, 60)  # what replaces d once time is up
                    assert late.to in allowed, (node, late, s, o)
                    seen[node].add(late.to)
            for history in ([], [Turn(question="q")]):
                assert routing.decide_start(o, history).to in routing.START_TARGETS
    # the states reach every declared edge, so the check above covers each one
    for node, targets in routing.TARGETS.items():
        assert seen[node] == set(targets), node


def _is_walk(path: list[str]) -> bool:
    """Every step of ``path`` follows a declared edge (the start's, a decider's or a fixed one)."""
    if path[0] not in routing.START_TARGETS:
        return False
    return all(b in (routing.TARGETS.get(a) or (routing.FIXED.get(a),))
               for a, b in zip(path, path[1:], strict=False))


def test_recursion_limit_covers_the_longest_budgeted_path():
    # Written out by hand: the longest run with every switch on. Each correction is a rewrite whose
    # answer fails its last check; the web search comes once; the run ends with finalize.
    head = ["contextualize_question", "route_question", "decompose_query", "retrieve", "grade_documents",
            "generate", "check_grounding", "grade_answer"]
    rewrite = ["rewrite_query", "retrieve", "grade_documents", "generate", "check_grounding", "grade_answer"]
    web = ["web_search", "generate", "check_grounding", "grade_answer"]
    for budget, expected_steps in [(0, 13), (1, 19), (2, 25), (5, 43)]:
        longest = head + rewrite * budget + web + ["finalize"]
        assert _is_walk(longest) and len(longest) == expected_steps
        assert Options(max_rewrites=budget).recursion_limit() > expected_steps
