"""Connection checks for the Settings page and the CLI.

The LLM server, embeddings, web search and the vector store. Each returns (ok, one line a person can read,
never holding a key) and never raises.
"""

from __future__ import annotations

import time

from rag.config import Settings
from rag.engines.llm import describe_error
from rag.secrets import scrub
from rag.store.chroma import is_unreachable, list_knowledge_bases, make_client, unreachable_message
from rag.store.embeddings import embedding_identity, make_embedding_function
from rag.web import WebSearchError, make_web_search

NO_OPENAI_KEY = "No OpenAI key: the offline engine is in use."
NO_TAVILY_KEY = "No Tavily key: web search is off (web_search records it as skipped)."
NOT_CONFIGURED = frozenset({NO_OPENAI_KEY, NO_TAVILY_KEY})
"""Lines of a check that found nothing to test (a choice, not a failure): a notice, not an error."""


def _ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.0f} ms"


def check_llm(settings: Settings) -> tuple[bool, str]:
    """Ask the grader model for a one-word reply through ChatOpenAI."""
    if not settings.openai_api_key:
        return False, NO_OPENAI_KEY
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    where = settings.openai_base_url or "api.openai.com"
    started = time.perf_counter()
    try:
        reply = ChatOpenAI(model=settings.grader_model, api_key=SecretStr(settings.openai_api_key),
                           base_url=settings.openai_base_url, timeout=settings.llm_timeout_s,
                           max_retries=0, max_tokens=5).invoke("Reply with the word OK.")
    except Exception as exc:
        return False, scrub(f"{where}: {describe_error(exc, settings.llm_timeout_s)}", settings)
    return True, (f"{where}: {settings.grader_model} replied "
                  f"'{str(reply.content).strip()[:20]}' in {_ms(started)}")


def check_embeddings(settings: Settings) -> tuple[bool, str]:
    """Embed one short text with the configured embedding function."""
    started = time.perf_counter()
    try:
        ef = make_embedding_function(settings)
        vector = ef(["connection test"])[0]
    except Exception as exc:
        return False, scrub(f"embeddings: {describe_error(exc, settings.llm_timeout_s)}", settings)
    return True, f"{embedding_identity(ef)}: {len(vector)} dimensions in {_ms(started)}"


def check_web(settings: Settings) -> tuple[bool, str]:
    """Run one Tavily search (only when a Tavily key is set)."""
    web = make_web_search(settings)
    if web is None:
        return False, NO_TAVILY_KEY
    started = time.perf_counter()
    try:
        results = web.search("retrieval-augmented generation")
    except WebSearchError as exc:
        return False, scrub(f"Tavily: {exc}", settings)
    return True, f"Tavily: {len(results)} results in {_ms(started)}"


def check_store(settings: Settings) -> tuple[bool, str]:
    """Open the Chroma client (embedded or server) and list its collections."""
    where = (f"Chroma server {settings.chroma_host}:{settings.chroma_port}" if settings.chroma_host
             else f"Chroma at {settings.data_dir / 'chroma'}")
    started = time.perf_counter()
    try:
        names = list_knowledge_bases(make_client(settings))
    except Exception as exc:
        if is_unreachable(exc) or "cannot reach" in str(exc):
            return False, unreachable_message(f"http://{settings.chroma_host}:{settings.chroma_port}")
        return False, scrub(f"{where}: {type(exc).__name__}: {scrub(exc, settings)}", settings)[:220]
    return True, f"{where}: {len(names)} knowledge base(s) in {_ms(started)}"
