"""Finishing a node: its routing decision made once, its TraceEvent built and streamed live."""

from __future__ import annotations

import time
from collections import ChainMap
from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

from langgraph.runtime import Runtime

from rag.config import Options
from rag.engines.base import CallMeta
from rag.graph import routing
from rag.graph.context import RunContext
from rag.graph.state import GraphState
from rag.models import FINALIZE, TERMINALS, NodeDetail, TraceEvent

Decider = Callable[[routing.State, Options], routing.Decision]
"""A ``decide_*`` function of :mod:`rag.graph.routing`."""


class Clock(NamedTuple):
    """When a node started: wall time for the trace, a performance counter for its duration."""
    wall: float
    """UNIX time in seconds when the node started."""
    perf: float

    @classmethod
    def start(cls) -> Clock:
        """The clock of a node starting now."""
        return cls(time.time(), time.perf_counter())

    def elapsed_ms(self) -> float:
        """Milliseconds since :meth:`start`, rounded to the microsecond."""
        return round((time.perf_counter() - self.perf) * 1000, 3)


def record(state: GraphState, runtime: Runtime[RunContext], node: str, started: Clock, summary: str,
            detail: NodeDetail, update: dict, metas: Sequence[CallMeta] = (),
            decide: Decider | None = None, duration_ms: float | None = None) -> dict:
    """Finish a node.

    Decide the route once (when the node routes), build its TraceEvent with that route, stream it, and return
    ``update`` with the event and the route.

    The decider sees the state as this node's update leaves it; it reads only plain fields
    (counters, evidence, verdict flags), never the reducer lists ``verdicts`` and ``events``.
    Once the run's time budget is spent, a decision that would not end the run is replaced by
    :func:`rag.graph.routing.decide_out_of_time`. ``duration_ms`` overrides the measured duration
    (a check made earlier, in the same round as another).
    """
    events = state.get("events", [])
    update = dict(update)
    route = None
    if decide is not None:
        # A TypedDict is a plain dict at run time; the view reads it in place, no copy per node.
        merged = ChainMap(update, cast(dict, state))
        ctx = runtime.context
        decision = decide(merged, ctx.options)
        if ctx.out_of_time():
            update["out_of_time"] = True
            if decision.to not in TERMINALS or decision.to == FINALIZE:
                # a step cut short by the budget cannot end in a plain "Answered"
                decision = routing.decide_out_of_time(merged, ctx.options, ctx.budget_s())
        update["route"] = decision
        route = decision
    fallbacks = [m.fallback for m in metas if m.fallback]
    if fallbacks:
        detail = detail.model_copy(update={"fallbacks": fallbacks})
    event = TraceEvent(
        step=len(events) + 1, node=node, attempt=1 + sum(1 for e in events if e.node == node),
        started_at=started.wall, duration_ms=started.elapsed_ms() if duration_ms is None else duration_ms,
        summary=summary, detail=detail,
        route=route, llm_calls=sum(m.llm_calls for m in metas),
        prompt_tokens=sum(m.prompt_tokens for m in metas),
        completion_tokens=sum(m.completion_tokens for m in metas))
    runtime.stream_writer({"kind": "event", "event": event})
    return {**update, "events": [event]}
