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
    # round 16: the name before "et al." is the first author's, over "RAG" in Self-RAG's title
    assert named_document(papers_kb, "In the Lewis et al. RAG paper, which decoding is used?") == \
        _sha(papers_kb, LEWIS)
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



def test_an_answer_quoting_another_document_than_the_one_named_is_turned_down(papers_kb):
    # round 16: "In the Self-RAG paper, which GPUs …" answered from the RAG paper's GPUs is no answer
    from rag.graph.checks import _quotes_another_document
    from rag.models import Citation
    ctx = make_context(papers_kb.settings, papers_kb, checkpoints=False)
    lewis = next(c for c in papers_kb.query("V100 GPUs distribute training", 20) if c.source == LEWIS)
    mine = next(c for c in papers_kb.query("Quadro RTX 6000 GPUs inference", 20) if c.source == SELF_RAG)

    def state(question, chunk, origin="kb"):
        cited = Citation(n=1, chunk_id=chunk.id, source=chunk.source, page=chunk.page, origin=origin,
                         text=chunk.text)
        return {"question": question, "citations": [cited]}

    question = ("In the Self-RAG paper, which GPUs did the authors use to run inference with their trained "
                "models?")
    assert _quotes_another_document(state(question, lewis), ctx) == LEWIS
    assert _quotes_another_document(state(question, mine), ctx) is None
    # a document the name fits as well is no other: "the Lewis et al. RAG paper" and Self-RAG's "RAG"
    assert _quotes_another_document(state("In the Lewis et al. RAG paper, which GPUs were used?", mine),
                                    ctx) is None
    # a question naming no document, or an answer from the web, is not judged by this
    assert _quotes_another_document(state("Which GPUs were used for inference?", lewis), ctx) is None
    assert _quotes_another_document(state(question, lewis, origin="web"), ctx) is None
    # and Full, asked that question, answers from the Self-RAG paper
    run = run_question(question, ctx, preset_options("full"))
    assert run.error is None and run.citations[0].source == SELF_RAG and "Quadro RTX 6000" in run.answer
