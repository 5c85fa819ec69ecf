"""A run row is a summary; the run's per-step trace is read from its LangGraph checkpoints (issue 20).

The run history keeps one row per run for listing, search, Insights, Compare and feedback: the Run without
its trace's details. Each event of a summary row keeps its step, node, attempt, times, calls and tokens, and
of its detail only what Insights counts (a grounding check's verdict, a rewrite's strategy):
:func:`light_events`; each citation keeps its source, page and chunk id, not the chunk's text. The whole trace
(every event as the node recorded it) and the cited text are in the run's checkpoints, the ``events`` and
``citations`` of its newest checkpoint (:func:`from_checkpoints`), and are put back when the run is opened.

A run is saved as a summary only when its checkpoints hold exactly its trace (:func:`trace_in_checkpoints`);
otherwise (no checkpointer, an error that stopped the run between a node's event and its checkpoint, a run
made elsewhere) its row keeps the whole trace, as every row did before. Rows from before this change are
whole runs and are read as they are.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from rag.history.checkpoints import run_checkpoints
from rag.history.turns import scrubbed
from rag.models import GroundingDetail, NodeDetail, RewriteDetail, Run, TraceEvent

log = logging.getLogger(__name__)

IN_CHECKPOINTS = "checkpoints"
"""A summary row's ``trace_at``: its trace is in the checkpoints of ``Run.thread_id`` (NULL: in the row)."""

_KEPT: dict[type[NodeDetail], tuple[str, ...]] = {GroundingDetail: ("grounded",),
                                                  RewriteDetail: ("strategy",)}
"""Of each kind of detail, the fields a summary row keeps (what :mod:`rag.trace.insights` counts)."""

Saver = BaseCheckpointSaver | Callable[[], BaseCheckpointSaver | None] | None
"""A checkpointer, or a function that opens one (None when there is none), or None."""


def light_events(events: list[TraceEvent]) -> list[dict[str, Any]]:
    """``events`` as a summary row keeps them: JSON-able dicts, read back as TraceEvents with bare details."""
    out = []
    for e in events:
        kept = next((fields for kind, fields in _KEPT.items() if isinstance(e.detail, kind)), ())
        out.append({"step": e.step, "node": e.node, "attempt": e.attempt, "started_at": e.started_at,
                    "duration_ms": e.duration_ms, "summary": "", "llm_calls": e.llm_calls,
                    "prompt_tokens": e.prompt_tokens, "completion_tokens": e.completion_tokens,
                    "detail": {f: getattr(e.detail, f) for f in kept}})
    return out


def summary_json(run: Run) -> str:
    """The JSON of ``run``'s summary row: :func:`light_events` for its events, its citations without text."""
    light = run.model_copy(update={"events": [], "citations": []})
    data = light.model_dump(mode="json")
    data["events"] = light_events(run.events)
    data["citations"] = [c.model_dump(mode="json", exclude={"text"}) for c in run.citations]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # bare details stay bare


def from_checkpoints(saver: BaseCheckpointSaver, run: Run) -> Run | None:
    """``run`` with the trace and the cited text its newest checkpoint holds; None when none is found.

    The first ``run.reused_steps`` events (a re-run's steps taken over from its parent) have their calls and
    tokens cleared, as :func:`rag.rerun.rerun_from` records them. The citations are taken from the checkpoint
    only when they cite the same chunks as ``run``'s. Text is scrubbed of keys. Raises what the saver raises
    when its database is unavailable.
    """
    if not run.thread_id:
        return None
    last = next(iter(run_checkpoints(saver, run.thread_id, run.id, limit=1)), None)
    if last is None:
        return None
    values = dict(last.checkpoint.get("channel_values") or {})
    events = [e.model_copy(update={"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
              if i < run.reused_steps else e for i, e in enumerate(values.get("events") or [])]
    update: dict[str, Any] = {"events": scrubbed(events)}
    cited = list(values.get("citations") or [])
    if [(c.n, c.chunk_id) for c in cited] == [(c.n, c.chunk_id) for c in run.citations]:
        update["citations"] = scrubbed(cited)
    return run.model_copy(update=update)


def opened(saver: Saver) -> BaseCheckpointSaver | None:
    """The checkpointer ``saver`` names, opened; None when there is none or it cannot be opened (logged)."""
    if saver is None or isinstance(saver, BaseCheckpointSaver):
        return saver
    try:
        return saver()
    except OSError as exc:
        log.warning("run traces are read from the run rows only: %s", exc)
        return None


def trace_in_checkpoints(saver: BaseCheckpointSaver | None, run: Run) -> bool:
    """Whether ``run``'s checkpoints in ``saver`` hold exactly its trace (then its row may be a summary).

    That is, whether its summary row (:func:`summary_json`) made whole from them (:func:`from_checkpoints`)
    is ``run`` again. False without a saver, a thread or a checkpoint, and when the saver cannot be read.
    """
    if saver is None or not run.thread_id or not run.events:
        return False
    try:
        found = from_checkpoints(saver, Run.model_validate_json(summary_json(run)))
    except Exception as exc:  # an unreadable checkpoint database: the row keeps the trace
        log.warning("run %s is saved with its whole trace (its checkpoints cannot be read: %s: %s)",
                    run.id, type(exc).__name__, exc)
        return False
    return found is not None and found.model_dump_json() == run.model_dump_json()


def with_trace(run: Run, saver: BaseCheckpointSaver | None) -> Run:
    """The summary row ``run`` made whole from ``saver`` (:func:`from_checkpoints`).

    ``run`` as it is (its summary events, its citations without text) when there is no saver or no
    checkpoint of it is left: a warning is logged, and the run still opens (its answer, sources and steps,
    without the steps' details).
    """
    whole = None
    if saver is not None:
        try:
            whole = from_checkpoints(saver, run)
        except Exception as exc:  # the database of the checkpoints is unavailable: the summary stands
            log.warning("the trace of run %s cannot be read from its checkpoints: %s: %s",
                        run.id, type(exc).__name__, exc)
            return run
    if whole is None:
        log.warning("no checkpoint of run %s is left: it opens with its summary trace", run.id)
        return run
    return whole
