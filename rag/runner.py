"""Run one question through the graph and collect a Run: answer, citations, path, trace, totals."""

from __future__ import annotations

import time
import uuid
from typing import Callable, Optional

from pydantic import BaseModel, Field

from rag.config import Options, Settings
from rag.graph.build import build_graph
from rag.graph.nodes import RunContext
from rag.graph.state import Citation, TraceEvent


class Run(BaseModel):
    """Everything about one run of the graph. Durations in ms; ``created_at`` is UNIX seconds."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    options: Options
    engine: str
    models: dict[str, str] = Field(default_factory=dict)
    knowledge_base: str = "default"
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list)
    """Node names in the order they ran."""
    events: list[TraceEvent] = Field(default_factory=list)
    stop_reason: str = ""
    """Why the run ended, in plain words."""
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: float = 0.0
    created_at: float = Field(default_factory=time.time)
    error: Optional[str] = None
    """Set when the run was stopped by an error; the answer then says so."""
    error_node: Optional[str] = None
    """The node that raised the error (the route target of the last event)."""

    @property
    def rewrites(self) -> int:
        return sum(1 for e in self.events if e.node == "rewrite_query")

    def cli_json(self) -> dict:
        """The shape ``python -m rag ask --json`` prints."""
        return {"run_id": self.id, "answer": self.answer,
                "citations": [{"n": c.n, "source": c.source, "page": c.page,
                               "chunk_id": c.chunk_id, "origin": c.origin} for c in self.citations],
                "path": self.path, "events": [e.model_dump() for e in self.events],
                "stop_reason": self.stop_reason, "llm_calls": self.llm_calls,
                "engine": self.engine, "duration_ms": self.duration_ms}


def make_context(settings: Settings, kb, *, web=None, engine=None) -> RunContext:
    """The run context for ``kb``: the LLM engine when an OpenAI key is configured, else the
    offline engine (unless ``engine`` is given); Tavily web search when a Tavily key is
    configured (unless ``web`` is given)."""
    from rag.engines import make_engine
    from rag.web import make_web_search

    if engine is None:
        engine = make_engine(settings, kb)
    if web is None:
        web = make_web_search(settings)
    return RunContext(engine=engine, kb=kb, web=web)


def run_question(question: str, context: RunContext, options: Options | None = None, *,
                 on_event: Callable[[TraceEvent], None] | None = None,
                 on_token: Callable[[str], None] | None = None) -> Run:
    """Run ``question`` through the graph and return its Run. Always terminates.

    ``on_event`` is called with each TraceEvent as the node that made it finishes, and
    ``on_token`` with each piece of answer text as the generator streams it (both through
    LangGraph's custom stream mode). An error inside the graph does not raise: the Run records it in
    ``error`` and ``stop_reason``, keeping the events so far. Raises ValueError for an empty
    question.
    """
    question = (question or "").strip()
    if not question:
        raise ValueError("the question is empty")
    options = options or Options()
    events: list[TraceEvent] = []
    final: dict = {}
    started = time.perf_counter()
    error = error_node = None
    try:
        for mode, data in build_graph().stream(
                {"question": question, "options": options, "query": question},
                config={"recursion_limit": options.recursion_limit()},
                context=context, stream_mode=["custom", "values"]):
            if mode == "custom" and data.get("kind") == "token":
                if on_token is not None:
                    on_token(data["text"])
            elif mode == "custom":
                event = TraceEvent.model_validate(data["event"])
                events.append(event)
                if on_event is not None:
                    on_event(event)
            else:
                final = data
    except Exception as exc:  # the run must end with a reason, whatever broke
        error_node = events[-1].route["to"] if events and events[-1].route else "retrieve"
        error = f"{type(exc).__name__} in {error_node}: {str(exc)[:300]}"
    run = Run(question=question, options=options, engine=context.engine.name,
              models=dict(getattr(context.engine, "models", {}) or {}),
              knowledge_base=getattr(context.kb, "name", "default"),
              events=events, path=[e.node for e in events],
              duration_ms=round((time.perf_counter() - started) * 1000, 3),
              llm_calls=sum(e.llm_calls for e in events),
              prompt_tokens=sum(e.prompt_tokens for e in events),
              completion_tokens=sum(e.completion_tokens for e in events))
    if error:
        run.error, run.error_node = error, error_node
        run.stop_reason = f"Stopped by an error: {error}"
        run.answer = "The run stopped because of an error; see the trace for where."
    else:
        run.answer = final.get("final_answer", "")
        run.citations = list(final.get("citations", []))
        run.stop_reason = final.get("stop_reason", "")
    return run
