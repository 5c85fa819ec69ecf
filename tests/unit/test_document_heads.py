"""Document heads: a chunk past its document's first knows the title and authors of its document."""

import pytest

from rag.engines.local import LocalEngine
from rag.graph import evidence
from rag.graph.evidence import HEAD_CHARS, head_of, with_heads
from rag.models import Chunk
from rag.store.bm25 import LexicalStats

RETRO_HEAD = "InstructRetro: Instruction Tuning post Retrieval-Augmented Pretraining Boxin Wang"
DATABASE = "our retrieval database comprises 19 billion chunks, with each chunk containing 64 tokens"


class _FakeKB:
    """A knowledge base that serves documents' first chunks by id and counts its calls."""

    def __init__(self, firsts: dict[str, Chunk], fail: bool = False) -> None:
        self.firsts = firsts
        self.fail = fail
        self.calls: list[list[str]] = []

    def get_chunks(self, ids):
        self.calls.append(list(ids))
        if self.fail:
            raise RuntimeError("store is down")
        return [self.firsts[i] for i in ids if i in self.firsts]


@pytest.fixture(autouse=True)
def _fresh_heads():
    """Forget this module's documents in the per-process head cache, before and after each test."""
    def forget():
        for sha in [k for k in evidence._HEADS if k.startswith("h16-heads-doc-")]:
            evidence._HEADS.pop(sha, None)
    forget()
    yield
    forget()


def _chunk(sha: str, index: int, text: str = "a passage of the body", **kw) -> Chunk:
    return Chunk(id=f"{sha[:16]}-{index:05d}", text=text, source=f"{sha}.pdf", page=index + 1, index=index,
                 doc_sha=sha, **kw)


def test_head_of_ends_before_the_abstract():
    first = ("InstructRetro: Instruction Tuning post Retrieval-Augmented Pretraining\n"
             "Boxin Wang   Wei Ping\nAbstract\nPretraining auto-regressive large language models")
    assert head_of(first) == ("InstructRetro: Instruction Tuning post Retrieval-Augmented Pretraining "
                              "Boxin Wang Wei Ping")


def test_head_of_a_filing_cover_keeps_up_to_head_chars():
    cover = "UNITED STATES SECURITIES AND EXCHANGE COMMISSION Washington, D.C. 20549 FORM 10-K " + "x " * 400
    head = head_of(cover)
    assert head.startswith("UNITED STATES SECURITIES AND EXCHANGE COMMISSION")
    assert len(head) <= HEAD_CHARS
    assert len(head) >= HEAD_CHARS - 10  # whitespace squeezed, nothing else cut


def test_with_heads_reads_each_documents_first_chunk_once():
    a, b = "h16-heads-doc-aaaaaaaaaaaa", "h16-heads-doc-bbbbbbbbbbbb"
    kb = _FakeKB({
        f"{a[:16]}-00000": _chunk(a, 0, "Paper A: A Title\nAda Author\nAbstract\nWe study things."),
        f"{b[:16]}-00000": _chunk(b, 0, "Paper B: Another Title\nBob Writer\nAbstract\nWe study more."),
    })
    chunks = [_chunk(a, 3), _chunk(b, 5), _chunk(a, 4)]
    out = with_heads(kb, chunks)
    assert [c.head for c in out] == ["Paper A: A Title Ada Author", "Paper B: Another Title Bob Writer",
                                     "Paper A: A Title Ada Author"]
    assert [c.id for c in out] == [c.id for c in chunks]
    assert all(not c.head for c in chunks)  # copies, the inputs untouched
    again = with_heads(kb, [_chunk(b, 7), _chunk(a, 9)])
    assert [c.head for c in again] == ["Paper B: Another Title Bob Writer", "Paper A: A Title Ada Author"]
    assert len(kb.calls) == 1  # the second call read the per-process cache
    assert sorted(kb.calls[0]) == sorted([f"{a[:16]}-00000", f"{b[:16]}-00000"])


def test_first_chunks_and_web_results_keep_no_head():
    sha = "h16-heads-doc-cccccccccccc"
    kb = _FakeKB({f"{sha[:16]}-00000": _chunk(sha, 0, "Paper C\nCarl Name\nAbstract\nText.")})
    first = _chunk(sha, 0, "Paper C\nCarl Name\nAbstract\nText.")
    web = Chunk(id="https://example.org/x", text="a web page", source="https://example.org/x", index=2,
                doc_sha=sha, origin="web")
    out = with_heads(kb, [first, web])
    assert out == [first, web]
    assert kb.calls == []


def test_a_store_error_leaves_the_heads_empty():
    sha = "h16-heads-doc-dddddddddddd"
    kb = _FakeKB({}, fail=True)
    out = with_heads(kb, [_chunk(sha, 2)])
    assert len(kb.calls) == 1
    assert [c.head for c in out] == [""]


def test_a_chunk_with_a_head_is_not_read_again():
    sha = "h16-heads-doc-eeeeeeeeeeee"
    kb = _FakeKB({f"{sha[:16]}-00000": _chunk(sha, 0, "Another Head")})
    given = _chunk(sha, 2, head="Kept Head")
    assert with_heads(kb, [given]) == [given]
    assert kb.calls == []


# -- the offline engine reads a chunk with its head ------------------------------------------------------


def _engine() -> LocalEngine:
    return LocalEngine(LexicalStats.from_texts([
        DATABASE, RETRO_HEAD, "Self-RAG trains a critic model", "Berkshire Hathaway Energy owns pipelines",
        "RAG models combine a retriever and a generator", "the database holds documents",
        "Berkshire annual report", "tokens per chunk"]))


def _headed(head: str, text: str = DATABASE, cid: str = "h16-retro-00003") -> Chunk:
    return Chunk(id=cid, text=text, source="instructretro.pdf", page=4, index=3, doc_sha="h16-retro-doc",
                 head=head)


def test_head_names_credits_a_question_name_the_head_writes_whole():
    engine = _engine()
    q = "How many chunks does the InstructRetro paper's retrieval database hold?"
    assert engine.head_names(q, _headed(RETRO_HEAD)) == {"instructretro"}
    assert engine.head_names(q, _headed("")) == frozenset()
    # "Retro" is part of the word "InstructRetro", not a name the head writes
    assert engine.head_names("How large is the Retro database?", _headed(RETRO_HEAD)) == frozenset()


def test_head_names_does_not_credit_a_name_inside_a_longer_one():
    engine = _engine()
    self_rag = _headed("SELF-RAG: Learning to Retrieve, Generate, and Critique through Self-Reflection")
    assert engine.head_names("Which retriever does RAG use?", self_rag) == frozenset()
    assert engine.head_names("Which critic does Self-RAG train?", self_rag) == {"self", "rag"}  # any case
    brk = _headed("UNITED STATES SECURITIES AND EXCHANGE COMMISSION FORM 10-K BERKSHIRE HATHAWAY INC.")
    assert engine.head_names("How many miles of pipeline does Berkshire Hathaway Energy operate?",
                             brk) == frozenset()
    assert engine.head_names("Where is Berkshire Hathaway headquartered?", brk) == {"berkshir", "hathaway"}


def test_grade_reads_the_name_a_chunk_leaves_to_its_head():
    engine = _engine()
    q = "How many chunks does the InstructRetro paper's retrieval database hold?"
    headed, bare = _headed(RETRO_HEAD), _headed("", cid="h16-retro-bare-00003")
    with_head, without = engine.grade(q, [headed, bare])
    assert with_head.relevant
    assert "Holds the question's name 'InstructRetro'" in with_head.reasoning
    assert not without.relevant
    assert "Lacks the question's name 'InstructRetro'" in without.reasoning
