"""Evidence helpers of the graph's nodes: merging ranked lists, and a document's front matter."""

from __future__ import annotations

from collections.abc import Sequence

from rag.models import Chunk

FRONT_MATTER_CHUNKS = 2
"""Chunks of page 1 taken per document: the title, the authors and the start of the abstract."""
FRONT_MATTER_DOCUMENTS = 2
"""Documents whose front matter a question about authors looks at: those of its best chunks."""


def interleave(lists: list[list[Chunk]], shares: list[int] | None = None) -> list[Chunk]:
    """Weighted round-robin over ranked lists.

    (``shares[i]`` items from list i per round, 1 by default), first occurrence of each chunk kept: every
    sub-question keeps its best chunks near the top.
    """
    shares = shares or [1] * len(lists)
    out: dict[str, Chunk] = {}
    cursors = [0] * len(lists)
    while any(c < len(x) for c, x in zip(cursors, lists, strict=False)):
        for i, ranked in enumerate(lists):
            for _ in range(shares[i]):
                if cursors[i] < len(ranked):
                    out.setdefault(ranked[cursors[i]].id, ranked[cursors[i]])
                    cursors[i] += 1
    return list(out.values())



def front_matter(kb, chunks: Sequence[Chunk]) -> list[Chunk]:
    """The first chunks of page 1 of the documents ``chunks`` come from, for a question about who wrote them.

    At most FRONT_MATTER_DOCUMENTS documents, in order of first appearance, FRONT_MATTER_CHUNKS each.

    A paper's author line holds none of the question's words but "authors", so no search finds it; its
    front matter is where it is. ``kb`` is a :class:`rag.store.chroma.KnowledgeBase`; web results and
    chunks already in ``chunks`` are left out. Pages are 1-based.
    """
    docs = list(dict.fromkeys(c.doc_sha for c in chunks if c.origin == "kb" and c.doc_sha))
    have = {c.id for c in chunks}
    out: list[Chunk] = []
    for sha in docs[:FRONT_MATTER_DOCUMENTS]:
        first = sorted((c for c in kb.iter_chunks(where={"$and": [{"doc_sha": sha}, {"page": 1}]})),
                       key=lambda c: c.index)[:FRONT_MATTER_CHUNKS]
        out += [c for c in first if c.id not in have]
    return out
