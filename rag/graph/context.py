"""RunContext: what every node needs for one run, passed in LangGraph's runtime context."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag.config import Options
from rag.engines.base import Engine
from rag.models import Chunk
from rag.store.retrieval import RetrievalMode
from rag.store.retrieval import retrieve as retrieve_chunks
from rag.store.semantic_cache import SemanticCache

Retriever = Callable[[Any, str, int, RetrievalMode], list[Chunk]]
"""``retriever(kb, query, k, mode) -> chunks``, best first."""

DEFAULT_DEADLINE_S = 60.0
"""The time budget of a run, in seconds, when neither Options nor Settings give one."""
OUT_OF_TIME_SLACK_S = 0.25
"""Seconds before the deadline from which the run counts as out of time."""


@dataclass(frozen=True)
class RunContext:
    """The engine, the knowledge base, the web client, the run's Options and its deadline.

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
    semantic_cache: SemanticCache | None = None
    """Reuses a similar question's retrieval (:mod:`rag.store.semantic_cache`); None: off."""
    deadline_s: float = DEFAULT_DEADLINE_S
    """The default time budget of a run in seconds (Settings.run_deadline_s); Options.deadline_s wins."""
    deadline: float | None = None
    """``time.monotonic()`` by which the run must end; set by run_question for each run."""
    live: dict[str, Any] = field(default_factory=dict)
    """What one run hands from node to node that cannot be saved in a checkpoint, so it stays out of the
    graph state: ``prefetch`` (:class:`rag.graph.prefetch.Prefetch`, route_question's own round, which
    decompose_query reuses) and ``speculation`` (:class:`rag.graph.prefetch.Speculation`, an answer being
    generated in a background thread while grading runs). A fresh dict for every run (run_question); a
    re-run from a checkpoint starts without them, and the nodes then do the work themselves."""
    checkpointer: Any | None = None
    """Where the graph saves a checkpoint after every step
    (:func:`rag.history.checkpoints.open_checkpointer`), or None for none (a run without checkpoints cannot
    be re-run from a step)."""

    def budget_s(self) -> float:
        """This run's time budget in seconds."""
        return self.options.deadline_s or self.deadline_s

    def remaining_s(self) -> float | None:
        """Seconds left in the run's time budget (None when no deadline is set; may be negative)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self) -> bool:
        """True once the run's time budget is spent.

        Within OUT_OF_TIME_SLACK_S: an LLM call cut to the time left returns just before the deadline.
        """
        left = self.remaining_s()
        return left is not None and left <= OUT_OF_TIME_SLACK_S
