"""Web search for the web_search node, through tavily-python; absent unless a Tavily key is set."""

from __future__ import annotations

import hashlib

from rag.models import Chunk
from rag.secrets import remember, scrub


class WebSearchError(Exception):
    """The web search failed (bad key, rate limit, timeout, network); the message says which."""


class TavilyWebSearch:
    """Tavily search.

    The client is built on first use and only ever with a key: without one, tavily-python would silently call
    the live service in keyless mode.
    """

    name = "tavily"

    def __init__(self, api_key: str, base_url: str | None = None, *, max_results: int = 4,
                 timeout_s: float = 20.0) -> None:
        """A Tavily client for ``api_key``.

        Raises ValueError without a key (a TavilyClient without one would call the live service).
        """
        if not api_key:
            raise ValueError("TavilyWebSearch needs an API key")
        self._api_key = api_key
        remember(api_key)
        self.base_url = base_url
        self.max_results = max_results
        self.timeout_s = timeout_s
        self._client = None

    def __repr__(self) -> str:  # never show the key
        """Name the server, never the key."""
        return f"TavilyWebSearch(base_url={self.base_url!r})"

    def _get_client(self):
        if self._client is None:
            from tavily import TavilyClient

            self._client = TavilyClient(api_key=self._api_key, api_base_url=self.base_url)
        return self._client

    def search(self, query: str) -> list[Chunk]:
        """Up to ``max_results`` web results as chunks (source = URL, page 0, origin ``web``).

        Raises WebSearchError on any failure of the service; its message holds no key.
        """
        try:
            response = self._get_client().search(query, max_results=self.max_results,
                                                 timeout=self.timeout_s)
        except Exception as exc:  # tavily raises many unrelated types; all mean "no results"
            # from None: the original error may echo the key (a 401 body), and a chained
            # exception would carry it into any traceback or log
            raise WebSearchError(scrub(f"{type(exc).__name__}: {scrub(exc, [self._api_key])}",
                                       [self._api_key])[:200]) from None
        chunks = []
        for item in (response or {}).get("results", []):
            url = str(item.get("url", ""))
            text = str(item.get("content") or "").strip()
            if not url or not text:
                continue
            cid = "web-" + hashlib.sha256(url.encode()).hexdigest()[:16]
            chunks.append(Chunk(id=cid, text=text, source=url, page=0, origin="web",
                                title=str(item.get("title") or ""),
                                score=float(item.get("score") or 0.0)))
        return chunks


def make_web_search(settings) -> TavilyWebSearch | None:
    """Tavily web search when ``settings.tavily_api_key`` is set, else None (web search off)."""
    if not settings.tavily_api_key:
        return None
    return TavilyWebSearch(settings.tavily_api_key, settings.tavily_api_base_url)
