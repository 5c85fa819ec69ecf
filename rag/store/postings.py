"""The posting lists of a keyword index, each kept in a few segments so that adding never rewrites one whole.

A term's postings are int32 (chunk row, term frequency, chunk length) triples. Each add writes, per term, one
new segment (a row of ``keyword_segments`` at tier 0) and reads nothing back. When a term has
:data:`FANOUT` segments in one tier, they are merged into one segment of the next tier, so a term keeps at
most ``FANOUT - 1`` segments per tier (a few dozen in all) and every posting is rewritten about
log_FANOUT(adds) times over the index's life, not once per later add: appending to one blob (``rows ||
excluded.rows``) made SQLite read and write the whole list on every add, and a fill's cost grew with the
square of its size (1.3 GB read and 0.2 GB written in 25 s at 180,000 chunks, 2026-11-27).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sqlalchemy import Connection

from rag.store.keyword_db import KeywordStore, execute_rows, sql
from rag.store.lexical import unpack_postings

FANOUT = 8
"""Segments of one tier merged into one segment of the next."""

_PART = 500
"""Terms per ``IN (...)`` list."""


def _parts(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _PART):
        yield items[start:start + _PART]


def append(db: Connection, store: KeywordStore, terms_: list[str], bounds: np.ndarray, triples: np.ndarray,
           seg: int) -> None:
    """Write each term's new postings as a segment of tier 0 keyed ``seg``, then merge full tiers.

    ``terms_``, ``bounds``, ``triples``: :func:`rag.store.lexical.build_postings`'s result; ``seg``: a key
    no segment of these terms has (the first chunk row of the add: rows only grow).
    """
    execute_rows(db, "INSERT INTO keyword_segments(ix, term, seg, tier, rows) VALUES (?, ?, ?, 0, ?)",
                 [(store.ix, t, seg, triples[bounds[i]:bounds[i + 1]].tobytes())
                  for i, t in enumerate(terms_)])
    tier, todo = 0, terms_
    while todo:
        full = [t for part in _parts(todo) for (t,) in db.execute(sql(
            "SELECT term FROM keyword_segments WHERE ix = :ix AND tier = :tier AND term IN :terms "
            "GROUP BY term HAVING count(*) >= :fanout", "terms"),
            {"ix": store.ix, "tier": tier, "terms": part, "fanout": FANOUT})]
        for part in _parts(full):
            merged: dict[str, tuple[int, list[bytes]]] = {}
            for term, s, blob in db.execute(sql(
                    "SELECT term, seg, rows FROM keyword_segments WHERE ix = :ix AND tier = :tier "
                    "AND term IN :terms ORDER BY term, seg", "terms"),
                    {"ix": store.ix, "tier": tier, "terms": part}):
                merged.setdefault(term, (int(s), []))[1].append(bytes(blob))
            db.execute(sql("DELETE FROM keyword_segments WHERE ix = :ix AND tier = :tier AND term IN :terms",
                           "terms"), {"ix": store.ix, "tier": tier, "terms": part})
            execute_rows(db, "INSERT INTO keyword_segments(ix, term, seg, tier, rows) VALUES (?, ?, ?, ?, ?)",
                         [(store.ix, t, s, tier + 1, b"".join(blobs)) for t, (s, blobs) in merged.items()])
        tier, todo = tier + 1, full


def read(db: Connection, ix: str, terms_: list[str]) -> dict[str, np.ndarray]:
    """The posting lists of ``terms_`` that have any: term -> (3, n) int32 array (rows, tf, lengths)."""
    blobs: dict[str, list[bytes]] = {}
    for part in _parts(list(terms_)):
        for term, blob in db.execute(sql("SELECT term, rows FROM keyword_segments WHERE ix = :ix "
                                         "AND term IN :terms ORDER BY term, seg", "terms"),
                                     {"ix": ix, "terms": part}):
            blobs.setdefault(term, []).append(bytes(blob))
    return {t: unpack_postings(b"".join(parts)) for t, parts in blobs.items()}


def remove_rows(db: Connection, store: KeywordStore, rowids: np.ndarray, affected: set[str]) -> None:
    """Drop the postings of chunk rows ``rowids`` from the terms ``affected``: each becomes one segment."""
    for part in _parts(sorted(affected)):
        lists = read(db, store.ix, part)
        where = {"ix": store.ix, "terms": part}
        first = {t: (int(s), int(tier)) for t, s, tier in db.execute(sql(
            "SELECT term, min(seg), max(tier) FROM keyword_segments WHERE ix = :ix AND term IN :terms "
            "GROUP BY term", "terms"), where)}
        db.execute(sql("DELETE FROM keyword_segments WHERE ix = :ix AND term IN :terms", "terms"), where)
        kept = {t: p[:, ~np.isin(p[0], rowids)] for t, p in lists.items()}
        execute_rows(db, "INSERT INTO keyword_segments(ix, term, seg, tier, rows) VALUES (?, ?, ?, ?, ?)",
                     [(store.ix, t, *first[t], np.ascontiguousarray(p.T).tobytes())
                      for t, p in kept.items() if p.shape[1]])


def document_frequencies(db: Connection, ix: str) -> dict[str, int]:
    """Every indexed term's document frequency (its postings, over all its segments)."""
    return {t: int(n) // 12 for t, n in db.execute(
        sql("SELECT term, sum(length(rows)) FROM keyword_segments WHERE ix = :ix GROUP BY term"), {"ix": ix})}
