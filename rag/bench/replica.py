"""Keyword search across replicas: how long after an ingest on one process another process finds it.

:func:`replica_delay` runs a second process (``python -m rag.bench.replica NAME``, a replica with its own,
empty data directory, on the same Chroma server and ``RAG_DATABASE_URL``) that asks a keyword (BM25)
question over and over, adds a document holding a word no other chunk has through this process, and notes
when the other process first finds it. With ``RAG_DATABASE_URL`` the keyword index is the shared one; without,
the other process keeps its own keyword file and catches up from Chroma.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from rag.bench.data import Progress, percentile
from rag.bench.scale import synthetic_documents
from rag.config import Settings
from rag.store.chroma import open_knowledge_base
from rag.store.retrieval import retrieve

PROBE_TIMEOUT_S = 60.0
"""How long the other replica looks for a word before it reports a miss, in seconds."""


def nonce(rng: random.Random) -> str:
    """A made-up word of 12 consonants that no real text holds and the tokenizer keeps whole."""
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(12))


def replica_delay(settings, name: str, corpus: Sequence[dict], *, tries: int = 5, seed: int = 0,
                  on_progress: Progress = None) -> dict:
    """Delays (ms) between adding a document here and the first keyword hit on another replica.

    ``settings`` must name a Chroma server (``chroma_host``). Each try adds one document of 20 synthetic
    chunks (the first holding a new word) to the knowledge base ``name`` while the other replica searches
    for that word, then deletes it. ``delay_ms`` counts from the moment the ingest call returned (negative:
    found before it returned, as the index is written just before the completion record);
    ``from_start_ms`` from the moment it began.

    Returns ``tries``, ``shared_index`` (bool), per try ``ingest_ms``, ``delay_ms``, ``from_start_ms``,
    ``polls`` (searches the other replica made) and ``query_ms`` (their median), and the median and largest
    delay. Raises ValueError without a Chroma server, RuntimeError when the other replica fails or misses.
    """
    if not settings.chroma_host:
        raise ValueError("the replica delay needs a Chroma server both replicas reach (set CHROMA_HOST)")
    kb = open_knowledge_base(settings, name)
    rng = random.Random(seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="retrace-replica-") as other:
        env = {**os.environ, "RAG_DATA_DIR": other, "CHROMA_HOST": settings.chroma_host,
               "CHROMA_PORT": str(settings.chroma_port), "RAG_DATABASE_URL": settings.database_url or ""}
        proc = subprocess.Popen([sys.executable, "-m", "rag.bench.replica", name], env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _expect(proc, "ready")
            for i in range(tries):
                word = nonce(rng)
                [(chunks, pages, size)] = list(synthetic_documents(corpus, 20, seed=2_000_000 + seed + i))
                chunks[0] = dataclasses.replace(chunks[0], text=f"{chunks[0].text} {word}")
                proc.stdin.write(word + "\n")
                proc.stdin.flush()
                _expect(proc, "looking")
                started = time.time()
                kb.add_documents([(chunks, pages, size)])
                ended = time.time()
                hit = _expect(proc, "hit")
                kb.delete_document(chunks[0].doc_sha)
                rows.append({"ingest_ms": round((ended - started) * 1000, 1),
                             "delay_ms": round((hit["at"] - ended) * 1000, 1),
                             "from_start_ms": round((hit["at"] - started) * 1000, 1),
                             "polls": hit["polls"], "query_ms": hit["query_ms"]})
                if on_progress:
                    on_progress(i + 1, tries)
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=PROBE_TIMEOUT_S + 30)
            except subprocess.TimeoutExpired:
                proc.kill()
    delays = [r["delay_ms"] for r in rows]
    return {"tries": tries, "shared_index": bool(settings.database_url), "chunks": kb.count(), "rows": rows,
            "delay_ms_p50": round(percentile(delays, 50), 1) if delays else None,
            "delay_ms_max": max(delays) if delays else None}


def _expect(proc: subprocess.Popen, kind: str) -> dict:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"the other replica ended (exit code {proc.wait()}) before '{kind}'")
    message = json.loads(line)
    if message.get("kind") != kind:
        raise RuntimeError(f"the other replica said {message.get('kind')!r}, expected {kind!r}")
    if kind == "hit" and message["at"] is None:
        raise RuntimeError(f"the other replica did not find the new document within {PROBE_TIMEOUT_S:g} s")
    return message


def _say(kind: str, **fields) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


def probe(name: str) -> int:
    """The other replica: for each word read from stdin, search for it (BM25) until a hit; report on stdout.

    Lines out, JSON: ``{"kind": "ready"}`` once open, ``{"kind": "looking"}`` when a word is read, then
    ``{"kind": "hit", "at": UNIX s or None, "polls": n, "query_ms": median}``. Returns 0 at end of input.
    """
    kb = open_knowledge_base(Settings.from_env(), name)
    retrieve(kb, "warm up", 1, "bm25")  # opens (or builds) the keyword index before any timing
    _say("ready")
    for line in sys.stdin:
        word = line.strip()
        _say("looking")
        times, at = [], None
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while at is None and time.monotonic() < deadline:
            t = time.perf_counter()
            hits = retrieve(kb, word, 1, "bm25")
            times.append((time.perf_counter() - t) * 1000)
            if hits and word in hits[0].text:
                at = time.time()
        _say("hit", at=at, polls=len(times), query_ms=round(percentile(times, 50), 2))
    return 0


if __name__ == "__main__":
    sys.exit(probe(sys.argv[1]))
