"""Short forms a whole document defines: "BHE" on page 80 is the "Berkshire Hathaway Energy" of page 3."""

from rag.engines.local import LocalEngine
from rag.graph.evidence import learn_documents
from rag.models import Chunk
from rag.store.bm25 import LexicalStats

DEFINES = ("Berkshire Hathaway Energy Company (“BHE”) is a global energy company with subsidiaries that "
           "generate, transmit, store, distribute and supply energy.")
LATER = "BHE employs approximately 24,000 people in connection with its various regulated utilities."
QUESTION = "How many people does Berkshire Hathaway Energy employ?"


class _FakeKB:
    """A knowledge base that serves whole documents by doc_sha and counts its reads."""

    def __init__(self, docs: dict[str, list[str]], fail: bool = False) -> None:
        self.docs, self.fail, self.reads = docs, fail, 0

    def document_chunks(self, doc_sha):
        self.reads += 1
        if self.fail:
            raise RuntimeError("store is down")
        return [Chunk(id=f"{doc_sha}-{i}", text=t, source="10k.pdf", index=i, doc_sha=doc_sha)
                for i, t in enumerate(self.docs[doc_sha])]


def _engine() -> LocalEngine:
    return LocalEngine(LexicalStats.from_texts([DEFINES, LATER, "Other text about railroads and insurance."]))


def _later(sha: str = "doc-bhe") -> Chunk:
    return Chunk(id=f"{sha}-80", text=LATER, source="10k.pdf", page=80, index=80, doc_sha=sha)


def test_a_chunk_that_uses_the_short_form_is_relevant_once_its_document_is_read():
    engine = _engine()
    before = engine.grade(QUESTION, [_later()])[0]
    assert not before.relevant and "Lacks the question's name" in before.reasoning
    kb = _FakeKB({"doc-bhe": [DEFINES, LATER]})
    learn_documents(kb, engine, [_later()])
    after = engine.grade(QUESTION, [_later()])[0]
    assert after.relevant, after.reasoning
    answer = engine.generate(QUESTION, [_later()])
    assert "24,000" in answer.text
    assert engine.grade_answer(QUESTION, answer).useful


def test_each_document_is_read_once_and_a_store_error_reads_as_no_definitions():
    engine = _engine()
    kb = _FakeKB({"doc-bhe": [DEFINES, LATER]})
    learn_documents(kb, engine, [_later(), _later()])
    learn_documents(kb, engine, [_later()])
    assert kb.reads == 1 and engine.knows_document("doc-bhe")
    broken = _FakeKB({}, fail=True)
    learn_documents(broken, engine, [_later("doc-other")])
    assert engine.knows_document("doc-other")
    assert not engine.grade(QUESTION, [_later("doc-other")])[0].relevant


def test_web_results_and_engines_without_the_method_are_left_alone():
    kb = _FakeKB({"doc-bhe": [DEFINES, LATER]})
    web = Chunk(id="w1", text=LATER, source="https://example.org", origin="web", doc_sha="")
    engine = _engine()
    learn_documents(kb, engine, [web])
    assert kb.reads == 0
    learn_documents(kb, object(), [_later()])
    assert kb.reads == 0


def test_a_definition_in_the_evidence_wins_over_its_documents():
    engine = _engine()
    engine.learn_document("doc-x", ["Berkshire Hathaway Energy Holdings Trust (“BHE”) sells power."])
    holdings = ("berkshir", "hathaway", "energi", "hold", "trust")
    assert engine.aliases(QUESTION, [], ["doc-x"])["bhe"] == holdings
    fresh = _engine()
    fresh.learn_document("doc-x", ["Berkshire Hathaway Energy Holdings Trust (“BHE”) sells power."])
    assert fresh.aliases(QUESTION, [DEFINES], ["doc-x"])["bhe"] == ("berkshir", "hathaway", "energi")
