"""answered_from: the chunks the grounding check reads are those the answer was generated from."""

from rag.graph.checks import answered_from
from rag.models import Chunk, Citation


def _chunk(cid: str) -> Chunk:
    return Chunk(id=cid, text=f"text of {cid}", source="doc.pdf", page=1, index=1)


def _cite(n: int, chunk: Chunk) -> Citation:
    return Citation(n=n, chunk_id=chunk.id, source=chunk.source, page=chunk.page)


A, B, C, D = (_chunk(x) for x in "abcd")


def test_an_answer_from_ambiguous_chunks_is_checked_against_them():
    state = {"documents": [], "ambiguous": [A], "retrieved": [A, B], "answered_with": [A.id]}
    assert answered_from(state) == [A]


def test_a_cited_retrieved_chunk_outside_the_documents_is_read_too():
    state = {"documents": [A], "retrieved": [A, B, C], "answered_with": [A.id],
             "citations": [_cite(1, A), _cite(2, C)]}
    assert answered_from(state) == [A, C]


def test_answered_with_comes_first_and_each_chunk_once():
    state = {"documents": [A, B], "retrieved": [A, B, C], "answered_with": [B.id, A.id],
             "citations": [_cite(1, A), _cite(2, B)]}
    assert answered_from(state) == [B, A]


def test_ids_of_no_known_chunk_are_skipped():
    state = {"documents": [A], "retrieved": [A], "answered_with": ["gone"], "citations": [_cite(1, D)]}
    assert answered_from(state) == [A]


def test_without_a_record_of_the_answers_chunks_the_documents_are_read():
    assert answered_from({"documents": [A, B], "retrieved": [A, B, C]}) == [A, B]
    assert answered_from({"documents": [A, B], "answered_with": None, "citations": None}) == [A, B]
    assert answered_from({}) == []
