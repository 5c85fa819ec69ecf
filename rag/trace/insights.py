"""Aggregates over saved runs for the Insights page.

Rewrite rate, hallucination-detection rate, rewrite strategies, frequent paths, stop reasons, latency
percentiles, LLM calls and tokens. Pure functions over a list of Runs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rag.config import preset_label, preset_of
from rag.models import ABSTAINED, ANSWERED, CAVEAT, GroundingDetail, RewriteDetail, Run, node
from rag.trace.pricing import Price, load_prices, run_cost
from rag.trace.story import STOP_KINDS, stop_kind


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile.

    (0..100) of ``values`` by linear interpolation between closest ranks (numpy's default method); None for no
    values. Raises ValueError for q outside 0..100.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in 0..100, got {q}")
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def path_key(run: Run) -> str:
    """The run's path as one string, identical consecutive rounds folded.

    ``(retrieve → grade_documents → rewrite_query) ×2 → retrieve → grade_documents → generate → finalize``. A
    round ends with each rewrite_query; the steps before the first retrieve stand alone.
    """
    path = list(run.path)
    # What runs once before the first retrieval (e.g. decompose_query) is not part of a round.
    first = next((i for i, name in enumerate(path) if node(name).retrieval), None)
    head = path[:first] if first is not None else []
    rounds: list[list[str]] = [head] if head else []
    current: list[str] = []
    for name in path[len(head):]:
        current.append(name)
        if node(name).new_round:
            rounds.append(current)
            current = []
    if current:
        rounds.append(current)
    if not rounds:
        return "(no steps)"
    parts: list[str] = []
    i = 0
    while i < len(rounds):
        j = i
        while j + 1 < len(rounds) and rounds[j + 1] == rounds[i]:
            j += 1
        text = " → ".join(rounds[i])
        parts.append(f"({text}) ×{j - i + 1}" if j > i else text)
        i = j + 1
    return " → ".join(parts)


@dataclass
class Insights:
    """What the saved runs show. Rates are fractions in [0, 1]; None when nothing to measure."""

    runs: int = 0
    answered: int = 0
    """Runs that ended with an answer (with or without a caveat)."""
    rewrite_rate: float | None = None
    """Share of runs that rewrote their query at least once."""
    mean_rewrites_answered: float | None = None
    """Mean rewrites per answered question."""
    grounding_checks: int = 0
    grounding_failures: int = 0
    hallucination_rate: float | None = None
    """Share of grounding checks that failed (the answer had an ungrounded claim)."""
    strategies: dict[str, int] = field(default_factory=dict)
    """Rewrite strategy -> times used, most used first."""
    paths: list[tuple[str, int]] = field(default_factory=list)
    """The most frequent paths (see :func:`path_key`) with their counts, most frequent first."""
    stop_kinds: dict[str, int] = field(default_factory=dict)
    """Stop kind words (``Answered``, ``Answered with caveat``, …) -> runs."""
    latencies_ms: list[float] = field(default_factory=list)
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    llm_calls_per_question: float | None = None
    tokens_per_question: float | None = None
    cost_per_question: float | None = None
    """Mean USD per run; None when some run used a model with no price."""
    presets: dict[str, int] = field(default_factory=dict)


def compute(runs: Sequence[Run], prices: Mapping[str, Price] | None = None, *,
            top_paths: int = 8) -> Insights:
    """The :class:`Insights` of ``runs`` (any order). ``prices`` as in :mod:`rag.trace.pricing`."""
    out = Insights(runs=len(runs))
    if not runs:
        return out
    prices = load_prices() if prices is None else prices
    kinds = [stop_kind(r) for r in runs]
    answered = [r for r, k in zip(runs, kinds, strict=False) if k in (ANSWERED, CAVEAT)]
    out.answered = len(answered)
    out.rewrite_rate = sum(1 for r in runs if r.rewrites) / len(runs)
    if answered:
        out.mean_rewrites_answered = sum(r.rewrites for r in answered) / len(answered)
    grounding = [e.detail for r in runs for e in r.events if isinstance(e.detail, GroundingDetail)]
    out.grounding_checks = len(grounding)
    out.grounding_failures = sum(1 for d in grounding if not d.grounded)
    if grounding:
        out.hallucination_rate = out.grounding_failures / len(grounding)
    out.strategies = dict(Counter(e.detail.strategy or "unknown" for r in runs for e in r.events
                                  if isinstance(e.detail, RewriteDetail)).most_common())
    out.paths = Counter(path_key(r) for r in runs).most_common(top_paths)
    order = [ANSWERED, CAVEAT, ABSTAINED]
    counts = Counter(kinds)
    out.stop_kinds = {STOP_KINDS[k]: counts[k] for k in order + sorted(set(counts) - set(order))
                      if counts[k]}
    out.latencies_ms = [r.duration_ms for r in runs]
    out.latency_p50_ms = percentile(out.latencies_ms, 50)
    out.latency_p95_ms = percentile(out.latencies_ms, 95)
    out.llm_calls_per_question = sum(r.llm_calls for r in runs) / len(runs)
    out.tokens_per_question = sum(r.prompt_tokens + r.completion_tokens for r in runs) / len(runs)
    costs = [run_cost(r, prices) for r in runs]
    known = [c for c in costs if c is not None]
    out.cost_per_question = None if len(known) < len(costs) else sum(known) / len(runs)
    out.presets = dict(Counter(preset_label(preset_of(r.options)) for r in runs).most_common())
    return out


def by_pipeline(runs: Sequence[Run], prices: Mapping[str, Price] | None = None) -> list[dict]:
    """One row per pipeline (preset name, or ``Custom``), most runs first.

    Keys: ``pipeline``, ``runs``, ``answered``, ``rewrite_rate`` and ``hallucination_rate`` (fractions or
    None), ``llm_calls``, ``tokens`` (means per question), ``p50_ms``.
    """
    groups: dict[str, list] = {}
    for r in runs:
        groups.setdefault(preset_label(preset_of(r.options)), []).append(r)
    rows = []
    for name, group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        ins = compute(group, prices)
        rows.append({"pipeline": name, "runs": ins.runs, "answered": ins.answered,
                     "rewrite_rate": ins.rewrite_rate, "hallucination_rate": ins.hallucination_rate,
                     "llm_calls": ins.llm_calls_per_question, "tokens": ins.tokens_per_question,
                     "p50_ms": ins.latency_p50_ms})
    return rows


def feedback_by_pipeline(runs: Sequence[Run], feedback: Mapping[str, int]) -> list[dict]:
    """Users' thumbs per pipeline (preset name, or ``Custom``), most rated first.

    ``feedback`` maps run id -> 1 (thumbs up) or 0 (thumbs down), as
    :meth:`rag.history.RunStore.feedback` returns it; unrated runs count in ``runs`` only. Keys: ``pipeline``,
    ``runs``, ``rated``, ``up``, ``down``, ``up_rate`` (up over rated, a fraction; None when none is rated).
    """
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(preset_label(preset_of(r.options)), []).append(r)
    rows = []
    for name, group in groups.items():
        votes = [feedback[r.id] for r in group if r.id in feedback]
        up = sum(1 for v in votes if v == 1)
        rows.append({"pipeline": name, "runs": len(group), "rated": len(votes), "up": up,
                     "down": len(votes) - up, "up_rate": up / len(votes) if votes else None})
    return sorted(rows, key=lambda row: (-row["rated"], -row["runs"], row["pipeline"]))
