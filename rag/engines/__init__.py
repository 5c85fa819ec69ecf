"""Engines that make the graph's judgments: the offline one, and (with a key) LLMs."""

from __future__ import annotations

from rag.engines.llm import LLMEngine
from rag.engines.local import LocalEngine
from rag.store.bm25 import lexical_stats


def make_engine(settings, kb):
    """The engine for ``settings``: the LLM engine when an OpenAI key is configured, else the offline engine.

    Both judge over ``kb``'s term statistics (the LLM engine falls back to the offline one when a call fails).
    """
    local = LocalEngine(lexical_stats(kb))
    if not settings.openai_api_key:
        return local
    return LLMEngine(settings, local, timeout_s=settings.llm_timeout_s,
                     max_retries=settings.llm_max_retries)
