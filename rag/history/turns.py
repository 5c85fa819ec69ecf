"""A conversation's turns read from its LangGraph checkpoints (issue 20).

A conversation is one LangGraph thread. Every turn asked in it (a first answer or a regenerated one) is a run
that starts from the thread's first checkpoint with its own input, so it has an ``input`` checkpoint tagged
with its run id (:data:`rag.history.checkpoints.RUN_KEY`); its newest checkpoint holds the state it ended
with. A re-run from a step (:func:`rag.rerun.rerun_from`) forks instead and has no input checkpoint: it is
not a turn. The turn's number is one more than the number of earlier turns its input ``history`` held.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from pydantic import BaseModel

from rag.config import DEFAULT_COLLECTION, Options
from rag.history.checkpoints import RUN_KEY
from rag.models import Citation, Run, TraceEvent, Turn
from rag.secrets import scrub

M = TypeVar("M", bound=BaseModel)

UNFINISHED = "The run stopped before it ended; its last saved step is in the trace."
"""The answer of a turn whose checkpoints end before the graph's end (an error, a stopped process)."""


@dataclass(frozen=True)
class SavedTurn:
    """One run of a conversation as its checkpoints hold it. Times are UNIX seconds.

    ``question`` is what the user typed; ``standalone_question`` the question the run used after
    contextualize_question (empty when that step did not run); ``finished`` is False when the run's last
    checkpoint is not the graph's end (then ``answer`` is :data:`UNFINISHED` and ``stop_reason`` empty).
    """

    turn: int
    run_id: str
    question: str
    standalone_question: str
    answer: str
    citations: list[Citation]
    stop_reason: str
    finished: bool
    started_at: float
    ended_at: float
    events: list[TraceEvent] = field(default_factory=list)

    def as_turn(self) -> Turn:
        """The turn as the graph's ``history`` input."""
        return Turn(question=self.question, answer=self.answer, standalone_question=self.standalone_question)

    def as_run(self, saved: Run | None, *, thread_id: str, knowledge_base: str = DEFAULT_COLLECTION) -> Run:
        """The turn as a Run: ``saved`` (its row in the run history) with what the checkpoints hold.

        The question, standalone question, answer, citations and stop reason come from the checkpoints when
        the run finished (an unfinished run keeps the row's, which say why it stopped). Without a row the Run
        is rebuilt from the checkpoints alone: default Options and no engine (the checkpoints hold neither),
        the trace events, and a duration from the first to the last checkpoint.
        """
        update: dict[str, Any] = {"question": self.question, "standalone_question": self.standalone_question,
                                  "thread_id": thread_id}
        if self.finished or saved is None:
            update.update(answer=self.answer, citations=self.citations, stop_reason=self.stop_reason)
        if saved is not None:
            return saved.model_copy(update=update)
        return Run(id=self.run_id, options=Options(), engine="", knowledge_base=knowledge_base,
                   events=self.events, path=[e.node for e in self.events], created_at=self.started_at,
                   duration_ms=round(max(0.0, self.ended_at - self.started_at) * 1000, 3), **update)


def thread_turns(saver: BaseCheckpointSaver, thread_id: str) -> list[SavedTurn]:
    """Every run asked in the LangGraph thread ``thread_id``, by turn then by start, from its checkpoints.

    A turn answered more than once (regenerated) has one entry per answer, oldest first. [] for a thread
    with no checkpoints (a conversation from before checkpoints, or a deleted one). Text is scrubbed of keys
    (:func:`rag.secrets.scrub`), as run rows are. Raises what the saver raises when its database is
    unavailable.
    """
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    starts: dict[str, float] = {}
    for item in saver.list(config, filter={"source": "input"}):  # newest first
        run_id = str((item.metadata or {}).get(RUN_KEY) or "")
        if run_id:
            starts[run_id] = _ts(item)
    turns = []
    for run_id, started in starts.items():
        last = next(iter(saver.list(config, filter={RUN_KEY: run_id}, limit=1)), None)
        if last is not None:
            turns.append(_saved_turn(run_id, started, last))
    return sorted(turns, key=lambda t: (t.turn, t.started_at, t.run_id))


def current_turns(turns: list[SavedTurn]) -> list[SavedTurn]:
    """The current (latest) answer of each turn of :func:`thread_turns`, oldest turn first."""
    latest: dict[int, SavedTurn] = {}
    for t in turns:
        latest[t.turn] = t
    return [latest[n] for n in sorted(latest)]


def _ts(item: CheckpointTuple) -> float:
    return datetime.fromisoformat(item.checkpoint["ts"]).timestamp()


def _saved_turn(run_id: str, started: float, last: CheckpointTuple) -> SavedTurn:
    values = dict(last.checkpoint.get("channel_values") or {})
    start = values.get("__start__")
    if isinstance(start, dict):  # a run that stopped at its input: the input is all there is
        values = {**start, **values}
    typed = values.get("original_question")
    finished = "final_answer" in values
    return SavedTurn(
        turn=len(values.get("history") or ()) + 1, run_id=run_id,
        question=scrub(typed if typed is not None else values.get("question", "")),
        standalone_question=scrub(values.get("question", "")) if typed is not None else "",
        answer=scrub(values["final_answer"]) if finished else UNFINISHED,
        citations=scrubbed(values.get("citations") or []) if finished else [],
        stop_reason=scrub(values.get("stop_reason", "")) if finished else "",
        finished=finished, started_at=started, ended_at=_ts(last),
        events=scrubbed(values.get("events") or []))


def scrubbed(records: list[M]) -> list[M]:
    """Pydantic records with every key removed from their text (the same list when none held one).

    One scrub for the whole list: a conversation's page reads every turn's events on each draw.
    """
    dumped = [r.model_dump_json() for r in records]
    joined = "[" + ",".join(dumped) + "]"
    clean = scrub(joined)
    if clean == joined:
        return records
    return [type(r).model_validate(item) for r, item in zip(records, json.loads(clean), strict=True)]
