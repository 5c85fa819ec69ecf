"""Retrieval within the one document a question names: a correction Full makes before it caveats.

"On which GPUs did Lewis et al. distribute training?" names a paper by its authors; the corpus-wide search
ranks the sentence that answers it ninth, below other papers' sentences about GPUs and training. When the
answer check turns the first answer down, the corrective retrieval (CRAG's, Yan et al. 2024) searches again
inside the document whose head (title, authors, a filing's cover; :func:`rag.graph.evidence.head_of`) holds
the question's names, so that document's best chunks come first.
"""

from __future__ import annotations

from rag.engines.checks import constraints
from rag.engines.lexical import names_in_head
from rag.graph.evidence import MAX_HEADS, document_heads
from rag.models import Chunk
from rag.store.bm25 import lexical_index
from rag.store.chroma import to_chunk
from rag.store.retrieval import reciprocal_rank_fusion

SCOPED_KEYWORD_HITS = 400
"""Keyword hits read corpus-wide to find the named document's best chunks by BM25 (its own are kept)."""


SCOPED_MAX_DOCUMENTS = MAX_HEADS
"""Knowledge bases with more documents than this are not searched for the one a question names."""


def named_document(kb, question: str) -> str | None:
    """The ``doc_sha`` of the one complete document of ``kb`` whose head holds most of the question's names.

    Heads are :func:`rag.graph.evidence.head_of` (title and authors, a filing's cover), names
    :func:`rag.engines.lexical.names_in_head`. None when no head holds a name of the question, when two
    heads hold as many (the question does not single one out), or when ``kb`` cannot list its documents.
    """
    docs = list(kb.complete_documents()) if hasattr(kb, "complete_documents") else []
    if not docs or len(docs) > SCOPED_MAX_DOCUMENTS:
        return None
    ranked = []
    for sha, head in document_heads(kb, docs).items():
        found = names_in_head(question, head)
        if found:  # more of the question's names, then the earliest: "Lewis et al." is the paper Lewis leads
            first = min((head.lower().find(c.text.lower()) % (len(head) + 1) for c in constraints(question)
                         if set(c.terms) & found), default=len(head))
            ranked.append((-len(found), first, sha))
    ranked.sort()
    if not ranked or (len(ranked) > 1 and ranked[1][:2] == ranked[0][:2]):
        return None
    return ranked[0][2]


def within_document(kb, query: str, doc_sha: str, k: int) -> list[Chunk]:
    """The ``k`` best chunks of document ``doc_sha`` for ``query``, best first.

    Dense (Chroma, filtered on the document) and BM25 (the corpus-wide keyword hits of that document, among
    the first SCOPED_KEYWORD_HITS) fused by reciprocal rank fusion. ``kb`` is a
    :class:`rag.store.chroma.KnowledgeBase`; raises what Chroma or the keyword index raise.
    """
    n = max(20, 4 * k)
    got = kb.collection.query(query_embeddings=[kb.embed_query(query)], n_results=n,
                              where={"doc_sha": doc_sha}, include=["documents", "metadatas", "distances"])
    dense = [to_chunk(cid, t, m, score=1.0 - float(d))
             for cid, t, m, d in zip(got["ids"][0], got["documents"][0], got["metadatas"][0],
                                     got["distances"][0], strict=False)]
    hits = lexical_index(kb).search_ids(query, SCOPED_KEYWORD_HITS)
    prefix = f"{doc_sha[:16]}-"
    mine = [(cid, s) for cid, s in hits if cid.startswith(prefix)][:n]
    scores = dict(mine)
    lexical = [c.model_copy(update={"score": scores[c.id]}) for c in kb.get_chunks([cid for cid, _ in mine])
               if c.doc_sha == doc_sha]
    lexical.sort(key=lambda c: -c.score)
    return reciprocal_rank_fusion([dense, lexical], k)


def scoped_first(kb, question: str, query: str, found: list[Chunk], k: int) -> tuple[list[Chunk], str | None]:
    """``found`` with the named document's ``k`` best chunks for ``query`` first, and that document's source.

    ``found`` unchanged and None when the question names no one document (:func:`named_document`), the store
    cannot search within one, or the search fails (a correction is a second chance; it must not fail the run).
    """
    try:
        sha = named_document(kb, question)
        scoped = within_document(kb, query, sha, k) if sha is not None and hasattr(kb, "collection") else []
    except Exception:  # noqa: BLE001 - the corpus-wide results stand
        return found, None
    have = {c.id for c in scoped}
    return scoped + [c for c in found if c.id not in have], (scoped[0].source if scoped else None)
