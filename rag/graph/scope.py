"""Retrieval within the one document a question names: a correction Full makes before it caveats.

"On which GPUs did Lewis et al. distribute training?" names a paper by its authors; the corpus-wide search
ranks the sentence that answers it ninth, below other papers' sentences about GPUs and training. When the
answer check turns the first answer down, the corrective retrieval (CRAG's, Yan et al. 2024) searches again
inside the document whose head (title, authors, a filing's cover; :func:`rag.graph.evidence.head_of`) holds
the question's names, so that document's best chunks come first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from rag.engines.checks import constraints
from rag.engines.lexical import work_terms
from rag.graph.evidence import MAX_HEADS, document_heads
from rag.models import Chunk
from rag.store.bm25 import lexical_index
from rag.store.records import id_prefix
from rag.store.retrieval import reciprocal_rank_fusion
from rag.text import terms

SCOPED_KEYWORD_HITS = 400
"""Keyword hits read corpus-wide to find the named document's best chunks by BM25 (its own are kept)."""


SCOPED_MAX_DOCUMENTS = MAX_HEADS
"""Knowledge bases with more documents than this are not searched for the one a question names."""


def _named_terms(question: str) -> list[tuple[str, ...]]:
    """The question's names (not numbers) as tuples of index terms, and each term of a work it names.

    "the South Bay and Trifecta brand names" gives ``("south", "bay")`` and ``("trifecta",)``; "the
    hallucination mitigation survey" gives ``("hallucin",)`` and ``("mitig",)`` (a work is often named by
    part of its title).
    """
    names = [tuple(c.terms) for c in constraints(question) if c.kind != "number" and c.terms]
    return list(dict.fromkeys([*names, *((t,) for t in sorted(work_terms(question)))]))


def _held_names(head_terms: tuple[str, ...], names: list[tuple[str, ...]]) -> list[tuple[int, str]]:
    """The terms of ``names`` a head holds, each with the place of its first use, in order of place.

    A name of several words counts only when the head holds more than half of them: "South Bay" is not
    held by a head that says "South Carolina", while "Long Context LLMs" is by one titled "… Long Context
    Large Language Models".
    """
    first: dict[str, int] = {}
    for i, t in enumerate(head_terms):
        first.setdefault(t, i)
    held: set[str] = set()
    for name in names:
        found = [t for t in name if t in first]
        if 2 * len(found) > len(name):
            held.update(found)
    return sorted((first[t], t) for t in held)


@lru_cache(maxsize=MAX_HEADS)
def _head_terms(head: str) -> tuple[str, ...]:
    """The index terms of a document head, in order (read once per head and process)."""
    return tuple(terms(head))


def named_document(kb, question: str) -> str | None:
    """The ``doc_sha`` of the one complete document of ``kb`` whose head the question's names point to.

    Heads are :func:`rag.graph.evidence.head_of` (a paper's title and authors, a filing's cover). Each term of
    the question's names (and of a work it names, "the RAG survey") that a head holds (a name of several
    words only when the head holds most of them, :func:`_held_names`) scores log((N + 1) / df), df the
    number of the N heads that hold it: "Retrieval" is in most titles, "Lewis" in two; the name before "et
    al." counts twice (it names the first author, over a word of another title: "the Lewis et al. RAG paper"
    is not Self-RAG), and singles a document out however many heads hold it. Ties go to the head naming them
    first ("Lewis et al." is the paper Lewis leads). None when no head holds a term that at most a quarter of
    the heads hold (the question singles no document out), when two heads tie there too, or when ``kb``
    cannot list its documents.
    """
    return _named(kb, question)[0]


def _named(kb, question: str) -> tuple[str | None, dict[str, list[tuple[int, str]]]]:
    """(:func:`named_document`'s answer, the question's name terms each document's head holds)."""
    docs = list(kb.complete_documents()) if hasattr(kb, "complete_documents") else []
    asked = _named_terms(question)
    if not docs or not asked or len(docs) > SCOPED_MAX_DOCUMENTS:
        return None, {}
    heads = document_heads(kb, docs)
    # the question's terms each head holds, with the place of the first
    held = {sha: _held_names(_head_terms(head), asked) for sha, head in heads.items()}
    df = Counter(t for found in held.values() for t in {t for _, t in found})
    n = len(heads)
    # "Lewis et al." names the paper Lewis leads: the first author's name counts twice
    leads = {t for m in re.finditer(r"([A-Z][\w’'-]+)\s+et\s+al\b", question) for t in terms(m.group(1))}
    ranked = []
    for sha, found in held.items():
        names = {t for _, t in found}
        if any(df[t] <= max(1, n // 4) or t in leads for t in names):
            score = round(sum(math.log((n + 1) / df[t]) * (2 if t in leads else 1) for t in names), 6)
            ranked.append((-score, found[0][0], sha))
    ranked.sort()
    if not ranked or (len(ranked) > 1 and ranked[1][:2] == ranked[0][:2]):
        return None, held
    return ranked[0][2], held


def within_document(kb, query: str, doc_sha: str, k: int) -> list[Chunk]:
    """The ``k`` best chunks of document ``doc_sha`` for ``query``, best first.

    Dense (Chroma, filtered on the document) and BM25 (the corpus-wide keyword hits of that document, among
    the first SCOPED_KEYWORD_HITS) fused by reciprocal rank fusion. ``kb`` is a
    :class:`rag.store.chroma.KnowledgeBase`; raises what Chroma or the keyword index raise.
    """
    n = max(20, 4 * k)
    dense = kb.query(query, n, where={"doc_sha": doc_sha})
    prefix = id_prefix(doc_sha)
    mine = [(cid, s) for cid, s in lexical_index(kb).search_ids(query, SCOPED_KEYWORD_HITS)
            if cid.startswith(prefix)][:n]
    scores = dict(mine)  # best first, as get_chunks keeps the order asked
    lexical = [c.model_copy(update={"score": scores[c.id]}) for c in kb.get_chunks(scores)]
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


_MENTION = re.compile(
    r"\b(?:the\s+)?(?:[A-Z][\w.’'-]*\s+(?:et\s+al\.?['’]?s?\s+)?)?(?:(?:[A-Z][\w.’'-]*|(?:19|20)\d\d)\s+){0,4}?"
    r"(?:paper|10-K|annual\s+report)\b(?:\s+['‘\"“][^'’\"”]{4,120}['’\"”])?"
    r"|\bpaper\s+['‘\"“][^'’\"”]{4,120}['’\"”]")
"""Where a question says which document it asks about: "the Self-RAG paper", "Lewis et al.'s RAG paper",
"Berkshire Hathaway's 2024 10-K", "the paper 'Retrieval-Augmented Generation for …'"."""


def document_named(kb, question: str) -> tuple[str, frozenset[str]] | None:
    """The document ``question`` names as a document ("In the Self-RAG paper, …"), or None.

    As ``(its doc_sha, the doc_sha of every document whose head holds a word of that name)``: "the Lewis et
    al. RAG paper" is Lewis et al.'s, and the Self-RAG paper, whose title holds "RAG", is named by it too, so
    neither is another document than the one named. Only the words that name a document (:data:`_MENTION`)
    are matched against the documents' heads (:func:`named_document`): "What is the retrieval component of
    RAG?" names no document. Raises what the store raises.
    """
    said = " ".join(m.group(0) for m in _MENTION.finditer(question)
                    if re.search(r"[A-Z]", re.sub(r"^(?:Which|What|Whose|The|In|From)\b", "", m.group(0))))
    sha, held = _named(kb, said) if said else (None, {})
    if sha is None:
        return None
    return sha, frozenset(d for d, found in held.items() if found) | {sha}
