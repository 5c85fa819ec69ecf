"""RunContext: what every node needs for one run, passed in LangGraph's runtime context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag.config import Options
from rag.engines.base import Engine
from rag.models import Chunk
from rag.store.retrieval import RetrievalMode
from rag.store.retrieval import retrieve as retrieve_chunks

Retriever = Callable[[Any, str, int, RetrievalMode], list[Chunk]]
"""``retriever(kb, query, k, mode) -> chunks``, best first."""


@dataclass(frozen=True)
class RunContext:
    """The engine, the knowledge base, the web client and the run's Options.

    Options live here, not in the graph state, because they never change during a run
    (the react-agent template's ``context_schema`` pattern).
    """

    engine: Engine
    kb: Any
    """The KnowledgeBase to retrieve from."""
    web: Any | None = None
    """A web search client (``search(query) -> list[Chunk]``), or None when not configured."""
    retriever: Retriever = field(default=retrieve_chunks)
    options: Options = field(default_factory=Options)
