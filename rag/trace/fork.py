"""A re-run beside its parent: which steps were reused, and the first step where the two runs differ."""

from __future__ import annotations

from collections.abc import Sequence

from rag.models import Run, TraceEvent

_TIMING = {"started_at", "duration_ms", "llm_calls", "prompt_tokens", "completion_tokens"}
"""What a step may change without doing anything else: when it ran, how long, what it spent."""


def pair(runs: Sequence[Run]) -> tuple[Run, Run] | None:
    """(parent, child) when ``runs`` are a run and its re-run from a step (in either order), else None."""
    if len(runs) != 2:
        return None
    a, b = runs
    if b.parent_run_id == a.id:
        return a, b
    if a.parent_run_id == b.id:
        return b, a
    return None


def _same(a: TraceEvent, b: TraceEvent) -> bool:
    return a.model_dump(exclude=_TIMING) == b.model_dump(exclude=_TIMING)


def first_difference(parent: Run, child: Run) -> int | None:
    """The first step (1-based) where ``child`` did something else than ``parent``, or None when none did.

    A step differs when its node, summary, detail or route differs (not its timing or calls); a run that
    has a step the other lacks differs there.
    """
    for i, (a, b) in enumerate(zip(parent.events, child.events, strict=False), start=1):
        if not _same(a, b):
            return i
    if len(parent.events) != len(child.events):
        return min(len(parent.events), len(child.events)) + 1
    return None


def step_rows(parent: Run, child: Run) -> list[dict]:
    """One row per step of the longer run.

    ``step``, ``parent`` and ``child`` (``node: summary``, or empty), ``reused`` (the child took the step
    over from the parent) and ``differs`` (the first difference).
    """
    first = first_difference(parent, child)
    rows = []
    for i in range(1, max(len(parent.events), len(child.events)) + 1):
        a = parent.events[i - 1] if i <= len(parent.events) else None
        b = child.events[i - 1] if i <= len(child.events) else None
        rows.append({"step": i, "parent": f"{a.node}: {a.summary}" if a else "",
                     "child": f"{b.node}: {b.summary}" if b else "",
                     "reused": i <= child.reused_steps, "differs": i == first})
    return rows
