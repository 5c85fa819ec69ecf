"""A correction searches inside the document the question names (rag.graph.scope), on the two real papers."""

from __future__ import annotations

from rag.config import preset_options
from rag.engines.base import AnswerGrade
from rag.engines.local import LocalEngine
from rag.graph.scope import named_document, scoped_first, within_document
from rag.run import make_context, run_question
from rag.store.bm25 import lexical_stats

LEWIS = "2005.11401v4_lewis_rag.pdf"
SELF_RAG = "2310.11511v1_self_rag.pdf"
GPUS = "On which GPUs did Lewis et al. distribute training?"


def _sha(kb, source: str) -> str:
    return next(d.doc_sha for d in kb.documents() if d.source == source)


def test_the_named_document_is_the_one_whose_head_holds_the_question_s_names(papers_kb):
    assert named_document(papers_kb, GPUS) == _sha(papers_kb, LEWIS)
    assert named_document(papers_kb, "Which critic model does Self-RAG train?") == _sha(papers_kb, SELF_RAG)
    # no name, or a name no head holds: no document is singled out
    assert named_document(papers_kb, "Which GPUs were used for training?") is None
    assert named_document(papers_kb, "How many travel centers does Pilot operate?") is None


def test_within_document_returns_only_that_document_s_chunks_best_first(papers_kb):
    sha = _sha(papers_kb, LEWIS)
    found = within_document(papers_kb, "GPUs distribute training", sha, 6)
    assert found and len(found) <= 6
    assert {c.doc_sha for c in found} == {sha}
    assert any("V100" in c.text for c in found[:3])
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_scoped_first_puts_the_named_document_first_and_keeps_the_rest(papers_kb):
    sha = _sha(papers_kb, SELF_RAG)
    other = [c for c in papers_kb.query("GPUs training", 12) if c.doc_sha != sha][:3]
    out, source = scoped_first(papers_kb, "Which GPUs did Self-RAG use?", "GPUs training", other, 4)
    assert source == SELF_RAG
    assert [c.doc_sha for c in out[:4]] == [sha] * 4
    assert [c.id for c in out[4:]] == [c.id for c in other]
    # a question naming no document leaves the results as they were
    same, none = scoped_first(papers_kb, "Which GPUs were used?", "GPUs training", other, 4)
    assert (same, none) == (other, None)


class RejectsFirstAnswer(LocalEngine):
    """The offline engine, but the first answer is turned down: Full must correct it."""

    graded = 0

    def grade_answer(self, question, answer):
        self.graded += 1
        if self.graded == 1:
            return AnswerGrade(useful=False, reasoning="turned down once")
        return super().grade_answer(question, answer)


def test_full_s_correction_searches_the_named_document(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb, engine=RejectsFirstAnswer(lexical_stats(papers_kb)),
                       checkpoints=False)
    run = run_question(GPUS, ctx, preset_options("full"))
    assert run.error is None
    retrievals = [e for e in run.events if e.node == "retrieve"]
    assert len(retrievals) >= 2
    assert "searched within" not in retrievals[0].summary  # the first retrieval is corpus-wide
    assert f"searched within {LEWIS}" in retrievals[1].summary
    assert retrievals[1].detail.chunks[0].source == LEWIS
    assert "V100" in run.answer
