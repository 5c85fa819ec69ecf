"""Knowledge bases as a whole: create, delete, list them with their embedding model, and re-index.

Each knowledge base is one Chroma collection. Its metadata records the embedding model that built it:
``embedding`` (an identity such as ``retrace-hashing/dim=1024`` or ``openai/text-embedding-3-small``) and
``embedding_base_url`` (the OpenAI-compatible server, ``""`` for none). It is always opened with that model,
whatever key or model is configured later (:func:`rag.store.chroma.open_knowledge_base`); new knowledge
bases get the configured one (:func:`rag.store.embeddings.configured_embedding`).

Re-indexing (:func:`reindex`) re-embeds the stored chunks (no file is parsed again) into a new, internal
collection ``rtx-<hash>-reindex``, renamed ``rtx-<hash>-built`` once it holds every chunk, then switches:
the old collection is renamed ``rtx-<hash>-retired``, the new one takes the knowledge base's name, and the
old one is deleted. A process killed while building
leaves the old knowledge base untouched (the next re-index or delete drops the half-built collection);
killed between the two renames, :func:`recover` (run by every open) finishes the switch, or undoes it.
Internal collections are never listed (:func:`rag.store.client.list_knowledge_bases`).
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.types import EmbeddingFunction

from rag.store.client import (
    INTERNAL,
    EmbeddingMismatch,
    StoreError,
    StoreUnavailable,
    is_unreachable,
    server_address,
    test_hook_after_batch,
    unreachable_message,
    validate_collection_name,
)
from rag.store.embeddings import embedding_function_for, embedding_identity, needs_key, parse_embedding
from rag.store.records import PAGE_SIZE, RECORDS_FLAG, TEXT_KEY, add_legacy_records, row_text
from rag.store.sources import forget_knowledge_base

REINDEX, BUILT, RETIRED = "reindex", "built", "retired"
"""Roles of the internal collections: being built, completely built (ready to take over), retired."""

Progress = Callable[[int, int], None]
"""``on_progress(done, total)``: chunks re-embedded so far, out of ``total``."""


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    """One knowledge base: its name, the embedding model that built it and its size.

    ``embedding`` is the model's identity (``""`` when a very old collection recorded none);
    ``base_url`` the OpenAI-compatible server that embedded it (``""``: none recorded);
    ``chunks`` counts every stored chunk.
    """

    name: str
    embedding: str
    base_url: str
    chunks: int

    @property
    def needs_key(self) -> bool:
        """True when its embedding model needs an OpenAI key to embed questions and files."""
        return needs_key(self.embedding)


def internal_name(name: str, role: str) -> str:
    """The internal collection of knowledge base ``name`` for ``role`` (``reindex`` or ``retired``)."""
    return f"rtx-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:12]}-{role}"


def validate_kb_name(name: str) -> str:
    """Return ``name`` if it can name a knowledge base.

    Chroma's collection rules (3-63 letters, digits, ``._-``, starting and ending with a letter or digit),
    and not one of the store's internal names. Raises ValueError (one line) otherwise.
    """
    validate_collection_name(name)
    if INTERNAL.match(name):
        raise ValueError(f"invalid knowledge base name {name!r}: reserved for the store's own collections")
    return name


def _collections(client: ClientAPI) -> dict[str, Any]:
    try:
        return {c.name: c for c in client.list_collections()}
    except Exception as exc:
        if is_unreachable(exc):
            raise StoreUnavailable(unreachable_message(
                server_address(client) or "the configured host")) from None
        raise


def fresh_metadata(ef: EmbeddingFunction) -> dict[str, Any]:
    """The metadata of a new knowledge base built by ``ef``: its model, no change yet, completion records."""
    return {"embedding": embedding_identity(ef), "embedding_base_url": getattr(ef, "base_url", None) or "",
            "revision": 0, RECORDS_FLAG: 1}


def open_collection(client: ClientAPI, name: str, ef: EmbeddingFunction) -> Any:
    """The Chroma collection of knowledge base ``name`` embedded by ``ef``, created when it does not exist.

    An empty collection built for another model is rebuilt for ``ef``; a collection made before completion
    records gets them (:func:`rag.store.records.add_legacy_records`). Raises EmbeddingMismatch when it holds
    chunks another model embedded.
    """
    ident = embedding_identity(ef)
    fresh = fresh_metadata(ef)
    try:
        col = client.get_or_create_collection(name, embedding_function=ef, metadata=fresh)
        built_with = (col.metadata or {}).get("embedding")
    except ValueError as exc:  # Chroma refuses another embedding function's name
        if "conflict" not in str(exc).lower():
            raise
        meta = getattr(_collections(client).get(name), "metadata", None) or {}
        col, built_with = None, str(meta.get("embedding", "another model"))
    if (col is None or (built_with and built_with != ident)) and client.get_collection(name).count() == 0:
        # Nothing is stored yet, so nothing can be mixed: rebuild it for this model.
        client.delete_collection(name)
        col, built_with = client.create_collection(name, embedding_function=ef, metadata=fresh), ident
    if col is None or (built_with and built_with != ident):
        raise EmbeddingMismatch(
            f"knowledge base '{name}' was built with embeddings '{built_with}', not '{ident}'. Re-index it "
            f"(`python -m rag kb reindex {name} --embedding MODEL`, or Re-index on the Documents page), or "
            "open it with its own model.")
    if not (col.metadata or {}).get(RECORDS_FLAG):
        add_legacy_records(col)
    return col


def _info(name: str, col: Any) -> KnowledgeBaseInfo:
    meta = col.metadata or {}
    return KnowledgeBaseInfo(name, str(meta.get("embedding") or ""),
                             str(meta.get("embedding_base_url") or ""), int(col.count()))


def recover(client: ClientAPI, name: str, cols: dict[str, Any] | None = None) -> dict[str, Any]:
    """Finish or undo a re-index of ``name`` that was killed while switching collections.

    When the old collection was retired but the new one did not take the name yet, the new one takes it if
    it was completely built, else the old one gets its name back. Returns the collections by name afterwards.
    """
    cols = _collections(client) if cols is None else cols
    retired = internal_name(name, RETIRED)
    if retired not in cols:
        return cols
    if name not in cols:
        built = cols.get(internal_name(name, BUILT))
        if built is not None:
            built.modify(name=name)
        else:
            cols[retired].modify(name=name)
            return _collections(client)
    client.delete_collection(retired)
    return _collections(client)


def recorded_embedding(client: ClientAPI, name: str) -> tuple[str, str] | None:
    """``(identity, base_url)`` of the model that built knowledge base ``name``; None when it has none yet.

    Runs :func:`recover` first. Raises StoreUnavailable when the server cannot be reached.
    """
    col = recover(client, name).get(name)
    if col is None:
        return None
    info = _info(name, col) if (col.metadata or {}).get("embedding") else None
    return (info.embedding, info.base_url) if info else None


def describe(client: ClientAPI, name: str) -> KnowledgeBaseInfo:
    """The knowledge base ``name``. Raises ValueError for an invalid or unknown name."""
    col = recover(client, validate_kb_name(name)).get(name)
    if col is None:
        raise ValueError(f"no knowledge base named '{name}'")
    return _info(name, col)


def _recover_all(client: ClientAPI) -> dict[str, Any]:
    cols = _collections(client)
    for n, c in list(cols.items()):
        if n.endswith(RETIRED) and INTERNAL.match(n) and (c.metadata or {}).get("retired_from"):
            cols = recover(client, str(c.metadata["retired_from"]), cols)
    return cols


def names(client: ClientAPI) -> list[str]:
    """The names of every knowledge base on ``client``, sorted (interrupted re-indexes recovered first)."""
    return sorted(n for n in _recover_all(client) if not INTERNAL.match(n))


def list_infos(client: ClientAPI) -> list[KnowledgeBaseInfo]:
    """Every knowledge base on ``client`` (internal collections left out), sorted by name.

    Interrupted re-indexes are recovered first (:func:`recover`).
    """
    cols = _recover_all(client)
    return [_info(n, c) for n, c in sorted(cols.items()) if not INTERNAL.match(n)]


def create(client: ClientAPI, settings, name: str, embedding: str | None = None) -> KnowledgeBaseInfo:
    """Create the empty knowledge base ``name`` embedded by ``embedding`` (default: the configured model).

    ``embedding`` is read by :func:`rag.store.embeddings.parse_embedding`. Raises ValueError for an invalid
    name, an existing one or an unknown model, EmbeddingKeyMissing when the model needs a key ``settings``
    lack.
    """
    validate_kb_name(name)
    if name in recover(client, name):
        raise ValueError(f"knowledge base '{name}' already exists")
    ident = parse_embedding(embedding, settings)
    ef = embedding_function_for(ident, settings, kb_name=name)
    client.create_collection(name, embedding_function=ef, metadata=fresh_metadata(ef))
    return KnowledgeBaseInfo(name, ident, getattr(ef, "base_url", None) or "", 0)


def delete(client: ClientAPI, name: str, data_dir: Path | None = None) -> int:
    """Delete the knowledge base ``name``: its collection, internal leftovers, keyword index and kept PDFs.

    Returns how many chunks it held. Raises ValueError for an invalid or unknown name.
    """
    cols = recover(client, validate_kb_name(name))
    if name not in cols:
        raise ValueError(f"no knowledge base named '{name}'")
    chunks = int(cols[name].count())
    client.delete_collection(name)
    for role in (REINDEX, BUILT, RETIRED):
        if internal_name(name, role) in cols:
            client.delete_collection(internal_name(name, role))
    if data_dir is not None:
        shutil.rmtree(Path(data_dir) / "bm25" / name, ignore_errors=True)
        forget_knowledge_base(Path(data_dir), name)
    return chunks


def reindex(client: ClientAPI, settings, name: str, embedding: str | None = None, *,
            on_progress: Progress | None = None, batch_size: int = 256) -> int:
    """Re-embed every stored chunk of ``name`` with ``embedding`` (default: the configured model).

    Texts and metadata (completion records included) are copied from the stored chunks, in batches of
    ``batch_size``, into an internal collection; then that collection takes the name (crash-safe: see the
    module). ``on_progress(done, total)`` follows the chunks. Returns the number of chunks re-embedded.
    Raises ValueError for an invalid or unknown name or model, EmbeddingKeyMissing when the model needs a
    key ``settings`` lack, StoreError when the knowledge base changed meanwhile (it is left as it was), and
    whatever the embedding model raises (EmbeddingError), the old knowledge base intact.
    """
    cols = recover(client, validate_kb_name(name))
    if name not in cols:
        raise ValueError(f"no knowledge base named '{name}'")
    ident = parse_embedding(embedding, settings)
    ef = embedding_function_for(ident, settings, kb_name=name)
    old, building = cols[name], internal_name(name, REINDEX)
    for role in (REINDEX, BUILT):  # left by a re-index that was killed
        if internal_name(name, role) in cols:
            client.delete_collection(internal_name(name, role))
    old_meta = {k: v for k, v in (old.metadata or {}).items() if k != "retired_from"}
    meta = {**old_meta, **fresh_metadata(ef), "revision": int(old_meta.get("revision", 0)) + 1,
            "reindex_of": name}
    new = client.create_collection(building, embedding_function=ef, metadata=meta)
    total = int(old.count())
    try:
        done = _copy(old, new, ef, total, batch_size, on_progress)
        if done != total or new.count() != old.count():
            raise StoreError(f"knowledge base '{name}' changed while it was re-indexed: run it again")
        new.modify(name=internal_name(name, BUILT))
    except BaseException:
        with contextlib.suppress(Exception):  # the server is gone: the next re-index drops it
            client.delete_collection(building)
        raise
    old.modify(name=internal_name(name, RETIRED), metadata={**old_meta, "retired_from": name})
    test_hook_after_batch()  # lets a crash test kill the process between the two renames
    new.modify(name=name)
    client.delete_collection(internal_name(name, RETIRED))
    return total


def _copy(old: Any, new: Any, ef: EmbeddingFunction, total: int, batch_size: int,
          on_progress: Progress | None) -> int:
    """Copy every chunk of ``old`` into ``new``, re-embedded with ``ef``, its text as metadata (TEXT_KEY)."""
    done, offset = 0, 0
    if on_progress:
        on_progress(0, total)
    while True:
        got = old.get(limit=PAGE_SIZE, offset=offset, include=["documents", "metadatas"])
        if not got["ids"]:
            return done
        for start in range(0, len(got["ids"]), batch_size):
            end = start + batch_size
            rows = zip(got["documents"][start:end], got["metadatas"][start:end], strict=False)
            metadatas = [{**(m or {"source": "?"}), TEXT_KEY: row_text(d, m)} for d, m in rows]
            new.add(ids=got["ids"][start:end], metadatas=metadatas,  # the text as metadata (TEXT_KEY)
                    embeddings=ef([m[TEXT_KEY] for m in metadatas]))
            done += len(got["ids"][start:end])
            test_hook_after_batch()
            if on_progress:
                on_progress(done, total)
        offset += len(got["ids"])
