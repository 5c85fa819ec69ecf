"""Round 22 (issue 19): after a seek_answer_type correction, the new chunks that cover the question best lead.

The seek retrieves SEEK_FACTOR x top_k chunks; the evidence grows to twice top_k. Before, the new relevant
chunks went in retrieval order, so a chunk graded "high" ranked past the cap was never read.
"""

from dataclasses import replace

from langgraph.runtime import Runtime

from rag.config import preset_options
from rag.graph.corrections import seek_width
from rag.graph.nodes import grade_documents
from rag.run import make_context
from rag.store.retrieval import retrieve

QUESTION = "Which datasets does Self-RAG evaluate on?"


def _graded(papers_kb, fresh_first: bool):
    ctx = make_context(papers_kb.settings, papers_kb, checkpoints=False)
    ctx = replace(ctx, options=preset_options("full"))
    chunks = retrieve(papers_kb, QUESTION, seek_width(ctx.options.top_k), "bm25")
    state = {"question": QUESTION, "query": QUESTION, "retrieved": chunks, "documents": [],
             "fresh_first": fresh_first, "events": []}
    out = grade_documents(state, Runtime(context=ctx))
    verdicts = {v.id: v for v in out["events"][-1].detail.verdicts}
    score = {i: v.grade for i, v in verdicts.items()}
    relevant = [c.id for c in chunks if verdicts[c.id].relevant]  # each graded "high" or "medium"
    holding = {c.id for c in chunks if ctx.engine.holds_answer(QUESTION, c)}
    return [c.id for c in out["documents"]], relevant, score, ctx.options.top_k, holding


def test_after_a_seek_the_chunks_graded_high_come_first(papers_kb):
    documents, relevant, score, top_k, holding = _graded(papers_kb, fresh_first=True)
    # in retrieval order a "medium" chunk comes before "high" ones (what made the order matter)
    first_medium = next(i for i, c in enumerate(relevant) if score[c] == "medium")
    assert any(score[c] == "high" for c in relevant[first_medium:])
    assert len(documents) == min(2 * top_k, len(relevant))
    # round 24: the chunks that alone hold an answer of the type asked first, then "high", then "medium"
    order = sorted(relevant, key=lambda c: (c not in holding, score[c] != "high"))
    assert documents == order[:2 * top_k]
    assert holding  # the question's list is held by some chunk, so the new key is tested too


def test_without_a_seek_the_evidence_keeps_retrieval_order(papers_kb):
    documents, relevant, _, top_k, _ = _graded(papers_kb, fresh_first=False)
    assert documents == relevant[:top_k]
