"""Compare pipelines: one question run under 2 to 4 Options at once (presets or custom toggle
sets), collected as a Comparison."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from pydantic import BaseModel, Field

from rag.config import PRESETS, Options, preset_options
from rag.runner import Run, run_question

if TYPE_CHECKING:
    from rag.graph.nodes import RunContext
    from rag.graph.state import TraceEvent

MIN_PIPELINES = 2
MAX_PIPELINES = 4
TOGGLES: tuple[str, ...] = tuple(PRESETS["full"][1])
"""The switches a custom pipeline turns on or off: those the presets set (grading, rewriting,
web_fallback, grounding_check, answer_check, …)."""


class Comparison(BaseModel):
    """One question answered by several pipelines. ``labels[i]`` names ``runs[i]``
    (``Naive RAG``, ``Full``, ``Custom: grading, rewriting``); ``created_at`` is UNIX seconds."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    created_at: float = Field(default_factory=time.time)
    labels: list[str] = Field(default_factory=list)
    runs: list[Run] = Field(default_factory=list)


def custom_label(options: Options) -> str:
    """``Custom: grading, rewriting`` (the switches that are on), ``Custom: all off``."""
    on = [t for t in TOGGLES if getattr(options, t)]
    return "Custom: " + (", ".join(t.replace("_", " ") for t in on) if on else "all off")


def custom_options(toggles_on: Sequence[str], **numbers) -> Options:
    """Options with exactly ``toggles_on`` switched on (names from :data:`TOGGLES`) and the
    given top_k / min_relevant / max_rewrites. Raises ValueError for an unknown switch or
    invalid numbers."""
    unknown = [t for t in toggles_on if t not in TOGGLES]
    if unknown:
        raise ValueError(f"unknown switch {unknown[0]!r}; choose from {', '.join(TOGGLES)}")
    return Options(**{t: t in toggles_on for t in TOGGLES}, **numbers)


def parse_pipelines(presets: str | Sequence[str] = (), customs: Sequence[str] = (),
                    **numbers) -> list[tuple[str, Options]]:
    """Pipelines from preset keys (``"naive,crag,full"`` or a list) and custom switch sets
    (each ``"grading+rewriting"``, or ``"none"`` for all off), as (label, Options) pairs in that
    order; ``numbers`` (top_k, min_relevant, max_rewrites) apply to each.

    Raises ValueError for an unknown preset or switch, a pipeline given twice, or fewer than
    2 or more than 4 pipelines.
    """
    keys = [p.strip() for p in (presets.split(",") if isinstance(presets, str) else presets)
            if p and p.strip()]
    out: list[tuple[str, Options]] = []
    for key in keys:
        if key not in PRESETS:
            raise ValueError(f"unknown preset {key!r}; choose from {', '.join(PRESETS)}")
        out.append((PRESETS[key][0], preset_options(key, **numbers)))
    for spec in customs:
        on = [] if spec.strip() in ("", "none") else [t.strip() for t in spec.split("+")]
        options = custom_options(on, **numbers)
        out.append((custom_label(options), options))
    labels = [label for label, _ in out]
    dupes = {label for label in labels if labels.count(label) > 1}
    if dupes:
        raise ValueError(f"{sorted(dupes)[0]} is given twice; compare different pipelines")
    if not MIN_PIPELINES <= len(out) <= MAX_PIPELINES:
        raise ValueError(f"compare {MIN_PIPELINES} to {MAX_PIPELINES} pipelines "
                         f"(got {len(out)})")
    return out


def run_comparison(question: str, context: "RunContext",
                   pipelines: Sequence[tuple[str, Options]], *,
                   on_event: Optional[Callable[[int, "TraceEvent"], None]] = None,
                   concurrent: bool = True) -> Comparison:
    """Run ``question`` under every pipeline, at the same time (one thread each; the compiled
    graph is shared and the engines are read-only), and return the Comparison, runs in the
    order of ``pipelines``.

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


def grounded_verdict(run: Run) -> str:
    """The last grounding check in words: ``grounded``, ``not grounded (2 claims)`` or
    ``not checked``."""
    for e in reversed(run.events):
        if e.node == "check_grounding":
            d = e.detail or {}
            if d.get("grounded"):
                return "grounded"
            n = len(d.get("ungrounded_claims", []) or [])
            return f"not grounded ({n} claim{'s' if n != 1 else ''})"
    return "not checked"


def useful_verdict(run: Run) -> str:
    """The last answer check in words: ``useful``, ``not useful`` or ``not checked``."""
    for e in reversed(run.events):
        if e.node == "grade_answer":
            return "useful" if (e.detail or {}).get("useful") else "not useful"
    return "not checked"
