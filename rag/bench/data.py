"""What every benchmark shares.

BEIR datasets (reading, indexing one passage per chunk), the
shared data location, scoring (SQuAD answer normalisation, recall, percentiles), ratios to a
baseline and plain-text tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.ingest.types import ChunkRecord
from rag.store.bm25 import lexical_index

Progress = Callable[[int, int], None] | None
"""``on_progress(done, total)``: called as work advances."""

SHARED_DATA_ENV = "RAG_SHARED_DATA"
"""The environment variable naming the shared data sets' directory (see :func:`shared_data_dir`)."""
DEFAULT_SHARED_DATA = Path("../shared/data")
"""Where the shared data sets are when ``RAG_SHARED_DATA`` is unset: beside the project,
relative to the current directory (the project directory, when run as the README says)."""


def shared_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The shared data sets' directory (``hotpotqa/``, ``papers/``, ...).

    Args:
        env: the environment to read (default ``os.environ``).

    Returns:
        ``$RAG_SHARED_DATA`` when set and not empty, else :data:`DEFAULT_SHARED_DATA`
        (``../shared/data``, relative to the current directory). The path is not checked.
    """
    env = os.environ if env is None else env
    return Path(env.get(SHARED_DATA_ENV) or DEFAULT_SHARED_DATA)


# -- BEIR datasets ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BeirData:
    """A BEIR-layout dataset.

    ``corpus`` rows ``{_id, title, text}``; ``queries`` rows
    ``{_id, text, answers}`` (only those with qrels, in file order); ``qrels`` maps a query id
    to its supporting corpus ids (score > 0).
    """

    corpus: list[dict]
    queries: list[dict]
    qrels: dict[str, frozenset[str]]


def read_jsonl(path: Path) -> list[dict]:
    """Read a JSON-lines file.

    Args:
        path: a UTF-8 file with one JSON object per line; blank lines are skipped.

    Returns:
        The object of every non-blank line, in file order.

    Raises:
        OSError: the file cannot be read.
        ValueError: a line is not JSON.
    """
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_beir(corpus: Path, queries: Path, qrels: Path, *, limit: int | None = None) -> BeirData:
    """Read a BEIR dataset.

    Corpus and queries are JSON lines, qrels a TSV with a header line
    (``query-id  corpus-id  score``).

    Args:
        corpus: ``corpus.jsonl``, rows with ``_id``, ``text`` and optionally ``title``.
        queries: ``queries.jsonl``, rows with ``_id``, ``text`` and optionally ``answers``.
        qrels: the qrels TSV; rows with a score > 0 make a corpus id supporting.
        limit: keep the first N questions that have qrels; the corpus is always read whole.

    Returns:
        The dataset, questions without qrels left out.

    Raises:
        OSError: a file cannot be read.
        ValueError: a malformed line, or a corpus row without ``_id`` or ``text``.
    """
    rows = read_jsonl(Path(corpus))
    for row in rows:
        if "_id" not in row or "text" not in row:
            raise ValueError(f"corpus row without _id or text: {str(row)[:120]}")
    gold: dict[str, set[str]] = {}
    with open(qrels, encoding="utf-8") as f:
        next(f, None)  # header
        for n, line in enumerate(f, 2):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise ValueError(f"{qrels}:{n}: expected query-id, corpus-id, score")
            if float(parts[2]) > 0:
                gold.setdefault(parts[0], set()).add(parts[1])
    qs = [q for q in read_jsonl(Path(queries)) if q.get("_id") in gold]
    if limit is not None:
        qs = qs[:max(0, limit)]
    return BeirData(corpus=rows, queries=qs,
                    qrels={q["_id"]: frozenset(gold[q["_id"]]) for q in qs})


def corpus_documents(corpus: Iterable[dict]) -> list[tuple[list[ChunkRecord], int, int]]:
    """Each corpus row as one document of exactly one chunk.

    Ready for ``KnowledgeBase.add_documents``: ``(chunks, pages=1, size_bytes)``.

    A BEIR passage is already a retrieval unit, so it is not split further. The chunk text is
    the title on its own line, then the text (the usual BEIR indexing); ``source`` is the title;
    metadata ``doc_id`` keeps the corpus ``_id``. The document hash covers ``_id``, title and
    text, so two rows with the same text stay two documents.
    """
    docs = []
    for row in corpus:
        title = str(row.get("title") or "").strip()
        text = f"{title}\n{row['text']}".strip() if title else str(row["text"]).strip()
        payload = json.dumps([row["_id"], title, row["text"]], ensure_ascii=False).encode("utf-8")
        sha = hashlib.sha256(payload).hexdigest()
        source = title or str(row["_id"])
        record = ChunkRecord(id=f"{sha[:16]}-00000", text=text, source=source, page=1, index=0,
                             doc_sha=sha, metadata={"source": source, "page": 1, "chunk_index": 0,
                                                    "doc_sha": sha, "doc_id": str(row["_id"])})
        docs.append(([record], 1, len(payload)))
    return docs


@dataclass
class CorpusIndex:
    """The result of :func:`index_corpus`.

    Chunk id -> corpus ``_id``, and what it cost
    (``seconds`` and ``bm25_seconds`` of wall time).
    """

    chunk_to_doc: dict[str, str]
    added: int
    already: int
    seconds: float
    bm25_seconds: float = 0.0


def index_corpus(kb, corpus: list[dict], *, batch_size: int = 1024,
                 on_progress: Progress = None) -> CorpusIndex:
    """Store the corpus in ``kb``, then build (or load) the BM25 index.

    Every row becomes one chunk (see :func:`corpus_documents`), unless it is stored already.

    Args:
        kb: the ``KnowledgeBase`` to fill.
        corpus: BEIR corpus rows.
        batch_size: documents per ``add_documents`` call.
        on_progress: ``(done, total)`` over the rows not stored yet.

    Returns:
        The chunk -> corpus id map (of every row), counts and wall times in seconds.
    """
    started = time.perf_counter()
    docs = corpus_documents(corpus)
    complete = kb.complete_documents()  # a row stored without its record is stored again
    todo = [d for d in docs if d[0][0].doc_sha not in complete]
    for start in range(0, len(todo), batch_size):
        kb.add_documents(todo[start:start + batch_size], batch_size=batch_size)
        if on_progress:
            on_progress(min(start + batch_size, len(todo)), len(todo))
    seconds = time.perf_counter() - started
    t = time.perf_counter()
    lexical_index(kb)
    return CorpusIndex(chunk_to_doc={chunks[0].id: chunks[0].metadata["doc_id"] for chunks, _, _ in docs},
                       added=len(todo), already=len(docs) - len(todo), seconds=round(seconds, 3),
                       bm25_seconds=round(time.perf_counter() - t, 3))


# -- scoring ---------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)
_MARKER = re.compile(r"\s*\[\d+\]")


def normalize_answer(text: str) -> str:
    """Normalise an answer as SQuAD does.

    Follows Rajpurkar et al. 2016 (the official evaluation script): lower
    case, drop punctuation, drop the articles a/an/the, collapse whitespace. Punctuation is every Unicode
    punctuation character, not only ASCII's: a PDF's “Retrieve-Read” is the gold answer "Retrieve-Read".
    """
    text = "".join(ch for ch in text.lower()
                   if ch not in _PUNCT and not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_hit(answer: str, gold: Sequence[str]) -> bool:
    """Whether the answer says one of the gold answers.

    True when some gold answer, normalised, appears in the normalised ``answer`` as whole
    words (citation markers ``[n]`` removed first). Whole words, not a raw substring, so the
    gold answer "no" is not found inside "not".
    """
    said = f" {normalize_answer(_MARKER.sub('', answer))} "
    return any(g and f" {g} " in said for g in (normalize_answer(str(a)) for a in gold))


def recall(found: Iterable[str], supporting: Iterable[str]) -> tuple[bool, bool, float]:
    """``(all, any, share)`` of the ``supporting`` ids present in ``found``.

    With no supporting ids, all is True and any is False (share 1.0).
    """
    found, supporting = set(found), set(supporting)
    if not supporting:
        return True, False, 1.0
    hit = len(found & supporting)
    return hit == len(supporting), hit > 0, hit / len(supporting)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``.

    Linear interpolation (numpy's default); 0.0 for no values.
    """
    return float(np.percentile(values, q)) if len(values) else 0.0


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def ratio(value: float, baseline: float) -> float | None:
    """``value / baseline`` rounded to 3 places; None when the baseline is 0."""
    return round(value / baseline, 3) if baseline else None


# -- tables ----------------------------------------------------------------------------------
def format_table(rows: Sequence[dict], columns: Sequence[tuple[str, str]]) -> str:
    """A plain-text table (Markdown pipe syntax).

    Args:
        rows: one dict per row; a missing key shows as a dash.
        columns: ``(key, header)`` pairs, in order.

    Returns:
        The table, lines joined by newlines, no trailing newline. Floats are shown with up to
        3 decimals (thousands separated, no decimals, from 1000 on), booleans as yes/no,
        None as a dash.
    """
    def cell(v) -> str:
        if v is None:
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.0f}"
        return str(v)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    head = [h for _, h in columns]
    body = [[cell(r.get(key)) for key, _ in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *(line(b) for b in body)])
