"""Evidence helpers of the graph's nodes: ranked lists, front matter, heads and tables' headers.

Merging ranked lists, a document's front matter and head, and the header of a table a chunk opens inside.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence

from rag.engines.benchmarks import count_row, table_row
from rag.engines.tables import years_header
from rag.models import Chunk
from rag.store.records import chunk_id
from rag.text import sentences

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



def front_matter(kb, chunks: Sequence[Chunk], keep: Sequence[Chunk] = ()) -> list[Chunk]:
    """The first chunks of page 1 of the documents ``chunks`` come from, for a question about who wrote them.

    At most FRONT_MATTER_DOCUMENTS documents, in order of first appearance, FRONT_MATTER_CHUNKS each.

    A paper's author line holds none of the question's words but "authors", so no search finds it; its
    front matter is where it is. ``kb`` is a :class:`rag.store.chroma.KnowledgeBase`; web results are left
    out, and so are the chunks of ``keep`` (the evidence already kept). A front-matter chunk that is already
    among ``chunks`` is returned too: the caller puts it first (a wide search may have ranked it too low for
    the evidence). Pages are 1-based.
    """
    docs = list(dict.fromkeys(c.doc_sha for c in chunks if c.origin == "kb" and c.doc_sha))
    have = {c.id for c in keep}
    out: list[Chunk] = []
    for sha in docs[:FRONT_MATTER_DOCUMENTS]:
        first = sorted((c for c in kb.iter_chunks(where={"$and": [{"doc_sha": sha}, {"page": 1}]})),
                       key=lambda c: c.index)[:FRONT_MATTER_CHUNKS]
        out += [c for c in first if c.id not in have]
    return out


def front_first(kb, kept: Sequence[Chunk], found: Sequence[Chunk]) -> list[Chunk]:
    """``found`` with the front matter (:func:`front_matter`) of its documents and of ``kept`` first.

    ``kept`` is the evidence already kept (its chunks are not repeated); a front-matter chunk that ``found``
    already holds moves to the front rather than being left where a wide search ranked it.
    """
    first = front_matter(kb, [*kept, *found], keep=kept)
    ids = {c.id for c in first}
    return first + [c for c in found if c.id not in ids]


TABLE_CHUNKS_BACK = 2
"""How many chunks before one that opens inside a table are read for its header (a table of 20 rows spans
two chunks of 1,000 characters)."""


def starts_in_table(text: str) -> bool:
    """True when ``text`` opens with a row of a table (its header, if any, is in a chunk before).

    A row of figures, or of a one-column table of counts ("Stanford Alpaca Instruction-following Open-Instruct
    25,153").
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    return table_row(first) or count_row(first)


def with_table_headers(kb, chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks``, each that opens inside a table read with the chunks before it (where the header is).

    A correction for a question about a figure: a results table's rows without their header say no column
    ("Our SELF-RAG 13B 55.8 69.3 74.5 73.1 …"), and chunking cut the header off into a chunk before. Such a
    chunk's text gets up to TABLE_CHUNKS_BACK previous chunks' text in front, back to one that does not open
    inside the table (same id, page and citation). ``kb`` is a :class:`rag.store.chroma.KnowledgeBase`; web
    results and a document's first chunk are left as they are.
    """
    before_ids = {c.id: [chunk_id(c.doc_sha, c.index - back)
                         for back in range(1, min(TABLE_CHUNKS_BACK, c.index) + 1)]
                  for c in chunks
                  if c.origin == "kb" and c.index > 0 and c.doc_sha and starts_in_table(c.text)}
    if not before_ids:
        return list(chunks)
    wanted = dict.fromkeys(i for ids in before_ids.values() for i in ids)
    before = {p.id: p for p in kb.get_chunks(list(wanted))}
    out = []
    for c in chunks:
        text = c.text
        for prev in (before.get(i) for i in before_ids.get(c.id, [])):
            if prev is None:
                break
            text = f"{prev.text}\n{text}"
            if not starts_in_table(prev.text):
                break
        out.append(c if text == c.text else c.model_copy(update={"text": text}))
    return out


HEAD_CHARS = 600
"""How much of a document's first chunk is its head: a paper's title and author line, a filing's cover page
up to the registrant's name (the BRK 10-K names it at character 410)."""
_HEADS: dict[str, str] = {}
_HEADS_LOCK = threading.Lock()
MAX_HEADS = 4096
"""Documents whose heads are remembered per process (a head is fixed by the document's bytes)."""


_BODY_STARTS = re.compile(r"\b(?:abstract|introduction)\b", re.I)


def head_of(first_text: str) -> str:
    """A document's head, from the text of its first chunk.

    Up to HEAD_CHARS characters, ending before a paper's "Abstract" (the abstract names what the paper builds
    on, not what it is).
    """
    head = first_text[:HEAD_CHARS]
    body = _BODY_STARTS.search(head)
    return " ".join((head[:body.start()] if body else head).split())


def with_heads(kb, chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks``, each knowledge-base chunk past its document's first given its document's ``head``.

    The head of the document's first chunk (:func:`head_of`), read once per document and process
    (by id, ``{doc_sha[:16]}-00000``). "How many chunks does InstructRetro's database hold?" is answered by
    a chunk of the InstructRetro paper that never names it: the head says what the chunk is about.
    Web results, first chunks and chunks whose head cannot be read are returned unchanged; a store error
    leaves the heads empty rather than failing the retrieval.
    """
    want = {c.doc_sha for c in chunks if c.origin == "kb" and c.index > 0 and c.doc_sha and not c.head}
    heads = document_heads(kb, want)
    return [c.model_copy(update={"head": heads[c.doc_sha]}) if c.doc_sha in heads and not c.head else c
            for c in chunks]


SECTION_CHUNKS_BACK = 6
"""How many chunks before one are read for the heading of the section it opens in (a 10-K's "Berkshire
Hathaway Reinsurance Group" section runs over six chunks of 1,000 characters, and a page break, before its
next heading)."""
RUNNING_HEAD_CHUNKS_BACK = 12
"""How many chunks before one are read to tell a page's running head from a section's heading: enough to
reach the top of the page before (a 10-K's page is five chunks)."""
_PAGE_LABEL = re.compile(r"(?:[A-Z]{1,3}-)?\d{1,4}")
"""A line that is only a page's number or label ("K-58", "12"): a page's running head follows it."""
MAX_HEADING_WORDS = 8
_NUMBERED = re.compile(r"^(?:\(\d+\)|\d+(?:\.\d+)*\.?|[A-Z]\.)\s+")
"""A heading's number: "(16) Unpaid losses", "3.2 Results", "A. Details"."""


def _heading(line: str, before: str = "", after: str = "") -> bool:
    """True when ``line`` (between the lines ``before`` and ``after``) reads as a section heading.

    A short line (at most MAX_HEADING_WORDS words) that opens with a capital, has no figure and no closing
    punctuation, is not a table row, does not continue a sentence (``before`` is empty, a heading or a page
    label too, or ends a sentence) and is not continued by the next line (``after`` does not open in lower
    case) nor followed by a line of years or a table row (then it is a table's column header: "Cars/Units
    Percentage Change" over "2024 2023 2022 …", "Property Casualty Total" over "Case liabilities $ 7,563 …").
    "GEICO" and "Berkshire Hathaway Reinsurance Group" in a 10-K; not "K-57", not a wrapped line of a
    paragraph.
    """
    bare = _NUMBERED.sub("", line.strip())
    ws = bare.split()
    if not ws or len(ws) > MAX_HEADING_WORDS or not bare[0].isupper() or re.search(r"\d", bare):
        return False
    if bare[-1] in ".,;:!?)-–—" or table_row(bare) or not re.search(r"[a-z]{2}|[A-Z]{3}", bare):
        return False
    after = after.strip()
    if after[:1].islower() or years_header(after) or table_row(after) or _TRAILING_CELLS.search(after):
        return False  # continued, or a table's column header: years or a row of figures come next
    prev = before.strip()
    return not prev or prev[-1] in ".!?:" or bool(_PAGE_LABEL.fullmatch(prev)) or _heading(prev)


def page_top(text: str) -> list[str]:
    """The headings atop the page ``text`` opens, as :func:`last_heading` gives them.

    [] when the first line is no page label ("K-58").

    A 10-K repeats "K-58 / Management’s Discussion and Analysis / Critical Accounting Estimates / Property and
    casualty insurance unpaid losses" atop every page of a part (its running head), and a subsection
    ("GEICO") may open right under it.
    """
    lines = text.splitlines()
    if not lines or not _PAGE_LABEL.fullmatch(lines[0].strip()):
        return []
    n = 1
    while n < len(lines) and _heading(lines[n], lines[n - 1], lines[n + 1] if n + 1 < len(lines) else ""):
        n += 1
    return [" ".join(_NUMBERED.sub("", line.strip()).split()) for line in lines[1:n]]


def running_heads(texts: Iterable[str]) -> frozenset[str]:
    """The headings atop two pages or more of ``texts`` (:func:`page_top`): a running head, not a section."""
    return _repeated(frozenset(page_top(t)) for t in texts)


def _repeated(tops: Iterable[frozenset[str]]) -> frozenset[str]:
    """The headings in two or more of ``tops`` (each page's :func:`page_top`)."""
    counts = Counter(h for top in tops for h in top)
    return frozenset(h for h, n in counts.items() if n > 1)


def last_heading(text: str, skip: frozenset[str] = frozenset()) -> str:
    """The last line of ``text`` that reads as a section heading (:func:`_heading`), or "".

    Not the last line of several: a chunk's last line may be cut mid-sentence ("GEICO’s net auto"), and a
    heading there opens the next chunk too (chunks overlap). A heading in ``skip`` (running heads) is passed
    over.
    """
    lines = text.splitlines()
    for i in range(len(lines) - (2 if len(lines) > 1 else 1), -1, -1):
        if _heading(lines[i], lines[i - 1] if i else "", lines[i + 1] if i + 1 < len(lines) else ""):
            heading = " ".join(_NUMBERED.sub("", lines[i].strip()).split())
            if heading not in skip:
                return heading
    return ""


def with_sections(kb, chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks``, each knowledge-base chunk given the heading of the section it opens in (``Chunk.section``).

    A chunk cut from the middle of a section leaves its subject to the heading chunks before ("As of December
    31, 2024, case development liabilities averaged approximately 31% of reported reserves", under "GEICO"):
    the last heading (:func:`last_heading`) of up to SECTION_CHUNKS_BACK chunks before it, read by id in one
    call. A running head (:func:`running_heads` of it and the RUNNING_HEAD_CHUNKS_BACK chunks before it) is
    its section only when no other heading is found. A heading of the chunk's own text is read with the
    chunk. Web results, first chunks and chunks with no heading before them are returned unchanged; a store
    error leaves them unchanged too.
    """
    back = {c.id: [chunk_id(c.doc_sha, c.index - n)
                   for n in range(1, min(RUNNING_HEAD_CHUNKS_BACK, c.index) + 1)]
            for c in chunks if c.origin == "kb" and c.index > 0 and c.doc_sha and not c.section}
    if not back or not hasattr(kb, "get_chunks"):
        return list(chunks)
    try:
        before = {p.id: p.text for p in kb.get_chunks(list(dict.fromkeys(i for ids in back.values()
                                                                          for i in ids)))}
    except Exception:  # noqa: BLE001 - a section is a hint; retrieval must not fail for it
        return list(chunks)
    tops = {i: frozenset(page_top(text)) for i, text in before.items()}  # once per chunk read
    out = []
    for c in chunks:
        skip = _repeated([*(tops[i] for i in back.get(c.id, []) if i in tops), frozenset(page_top(c.text))])
        heading = running = ""
        for i in back.get(c.id, [])[:SECTION_CHUNKS_BACK]:
            if i not in before:
                break
            heading = last_heading(before[i], skip)
            if heading:
                break
            running = running or last_heading(before[i])
        heading = heading or running
        out.append(c.model_copy(update={"section": heading}) if heading else c)
    return out


SENTENCE_TAIL_CHARS = 400
"""The most characters of the next chunk read to finish the sentence a chunk's end cut; a sentence that runs
on longer is left cut."""
_OVERLAP_PROBE = 40
"""Characters of a chunk's end looked up in the next chunk's start, to find where it goes on (chunks
overlap)."""
_TRAILING_CELLS = re.compile(r"(?:[$(]?\s*\d[\d,.]*\s*\)?\s*%?\s+){1,}[$(]?\s*\d[\d,.]*\s*\)?\s*%?$")
"""Two numbers or more that end a line: a table row's cells ("Net deferred income tax liability $ 83,563 $
92,344")."""
_CLOSED = re.compile(r"[.!?:][\"”’)\]]?$")


def cut_at_end(text: str) -> bool:
    """True when ``text`` ends inside a sentence of prose.

    Its last line is no table row and no heading, does not end a sentence, and has three words or more
    ("… with GEICO’s market", not "Other legal matters").
    """
    last = text.rstrip().rsplit("\n", 1)[-1].strip()
    words = re.findall(r"[^\W\d_]{2,}", last)
    heading = len(last.split()) <= 6 and last[:1].isupper()  # "Other legal matters"
    return (len(words) >= 3 and not heading and not _CLOSED.search(last) and not table_row(last)
            and not _TRAILING_CELLS.search(last))


def sentence_rest(text: str, following: str) -> str:
    """The rest of the sentence ``text`` ends inside, from ``following`` (the next chunk: chunks overlap).

    "" when ``text``'s end is not found in ``following``'s start, or no sentence ends within
    SENTENCE_TAIL_CHARS after it.
    """
    probe = text.rstrip()[-_OVERLAP_PROBE:]
    at = following.find(probe, 0, SENTENCE_TAIL_CHARS + len(probe)) if len(probe) == _OVERLAP_PROBE else -1
    if at < 0:
        return ""
    said = sentences(following[at + len(probe):at + len(probe) + SENTENCE_TAIL_CHARS])
    return f" {said[0]}" if len(said) > 1 and _CLOSED.search(said[0]) else ""


def with_sentence_ends(kb, chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks``, each whose end cuts a sentence of prose given that sentence's rest from the next chunk.

    Chunking cuts sentences: "… with GEICO’s market" ends one chunk and "share being the third largest at
    approximately 12.3%." opens the next, so the cut sentence would be quoted without the figure it is there
    for. The next chunks are read by id in one call; web results, chunks that end a sentence and a store error
    leave chunks as they are.
    """
    nexts = {c.id: chunk_id(c.doc_sha, c.index + 1) for c in chunks
             if c.origin == "kb" and c.doc_sha and cut_at_end(c.text)}
    if not nexts or not hasattr(kb, "get_chunks"):
        return list(chunks)
    try:
        following = {p.id: p.text for p in kb.get_chunks(list(dict.fromkeys(nexts.values())))}
    except Exception:  # noqa: BLE001 - a sentence's end is a help; retrieval must not fail for it
        return list(chunks)
    out = []
    for c in chunks:
        rest = sentence_rest(c.text, following.get(nexts.get(c.id, ""), ""))
        out.append(c.model_copy(update={"text": c.text.rstrip() + rest}) if rest else c)
    return out


def with_context(kb, chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks`` with their document's head, section and the end of a sentence their text cuts.

    :func:`with_heads`, :func:`with_sections` and :func:`with_sentence_ends`.
    """
    return with_sections(kb, with_heads(kb, with_sentence_ends(kb, chunks)))


def document_heads(kb, shas: Iterable[str]) -> dict[str, str]:
    """doc_sha -> head (:func:`head_of`) of each of these documents whose first chunk can be read.

    Read once per document and process (by id, ``{doc_sha[:16]}-00000``); a store error leaves the heads
    out rather than failing the caller.
    """
    want = set(shas)
    with _HEADS_LOCK:
        missing = [sha for sha in want if sha not in _HEADS]
    if missing and hasattr(kb, "get_chunks"):
        try:
            firsts = kb.get_chunks([chunk_id(sha, 0) for sha in missing])
        except Exception:  # noqa: BLE001 - a head is a hint; retrieval must not fail for it
            firsts = []
        with _HEADS_LOCK:
            if len(_HEADS) > MAX_HEADS:
                _HEADS.clear()
            for first in firsts:
                _HEADS[first.doc_sha] = head_of(first.text)
    with _HEADS_LOCK:
        return {sha: _HEADS[sha] for sha in want if sha in _HEADS}


def learn_documents(kb, engine, chunks: Sequence[Chunk]) -> None:
    """Let ``engine`` read the short forms each document of ``chunks`` defines, once per document.

    For an engine with ``learn_document`` (the offline engine, :meth:`rag.engines.lexical.LexicalCore.
    learn_document`); others are left alone. A document that cannot be read is learned as defining nothing.
    """
    learn, knows = getattr(engine, "learn_document", None), getattr(engine, "knows_document", None)
    if learn is None or knows is None or not hasattr(kb, "document_chunks"):
        return
    for sha in dict.fromkeys(c.doc_sha for c in chunks if c.origin == "kb" and c.doc_sha):
        if knows(sha):
            continue
        try:
            texts = [c.text for c in kb.document_chunks(sha)]
        except Exception:  # noqa: BLE001 - short forms are a hint; retrieval must not fail for them
            texts = []
        learn(sha, texts)
