"""Run one question through the graph (a Run), or one question under several pipelines (a Comparison)."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, cast

from rag.config import DEFAULT_COLLECTION, MAX_PIPELINES, MIN_PIPELINES, Options, Settings
from rag.engines import make_engine
from rag.graph.build import build_graph
from rag.graph.context import RunContext
from rag.graph.routing import decide_start
from rag.history.checkpoints import RUN_KEY, open_checkpointer, thread_root
from rag.models import Comparison, ContextualizeDetail, Run, TraceEvent, Turn
from rag.secrets import scrub
from rag.store.semantic_cache import semantic_cache_for
from rag.web import make_web_search


def make_context(settings: Settings, kb, *, web=None, engine=None, checkpoints: bool = True) -> RunContext:
    """The run context for ``kb``.

    The LLM engine when an OpenAI key is configured, else the offline engine (unless ``engine`` is given);
    Tavily web search when a Tavily key is configured (unless ``web`` is given); the semantic cache of the
    data directory unless RAG_SEMANTIC_CACHE_THRESHOLD turns it off; the checkpointer of ``settings``
    (:func:`rag.history.checkpoints.open_checkpointer`) unless ``checkpoints`` is False. Raises OSError
    when the checkpoint database cannot be opened.
    """
    if engine is None:
        engine = make_engine(settings, kb)
    if web is None:
        web = make_web_search(settings)
    saver = open_checkpointer(settings) if checkpoints else None
    return RunContext(engine=engine, kb=kb, web=web, deadline_s=settings.run_deadline_s,
                      semantic_cache=semantic_cache_for(settings), checkpointer=saver)


def run_question(question: str, context: RunContext, options: Options | None = None, *,
                 history: Sequence[Turn] = (), thread_id: str | None = None,
                 on_event: Callable[[TraceEvent], None] | None = None,
                 on_token: Callable[[str], None] | None = None) -> Run:
    """Run ``question`` through the graph and return its Run.

    Always terminates.

    ``on_event`` is called with each TraceEvent as the node that made it finishes, and
    ``on_token`` with each piece of answer text as the generator streams it (both through
    LangGraph's custom stream mode). ``history`` is the thread's earlier turns, oldest first
    (:meth:`rag.history.RunStore.thread_history`): with ``options.use_history`` on, the run
    starts with contextualize_question and ``Run.standalone_question`` records the question
    the run used. An error inside the graph does not raise: the Run records it in
    ``error`` and ``stop_reason``, keeping the events so far. No key appears anywhere in the
    Run (:func:`scrub_run`). Raises ValueError for an empty question.

    With a checkpointer in the context, a checkpoint is saved after every step in the LangGraph thread
    ``thread_id`` (a conversation's id; default: the run's own id), each tagged with the run's id, and
    ``Run.thread_id`` names the thread: :func:`rag.rerun.rerun_from` forks from them. A turn of a thread
    that already holds runs starts from the thread's first checkpoint, with nothing of the earlier turns
    in its state but what ``history`` passes.

    Every run ends within its time budget (Options.deadline_s, else the context's, from
    RAG_RUN_DEADLINE_S) plus the last step: LLM calls share the time left, and once the budget is spent
    the run ends with the answer it has (with a caveat), a fast answer from what was retrieved, or an
    abstention, its stop reason saying ``time budget (60 s) spent``.
    """
    question = (question or "").strip()
    if not question:
        raise ValueError("the question is empty")
    options = options or Options()
    context = bind_run(context, options)
    run_id = uuid.uuid4().hex
    config: dict[str, Any] = {"recursion_limit": options.recursion_limit()}
    saver = context.checkpointer
    if saver is not None:
        thread_id = thread_id or run_id
        root = thread_root(saver, thread_id)
        start_at = {"checkpoint_id": root["configurable"]["checkpoint_id"]} if root else {}
        config["configurable"] = {"thread_id": thread_id, RUN_KEY: run_id, **start_at}
    started = time.perf_counter()
    graph_input = {"question": question, "history": list(history), "route": decide_start(options, history)}
    events, final, error, error_node = drive(build_graph(saver), graph_input, config, context,
                                             on_event=on_event, on_token=on_token)
    run = Run(id=run_id, question=question, options=options, engine=context.engine.name,
              thread_id=thread_id if saver is not None else "")
    return finish_run(run, context, events, final, error, error_node, started)


def bind_run(context: RunContext, options: Options) -> RunContext:
    """``context`` for one run under ``options``: its deadline set from now, a fresh ``live`` dict."""
    context = replace(context, options=options, live={})
    deadline = time.monotonic() + context.budget_s()
    bind = getattr(context.engine, "with_deadline", None)  # the LLM engine's calls share the budget
    return replace(context, deadline=deadline, engine=bind(deadline) if callable(bind) else context.engine)


def drive(graph, graph_input: dict | None, config: dict, context: RunContext, *,
          on_event: Callable[[TraceEvent], None] | None = None,
          on_token: Callable[[str], None] | None = None,
          ) -> tuple[list[TraceEvent], dict, str | None, str | None]:
    """Stream ``graph`` from ``graph_input`` (None: resume from the checkpoint ``config`` names).

    Returns (the events the steps made, the last state, the error or None, the node that raised or None);
    an error inside the graph does not raise.
    """
    events: list[TraceEvent] = []
    final: dict = {}
    error = error_node = None
    try:
        # With a list of modes, LangGraph yields (mode, data) pairs; its stubs do not say so.
        stream = cast(Iterator[tuple[str, Any]], graph.stream(
            graph_input, config=config, context=context, stream_mode=["custom", "values"]))
        for mode, data in stream:
            if mode == "custom" and data.get("kind") == "token":
                if on_token is not None:
                    on_token(data["text"])
            elif mode == "custom":
                event = _scrubbed(data["event"])  # shown live (CLI, pages): scrub it now
                events.append(event)
                if on_event is not None:
                    on_event(event)
            else:
                final = data
    except Exception as exc:  # the run must end with a reason, whatever broke
        error_node = events[-1].route.to if events and events[-1].route else "retrieve"
        error = scrub(f"{type(exc).__name__} in {error_node}: {scrub(exc)}")[:300]
    return events, final, error, error_node


def finish_run(run: Run, context: RunContext, events: list[TraceEvent], final: dict, error: str | None,
               error_node: str | None, started: float, *, reused: Sequence[TraceEvent] = ()) -> Run:
    """``run`` completed from what :func:`drive` returned.

    ``reused`` are the steps a re-run took over from its parent (first in its events; their calls and
    tokens are not counted again). ``started`` is the run's ``time.perf_counter()`` start.
    """
    events = [*reused, *events]
    fresh = events[len(reused):]
    run.models = dict(getattr(context.engine, "models", {}) or {})
    run.knowledge_base = getattr(context.kb, "name", DEFAULT_COLLECTION)
    run.events, run.path = events, [e.node for e in events]
    run.duration_ms = round((time.perf_counter() - started) * 1000, 3)
    run.llm_calls = sum(e.llm_calls for e in fresh)
    run.prompt_tokens = sum(e.prompt_tokens for e in fresh)
    run.completion_tokens = sum(e.completion_tokens for e in fresh)
    for event in events:
        if isinstance(event.detail, ContextualizeDetail):
            run.standalone_question = event.detail.standalone_question
    if error:
        run.error, run.error_node = error, error_node
        run.stop_reason = f"Stopped by an error: {error}"
        run.answer = "The run stopped because of an error; see the trace for where."
    else:
        run.answer = final.get("final_answer", "")
        run.citations = list(final.get("citations", []))
        run.stop_reason = final.get("stop_reason", "")
    return scrub_run(run)


def run_live(question: str, context: RunContext, options: Options | None = None, *,
             history: Sequence[Turn] = (), thread_id: str | None = None,
             tick_s: float = 0.25) -> Iterator[tuple[str, Any]]:
    """Run ``question`` in a worker thread and yield its progress in the caller's thread.

    Yields ``("tick", elapsed_s)`` at least every ``tick_s`` seconds while the run goes on (elapsed
    seconds since the start, for a live clock), ``("event", TraceEvent)`` as each node finishes,
    ``("token", text)`` as the answer streams, and last ``("run", Run)``. A UI that may only be
    updated from its own thread (Streamlit) shows all of it from this loop. ``thread_id`` is the
    conversation's (see :func:`run_question`). Raises what
    :func:`run_question` raises (ValueError for an empty question).
    """
    items: queue.Queue[tuple[str, Any]] = queue.Queue()

    def work() -> None:
        try:
            items.put(("run", run_question(question, context, options, history=history, thread_id=thread_id,
                                           on_event=lambda e: items.put(("event", e)),
                                           on_token=lambda t: items.put(("token", t)))))
        except BaseException as exc:  # handed to the caller's thread, raised there
            items.put(("raise", exc))

    started = time.monotonic()
    threading.Thread(target=work, daemon=True, name="retrace-run").start()
    while True:
        try:
            kind, item = items.get(timeout=tick_s)
        except queue.Empty:
            yield "tick", time.monotonic() - started
            continue
        if kind == "raise":
            raise item
        yield kind, item
        if kind == "run":
            return


def scrub_run(run: Run) -> Run:
    """``run`` with every key removed from all its text (events, reasons, answer, error).

    The last guard before a run reaches the history, the CLI or an export (:func:`rag.secrets.scrub`).
    """
    return _scrubbed(run)


def _scrubbed(record):
    """A pydantic record with every key removed from its text; the same object when it held none."""
    dumped = record.model_dump_json()
    clean = scrub(dumped)
    return record if clean == dumped else type(record).model_validate_json(clean)


def run_comparison(question: str, context: RunContext,
                   pipelines: Sequence[tuple[str, Options]], *,
                   on_event: Callable[[int, TraceEvent], None] | None = None,
                   concurrent: bool = True) -> Comparison:
    """Run ``question`` under every pipeline, at the same time.

    (one thread each; the compiled graph is shared and the engines are read-only), and return the Comparison,
    runs in the order of ``pipelines``.

    ``on_event(i, event)`` is called from the worker threads as pipeline ``i`` makes progress.
    A pipeline whose graph fails still yields its Run (with ``error`` set). Latencies of
    concurrent runs include their contention. Raises ValueError for an empty question or a
    count of pipelines outside 2..4.
    """
    question = (question or "").strip()
    if not question:
        raise ValueError("the question is empty")
    if not MIN_PIPELINES <= len(pipelines) <= MAX_PIPELINES:
        raise ValueError(f"compare {MIN_PIPELINES} to {MAX_PIPELINES} pipelines "
                         f"(got {len(pipelines)})")

    def one(i: int) -> Run:
        callback = (lambda e: on_event(i, e)) if on_event else None
        return run_question(question, context, pipelines[i][1], on_event=callback)

    if concurrent:
        with ThreadPoolExecutor(max_workers=len(pipelines),
                                thread_name_prefix="retrace-compare") as pool:
            runs = list(pool.map(one, range(len(pipelines))))
    else:
        runs = [one(i) for i in range(len(pipelines))]
    return Comparison(question=question, labels=[label for label, _ in pipelines], runs=runs)
