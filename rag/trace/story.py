"""A run told as a story.

Loops unrolled into attempts, each step with what it decided and why, every verdict on its chunk, and how the
run ended. Pure functions over a Run (no plotly, no UI).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rag.models import (
    ABSTAINED,
    ANSWERED,
    CAVEAT,
    AnswerCheckDetail,
    GradedChunk,
    GradeDetail,
    GroundingDetail,
    RetrieveDetail,
    RewriteDetail,
    Run,
    TraceEvent,
    node,
    source_label,
)
from rag.trace import formats
from rag.trace.formats import plural
from rag.trace.pricing import format_cost

ERROR = "error"
UNFINISHED = "unfinished"

STOP_KINDS: dict[str, str] = {
    ANSWERED: "Answered",
    CAVEAT: "Answered with caveat",
    ABSTAINED: "No answer (abstained)",
    ERROR: "Stopped by an error",
    UNFINISHED: "Unfinished",
}
"""Stop kind -> words, for filters and charts."""


def stop_kind(run: Run) -> str:
    """How ``run`` ended.

    ``answered`` (finalize, reply_directly), ``caveat`` (finalize_with_caveat), ``abstained`` (fallback),
    ``error``, or
    ``unfinished`` (no terminal node).
    """
    if run.error:
        return ERROR
    return (node(run.path[-1]).ending if run.path else None) or UNFINISHED


def headline(run: Run) -> str:
    """The stop reason in plain words; a sentence even for a run that has none.

    For example ``Answered with caveat: the rewrite budget (2) was spent and 1 claim could not be
    verified``.
    """
    if run.stop_reason:
        return run.stop_reason
    return f"{STOP_KINDS[stop_kind(run)]}: the run recorded no stop reason."


def event_summary(event: TraceEvent) -> str:
    """What ``event`` decided, in one line: its summary, or for an ending node the ending in words.

    An ending's summary is the run's stop reason, which every view states once, above the steps
    (``No answer (abstained)`` rather than the reason again).
    """
    kind = node(event.node).ending
    return STOP_KINDS[kind] if kind else event.summary


def stop_note(run: Run) -> str | None:
    """The stop reason to show under the answer, or None when the answer already says why.

    A caveat or a fallback answer carries its reason (``Caveat: only 1 relevant passage was found…``), so it
    is not said twice (the trace keeps the whole stop reason); None too when the run has no stop reason.
    """
    reason = (run.stop_reason or "").strip()
    if not reason or (run.answer or "").lstrip().lower().startswith("caveat:"):
        return None
    why = reason.split(": ", 1)[-1]
    flat = " ".join(why.split()).rstrip(".").lower()
    return None if flat and flat in " ".join((run.answer or "").split()).lower() else reason


@dataclass(frozen=True)
class Step:
    """One node visit, placed in the unrolled story."""

    step: int
    """1-based position in the run."""
    node: str
    label: str
    """The node with its attempt, e.g. ``rewrite 2 of 2``, ``retrieve 3 of 3``, ``generate``."""
    round: int
    """1-based retrieval attempt this step belongs to: a rewrite starts the next one."""
    decided: str
    """What the node decided, in one line (its summary)."""
    why: str
    """Why the run went where it went next (the router's reason), or how it ended."""
    next: str | None
    """The next node; None for the last step."""
    reasoning: str = ""
    """The engine's own reasoning when the node has one (rewrite, grounding, answer check)."""
    fallbacks: tuple[str, ...] = ()
    """Engine fallbacks taken in this step (an LLM error, a parse failure), with why."""


def step_label(event: TraceEvent, run: Run, visits: int) -> str:
    """``rewrite 2 of 2`` (attempt of the rewrite budget) for rewrite_query.

    ``retrieve 2 of 3`` (attempt of the run's visits) for a node visited more than once; else the node's name.
    """
    if isinstance(event.detail, RewriteDetail):
        budget = event.detail.budget or run.options.max_rewrites
        return f"rewrite {event.detail.rewrite or event.attempt} of {budget}"
    if visits > 1:
        return f"{event.node} {event.attempt} of {visits}"
    return event.node


def steps(run: Run) -> list[Step]:
    """Every step of ``run`` in order, with its label, round, decision and reason."""
    visits = Counter(e.node for e in run.events)
    out: list[Step] = []
    round_ = 1
    for i, e in enumerate(run.events):
        route = e.route
        last = i == len(run.events) - 1
        if route:
            why = route.why
        elif last and run.error:
            why = f"stopped by an error: {run.error}"
        else:
            why = "the run ends here"
        reasoning = str(getattr(e.detail, "reasoning", "") or "")
        out.append(Step(step=e.step, node=e.node, label=step_label(e, run, visits[e.node]),
                        round=round_, decided=event_summary(e), why=why, next=route.to if route else None,
                        reasoning=reasoning, fallbacks=tuple(e.detail.fallbacks)))
        if node(e.node).new_round:
            round_ += 1
    return out


@dataclass(frozen=True)
class Round:
    """One retrieval attempt: the query it retrieved for and the steps it took."""

    number: int
    """1-based."""
    query: str
    steps: list[Step] = field(default_factory=list)

    sub_queries: tuple[str, ...] = ()
    """The sub-questions retrieved instead of the query, when the question was decomposed."""

    @property
    def title(self) -> str:
        """``Attempt 2: “query”``, with the sub-questions when the question was decomposed."""
        subs = f" as {len(self.sub_queries)} sub-questions: " + "; ".join(
            f"“{q}”" for q in self.sub_queries) if self.sub_queries else ""
        return f"Attempt {self.number}: “{self.query}”{subs}"


def rounds(run: Run) -> list[Round]:
    """The run unrolled: one Round per retrieval attempt (a rewrite starts the next), in order.

    Steps after the last retrieval (web search, generation, checks, the ending) stay in the last round.
    """
    by_round: dict[int, list[Step]] = {}
    for s in steps(run):
        by_round.setdefault(s.round, []).append(s)
    events = {e.step: e for e in run.events}
    out = []
    for number, group in by_round.items():
        first = next((d for s in group if isinstance(d := events[s.step].detail, RetrieveDetail)),
                     RetrieveDetail())
        out.append(Round(number=number, query=first.query or run.question, steps=group,
                         sub_queries=tuple(q.query for q in first.sub_queries)))
    return out


@dataclass(frozen=True)
class Check:
    """One answer check: a grounding check (Self-RAG IsSup) or an answer check (IsUse)."""

    step: int
    kind: str
    """``grounding`` or ``answer``."""
    passed: bool
    reasoning: str
    claims: tuple[str, ...] = ()
    """The ungrounded claims of a failed grounding check."""
    confidence: float | None = None
    """Grounding confidence in [0, 1]."""
    fallback: str | None = None
    """Set when the engine fell back (an LLM error, a parse failure), with why."""


def checks(run: Run) -> list[Check]:
    """Every grounding and answer check of ``run``, in order."""
    out = []
    for e in run.events:
        d = e.detail
        fallback = "; ".join(d.fallbacks) or None
        if isinstance(d, GroundingDetail):
            out.append(Check(step=e.step, kind="grounding", passed=d.grounded, reasoning=d.reasoning,
                             claims=tuple(d.ungrounded_claims), confidence=d.confidence, fallback=fallback))
        elif isinstance(d, AnswerCheckDetail):
            out.append(Check(step=e.step, kind="answer", passed=d.useful, reasoning=d.reasoning,
                             fallback=fallback))
    return out


def chunk_verdicts(event: TraceEvent) -> list[GradedChunk]:
    """The verdicts of one grade_documents visit, each on its chunk (none for any other node)."""
    return list(event.detail.verdicts) if isinstance(event.detail, GradeDetail) else []


def verdict_rows(run: Run) -> list[dict]:
    """One row per document verdict, across every grade_documents visit of ``run``, in order (a table).

    Keys: ``step`` (1-based), ``attempt`` (nth grade_documents visit, 1-based), ``query`` (the
    query or sub-question the chunk was fetched for), ``source``, ``page`` (1-based; 0 for web),
    ``grade`` (``high``/``medium``/``low``), ``relevant`` (bool), ``reasoning``, ``fallback``
    (why a fallback judgment was used, or None), ``chunk_id``.
    """
    return [{"step": e.step, "attempt": e.attempt, "query": v.query, "source": v.source, "page": v.page,
             "grade": v.grade, "relevant": v.relevant, "reasoning": v.reasoning, "fallback": v.fallback,
             "chunk_id": v.id}
            for e in run.events for v in chunk_verdicts(e)]


def verdict_line(v: GradedChunk) -> str:
    """One verdict in words: ``relevant · high · file.pdf p.3 — reason`` (plain text)."""
    line = (f"{'relevant' if v.relevant else 'not relevant'} · {v.grade} · "
            f"{source_label(v.source, v.page, v.origin)} — {v.reasoning}")
    return line + (f" [fallback: {v.fallback}]" if v.fallback else "")


def event_rows(run: Run) -> list[dict]:
    """One row per trace event of ``run``, in step order.

    Keys: ``step`` (1-based), ``node``, ``attempt`` (nth visit to the node, 1-based),
    ``duration_ms`` (wall time, ms), ``summary`` (:func:`event_summary`), ``next`` (the node the router
    chose, None for a terminal node) and ``why`` (the router's reason in plain words, None for a terminal
    node).
    """
    return [{"step": e.step, "node": e.node, "attempt": e.attempt, "duration_ms": e.duration_ms,
             "summary": event_summary(e), "next": e.route.to if e.route else None,
             "why": e.route.why if e.route else None}
            for e in run.events]


def totals_line(run: Run, cost: float | None = None) -> str:
    """``13 steps · 2 rewrites · 0 LLM calls · 0 tokens · $0 · 812 ms`` (cost as given)."""
    tokens = run.prompt_tokens + run.completion_tokens
    return (f"{plural(len(run.events), 'step')} · {plural(run.rewrites, 'rewrite')} · "
            f"{plural(run.llm_calls, 'LLM call')} · {plural(tokens, 'token')} · {format_cost(cost)} · "
            f"{formats.ms(run.duration_ms)}")


def grounded_verdict(run: Run) -> str:
    """The last grounding check in words: ``grounded``, ``not grounded (2 claims)`` or ``not checked``."""
    for c in reversed(checks(run)):
        if c.kind == "grounding":
            n = len(c.claims)
            return "grounded" if c.passed else f"not grounded ({plural(n, 'claim')})"
    return "not checked"


def useful_verdict(run: Run) -> str:
    """The last answer check in words: ``useful``, ``not useful`` or ``not checked``."""
    for c in reversed(checks(run)):
        if c.kind == "answer":
            return "useful" if c.passed else "not useful"
    return "not checked"
