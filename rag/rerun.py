"""Re-run a saved run from one of its steps with changed options (LangGraph time travel).

The graph forks from the checkpoint saved before that step: ``update_state`` on it (the state the changed
options touch), then a stream from the fork. The steps before it are reused, not executed again: the child
run starts with the parent's events up to there, makes no model call for them, and records
``parent_run_id``, ``from_node`` and ``reused_steps``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig

from rag.config import Options
from rag.graph.build import build_graph
from rag.graph.context import RunContext
from rag.history.checkpoints import RUN_KEY, run_checkpoints
from rag.models import Run, TraceEvent
from rag.run import bind_run, drive, finish_run


def step_of(run: Run, node: str, attempt: int = 1) -> int:
    """The 1-based step of the ``attempt``-th visit of ``run`` to ``node``.

    Raises ValueError (one line naming the nodes the run did visit) when it never made that visit.
    """
    visits = [e.step for e in run.events if e.node == node]
    if len(visits) < attempt:
        ran = ", ".join(dict.fromkeys(e.node for e in run.events)) or "no step"
        times = "" if attempt == 1 else f" {attempt} times"
        raise ValueError(f"run {run.id} did not run {node}{times}; its steps: {ran}")
    return visits[attempt - 1]


def fork_updates(parent: Run, options: Options) -> dict[str, Any]:
    """The state a fork under ``options`` changes: what the parent's options left in the state.

    ``out_of_time`` is cleared (the child has its own time budget); a retrieval mode other than the
    parent's replaces the one route_question chose (it would win over the option otherwise).
    """
    updates: dict[str, Any] = {"out_of_time": False}
    if options.retrieval != parent.options.retrieval:
        updates["retrieval_mode"] = options.retrieval
    return updates


def rerun_from(parent: Run, step: int, context: RunContext, options: Options | None = None, *,
               on_event: Callable[[TraceEvent], None] | None = None,
               on_token: Callable[[str], None] | None = None) -> Run:
    """Re-run ``parent`` from its step ``step`` (1-based) under ``options`` (default: the parent's).

    Forks from the checkpoint before that step in the parent's thread and runs the rest of the graph; the
    child run (a new id, in the same thread) holds the parent's first ``step - 1`` events unchanged, then its
    own. ``on_event`` and ``on_token`` see only the steps the child runs. An error inside the graph does not
    raise (see :func:`rag.run.run_question`).

    Raises ValueError when ``step`` is not a step of ``parent``, when the parent saved no checkpoints (a run
    made before checkpoints, or without a checkpointer), or when the context has no checkpointer.
    """
    saver = context.checkpointer
    if saver is None:
        raise ValueError("re-running needs a checkpointer (make_context with checkpoints on)")
    if not 1 <= step <= len(parent.events):
        raise ValueError(f"run {parent.id} has steps 1 to {len(parent.events)}, not {step}")
    node = parent.events[step - 1].node
    if not parent.thread_id:
        raise ValueError(f"run {parent.id} saved no checkpoints (made before they were kept); "
                         "ask it again to re-run its steps")
    graph = build_graph(saver)
    snapshot = _before(graph, saver, parent, step, node)
    options = options or parent.options
    context = bind_run(context, options)
    child_id = uuid.uuid4().hex
    fork_config: RunnableConfig = {"configurable": {**snapshot.config["configurable"], RUN_KEY: child_id}}
    # The update is written as the node that made the checkpoint: its edge reads the unchanged route, so
    # the fork's next step is ``node`` again.
    as_node = parent.events[step - 2].node if step > 1 else "__start__"
    started = time.perf_counter()
    forked = graph.update_state(fork_config, fork_updates(parent, options), as_node=as_node)
    config = {"recursion_limit": options.recursion_limit(),
              "configurable": {**forked["configurable"], RUN_KEY: child_id}}
    reused = [e.model_copy(update={"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
              for e in snapshot.values.get("events", [])]
    events, final, error, error_node = drive(graph, None, config, context, on_event=on_event,
                                             on_token=on_token)
    child = Run(id=child_id, question=parent.question, options=options, engine=context.engine.name,
                thread_id=parent.thread_id, parent_run_id=parent.id, from_node=node, reused_steps=step - 1)
    return finish_run(child, context, events, final, error, error_node, started, reused=reused)


def _before(graph, saver, run: Run, step: int, node: str):
    """The state snapshot saved just before step ``step`` (node ``node``) of ``run``.

    Walks back from the run's last checkpoint through its parents, so a child's reused steps are found in
    its parent's checkpoints. Raises ValueError when none is found.
    """
    latest = next(iter(run_checkpoints(saver, run.thread_id, run.id)), None)
    snapshot = graph.get_state(latest.config) if latest is not None else None
    while snapshot is not None:
        done = len(snapshot.values.get("events", []))
        if (done == step - 1 and tuple(snapshot.next) == (node,)
                and (snapshot.metadata or {}).get("source") != "update"):
            return snapshot
        if done < step - 1 or snapshot.parent_config is None:
            break
        snapshot = graph.get_state(snapshot.parent_config)
    raise ValueError(f"no checkpoint before step {step} ({node}) of run {run.id} "
                     "(its checkpoints are in another database, or were deleted)")
