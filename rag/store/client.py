"""Chroma connection: the client factory, knowledge-base names and the store's errors.

A lost connection to a Chroma server (``CHROMA_HOST``) becomes :class:`StoreUnavailable` with one line naming
the server and what to do; :func:`translate_unreachable` does that for every :class:`KnowledgeBase` method.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import time

import chromadb
from chromadb.api import ClientAPI

from rag.config import Settings

_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,61}[a-zA-Z0-9]$")
INTERNAL = re.compile(r"^rtx-[0-9a-f]{12}-(reindex|built|retired)$")
"""Names of the store's internal collections (a re-index under way or being switched), never listed."""


class StoreError(Exception):
    """A knowledge-base operation was refused; the message says what to do."""


class EmbeddingMismatch(StoreError):
    """The collection was built with another embedding model than the one asked for."""


class EmbeddingKeyMissing(StoreError):
    """The knowledge base's embedding model needs a key (OpenAI) that is not configured."""


class KnowledgeBaseNotFound(StoreError, ValueError):
    """The knowledge base asked for does not exist (asking never creates one); the message lists others."""


def not_found_message(name: str, existing: list[str]) -> str:
    """The one line said when the knowledge base ``name`` does not exist; ``existing`` are those that do."""
    if existing:
        return f"knowledge base '{name}' does not exist; the knowledge bases are: {', '.join(existing)}"
    return (f"knowledge base '{name}' does not exist, nor any other yet: add documents first "
            f"(python -m rag ingest FILES --collection {name})")


class StoreUnavailable(StoreError):
    """The Chroma server cannot be reached (not running, killed, wrong host or port).

    The message is one line naming the server and what to do.
    """

    reports: list = []
    """The FileReports of an ingest batch it interrupted (set by rag.ingest.pipeline.ingest_files)."""


_CONNECTION_ERRORS: tuple[type[BaseException], ...] | None = None


def _connection_errors() -> tuple[type[BaseException], ...]:
    global _CONNECTION_ERRORS
    if _CONNECTION_ERRORS is None:
        import httpx

        _CONNECTION_ERRORS = (httpx.TransportError, ConnectionError)
    return _CONNECTION_ERRORS


def server_address(client: ClientAPI) -> str | None:
    """``http://host:port`` of the Chroma server behind ``client``, or None when embedded."""
    try:
        cs = client.get_settings()
    except Exception:
        return None
    if "FastAPI" not in str(getattr(cs, "chroma_api_impl", "")) or not cs.chroma_server_host:
        return None
    scheme = "https" if getattr(cs, "chroma_server_ssl_enabled", False) else "http"
    return f"{scheme}://{cs.chroma_server_host}:{cs.chroma_server_http_port}"


def unreachable_message(where: str) -> str:
    """The one line shown when the Chroma server at ``where`` cannot be reached."""
    return (f"cannot reach the Chroma server at {where}: is `chroma run` running there? "
            "Start it, or unset CHROMA_HOST to use the local store")


def is_unreachable(error: BaseException) -> bool:
    """True when ``error`` (or an exception it was raised from) is a lost connection to Chroma."""
    seen = 0
    exc: BaseException | None = error
    while exc is not None and seen < 10:
        if isinstance(exc, _connection_errors()):
            return True
        text = str(exc)
        if type(exc).__module__.startswith("chromadb") and (
                "Could not connect to" in text or "Connection refused" in text):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def translate_unreachable(method):
    """Turn a lost connection to the Chroma server inside ``method`` into StoreUnavailable."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StoreError:
            raise
        except Exception as exc:
            if is_unreachable(exc):
                raise StoreUnavailable(unreachable_message(
                    server_address(self.client) or "the configured host")) from None
            raise
    return wrapper


def test_hook_after_batch() -> None:
    """Test hook (inert unless its environment variables are set), called after every upsert batch.

    ``RETRACE_TEST_KILL_AFTER_BATCHES=N`` makes the process SIGKILL itself after its N-th batch;
    ``RETRACE_TEST_HOLD_AFTER_BATCHES=N`` with ``RETRACE_TEST_HOLD_FILE=PATH`` creates ``PATH.ready`` after
    the N-th batch and waits until ``PATH.go`` exists. Both make crash tests deterministic without sleeps.
    """
    kill_at = os.environ.get("RETRACE_TEST_KILL_AFTER_BATCHES")
    hold_at = os.environ.get("RETRACE_TEST_HOLD_AFTER_BATCHES")
    if not kill_at and not hold_at:
        return
    global _BATCHES
    _BATCHES += 1
    if kill_at and int(kill_at) == _BATCHES:
        os.kill(os.getpid(), signal.SIGKILL)
    if hold_at and int(hold_at) == _BATCHES:
        path = os.environ["RETRACE_TEST_HOLD_FILE"]
        open(path + ".ready", "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists(path + ".go") and time.monotonic() < deadline:
            time.sleep(0.01)


_BATCHES = 0

TEST_KILL_ENV = "RETRACE_TEST_KILL_IN_KEYWORDS"
"""Test hook: ``mid`` makes the process SIGKILL itself inside a keyword-index transaction (after its first
chunk), ``after`` right after the transaction commits (before the completion record)."""


def test_kill_in_keywords(point: str) -> None:
    """Test hook (inert unless :data:`TEST_KILL_ENV` is ``point``): SIGKILL this process there."""
    if os.environ.get(TEST_KILL_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def make_client(settings: Settings) -> ClientAPI:
    """A Chroma client.

    ``HttpClient`` when ``settings.chroma_host`` is set, else an embedded ``PersistentClient`` under
    ``settings.data_dir / "chroma"``. Telemetry is off.

    Raises StoreUnavailable when the server cannot be reached.
    """
    chroma_settings = chromadb.config.Settings(anonymized_telemetry=False, allow_reset=False)
    if settings.chroma_host:
        try:
            return chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port,
                                       settings=chroma_settings)
        except Exception as exc:
            if is_unreachable(exc) or "Could not connect" in str(exc):
                raise StoreUnavailable(unreachable_message(
                    f"http://{settings.chroma_host}:{settings.chroma_port}")) from None
            raise
    path = settings.data_dir / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


def validate_collection_name(name: str) -> str:
    """Return ``name`` if Chroma accepts it (3-63 chars of letters, digits, ``._-``); else ValueError."""
    if not _NAME.match(name or "") or ".." in name:
        raise ValueError(
            f"invalid knowledge base name {name!r}: use 3-63 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit")
    return name



def list_knowledge_bases(client: ClientAPI) -> list[str]:
    """Names of the knowledge bases (collections) on ``client``, sorted (internal collections left out).

    Raises StoreUnavailable when the server cannot be reached.
    """
    try:
        cols = client.list_collections()
    except Exception as exc:
        if is_unreachable(exc):
            raise StoreUnavailable(unreachable_message(
                server_address(client) or "the configured host")) from None
        raise
    names = (c if isinstance(c, str) else c.name for c in cols)
    return sorted(n for n in names if not INTERNAL.match(n))
