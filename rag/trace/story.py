"""A run told as a story: loops unrolled into attempts, each step with what it decided and why,
every verdict on its chunk, and how the run ended. Pure functions over a Run (no plotly, no UI)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from rag.models import TraceEvent
    from rag.models import Run

ANSWERED = "answered"
CAVEAT = "caveat"
ABSTAINED = "abstained"
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


def stop_kind(run: "Run") -> str:
    """How ``run`` ended: ``answered`` (finalize), ``caveat`` (finalize_with_caveat),
    ``abstained`` (fallback), ``error``, or ``unfinished`` (no terminal node)."""
    if run.error:
        return ERROR
    last = run.path[-1] if run.path else None
    return {"finalize": ANSWERED, "finalize_with_caveat": CAVEAT,
            "fallback": ABSTAINED}.get(last or "", UNFINISHED)


def headline(run: "Run") -> str:
    """The stop reason in plain words, e.g. ``Answered with caveat: the rewrite budget (2) was
    spent and 1 claim could not be verified``; a sentence even for a run that has none."""
    if run.stop_reason:
        return run.stop_reason
    return f"{STOP_KINDS[stop_kind(run)]}: the run recorded no stop reason."


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
    next: Optional[str]
    """The next node; None for the last step."""
    reasoning: str = ""
    """The engine's own reasoning when the node has one (rewrite, grounding, answer check)."""
    fallbacks: tuple[str, ...] = ()
    """Engine fallbacks taken in this step (an LLM error, a parse failure), with why."""


def step_label(event: "TraceEvent", run: "Run", visits: int) -> str:
    """``rewrite 2 of 2`` (attempt of the rewrite budget) for rewrite_query; ``retrieve 2 of 3``
    (attempt of the run's visits) for a node visited more than once; else the node's name."""
    if event.node == "rewrite_query":
        budget = event.detail.get("budget", run.options.max_rewrites)
        n = event.detail.get("rewrite", event.attempt)
        return f"rewrite {n} of {budget}"
    if visits > 1:
        return f"{event.node} {event.attempt} of {visits}"
    return event.node


def steps(run: "Run") -> list[Step]:
    """Every step of ``run`` in order, with its label, round, decision and reason."""
    visits = Counter(e.node for e in run.events)
    out: list[Step] = []
    round_ = 1
    for i, e in enumerate(run.events):
        route = e.route or {}
        last = i == len(run.events) - 1
        if route:
            why = route.get("why", "")
        elif last and run.error:
            why = f"stopped by an error: {run.error}"
        else:
            why = "the run ends here"
        d = e.detail or {}
        reasoning = str(d.get("reasoning", "") or "")
        out.append(Step(step=e.step, node=e.node, label=step_label(e, run, visits[e.node]),
                        round=round_, decided=e.summary, why=why, next=route.get("to"),
                        reasoning=reasoning, fallbacks=tuple(str(f) for f in d.get("fallbacks", []))))
        if e.node == "rewrite_query":
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
        subs = f" as {len(self.sub_queries)} sub-questions: " + "; ".join(
            f"“{q}”" for q in self.sub_queries) if self.sub_queries else ""
        return f"Attempt {self.number}: “{self.query}”{subs}"


def rounds(run: "Run") -> list[Round]:
    """The run unrolled: one Round per retrieval attempt (a rewrite starts the next), in order.
    Steps after the last retrieval (web search, generation, checks, the ending) stay in the
    last round."""
    by_round: dict[int, list[Step]] = {}
    for s in steps(run):
        by_round.setdefault(s.round, []).append(s)
    events = {e.step: e for e in run.events}
    out = []
    for number, group in by_round.items():
        first = next((events[s.step].detail for s in group if s.node == "retrieve"), {})
        subs = tuple(str(q.get("query", "")) for q in first.get("sub_queries", []) or [])
        out.append(Round(number=number, query=first.get("query", "") or run.question,
                         steps=group, sub_queries=subs))
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
    confidence: Optional[float] = None
    """Grounding confidence in [0, 1]."""
    fallback: Optional[str] = None
    """Set when the engine fell back (an LLM error, a parse failure), with why."""


def checks(run: "Run") -> list[Check]:
    """Every grounding and answer check of ``run``, in order."""
    out = []
    for e in run.events:
        d = e.detail or {}
        fallback = "; ".join(str(f) for f in d.get("fallbacks", [])) or None
        if e.node == "check_grounding":
            out.append(Check(step=e.step, kind="grounding", passed=bool(d.get("grounded")),
                             reasoning=str(d.get("reasoning", "")),
                             claims=tuple(d.get("ungrounded_claims", []) or ()),
                             confidence=d.get("confidence"), fallback=fallback))
        elif e.node == "grade_answer":
            out.append(Check(step=e.step, kind="answer", passed=bool(d.get("useful")),
                             reasoning=str(d.get("reasoning", "")), fallback=fallback))
    return out


def chunk_verdicts(event: "TraceEvent") -> list[dict]:
    """The verdicts of one grade_documents visit, each on its chunk: ``source``, ``page``
    (1-based; 0 for web), ``grade`` (high/medium/low), ``relevant``, ``reasoning`` (in full),
    ``fallback`` (why a fallback judgment was used, or None), ``chunk_id``, ``preview``."""
    return [{"source": v.get("source", ""), "page": v.get("page", 0),
             "grade": v.get("grade", v.get("score", "")), "relevant": bool(v.get("relevant")),
             "reasoning": v.get("reasoning", ""), "fallback": v.get("fallback"),
             "chunk_id": v.get("id", v.get("chunk_id", "")), "preview": v.get("preview", "")}
            for v in (event.detail or {}).get("verdicts", [])]


def verdict_line(v: dict) -> str:
    """One verdict in words: ``relevant · high · file.pdf p.3 — reason`` (plain text)."""
    where = v["source"] if not v["page"] else f"{v['source']} p.{v['page']}"
    line = (f"{'relevant' if v['relevant'] else 'not relevant'} · {v['grade']} · {where} — "
            f"{v['reasoning']}")
    if v.get("fallback"):
        line += f" [fallback: {v['fallback']}]"
    return line


def totals_line(run: "Run", cost: Optional[float] = None) -> str:
    """``13 steps · 2 rewrites · 0 LLM calls · 0 tokens · $0 · 812 ms`` (cost as given)."""
    from rag.trace.pricing import format_cost

    tokens = run.prompt_tokens + run.completion_tokens
    return (f"{len(run.events)} steps · {run.rewrites} rewrite(s) · {run.llm_calls} LLM call(s) · "
            f"{tokens} tokens · {format_cost(cost)} · {run.duration_ms:.0f} ms")


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
