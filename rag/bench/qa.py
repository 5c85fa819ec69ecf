"""Question answering over a BEIR corpus through the graph.

Every question once per preset,
scored for recall of the supporting passages among the chunks given to the generator and for
the answer (SQuAD normalisation), with latency split into engine, retrieval and graph time;
naive RAG is the baseline of the ratios.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rag.bench.data import BeirData, CorpusIndex, Progress, answer_hit, mean, percentile, ratio, recall
from rag.config import Options, Settings
from rag.models import ABSTAINED, CAVEAT, GenerateDetail, node
from rag.run import make_context, run_question


class _TimedEngine:
    """An engine that times itself.

    Wraps an engine and adds the wall time of every method call to ``ms`` (whatever the
    methods are, so engines with more judgments are timed too).
    """

    def __init__(self, inner) -> None:
        self._inner = inner
        self.ms = 0.0

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.ms += (time.perf_counter() - started) * 1000

        return timed


@dataclass
class QuestionResult:
    """One question through the graph.

    Times in ms; ``evidence`` holds the corpus ids of the
    chunks given to the generator (at most k, in order).
    """

    qid: str
    question: str
    supporting: list[str]
    evidence: list[str]
    answer: str
    recall_all: bool
    recall_any: bool
    answer_hit: bool
    llm_calls: int
    rewrites: int
    steps: int
    latency_ms: float
    engine_ms: float
    retrieval_ms: float
    stop_reason: str
    error: str | None = None
    end: str = ""
    """The terminal node (finalize, finalize_with_caveat, fallback), or "" after an error."""

    @property
    def graph_ms(self) -> float:
        """Time in the graph itself: the run minus engine and retrieval calls."""
        return max(0.0, self.latency_ms - self.engine_ms - self.retrieval_ms)


def generator_evidence(run, k: int) -> list[str]:
    """Chunk ids the generator saw in ``run`` (its last ``generate`` event), at most ``k``.

    Empty when the run never generated.
    """
    for event in reversed(run.events):
        if isinstance(event.detail, GenerateDetail):
            return [c.id for c in event.detail.evidence][:k]
    return []


def committed_answer(run) -> str:
    """The answer the run committed to.

    The last generated answer when it ended in a node that commits it (``NODES[...].commits_answer``:
    finalize, finalize_with_caveat; without the caveat line), else "" (it abstained or failed).
    """
    if run.error or not run.path or not node(run.path[-1]).commits_answer:
        return ""
    for event in reversed(run.events):
        if isinstance(event.detail, GenerateDetail):
            return event.detail.answer
    return ""


def run_qa(kb, data: BeirData, chunk_to_doc: dict[str, str], options: Options, *,
           settings: Settings | None = None, engine=None,
           on_progress: Progress = None) -> list[QuestionResult]:
    """Run every question of ``data`` through the graph with ``options`` and score it.

    Recall counts the supporting corpus ids among the chunks given to the generator (at most
    ``options.top_k``); the answer is scored by :func:`rag.bench.data.answer_hit` against the
    gold answers. The engine and the retriever are wrapped in timers, so each result splits its
    latency into engine, retrieval and graph time.

    Args:
        kb: the ``KnowledgeBase`` holding the corpus (see :func:`rag.bench.data.index_corpus`).
        data: the questions, their qrels and gold answers.
        chunk_to_doc: chunk id -> corpus id.
        options: the run options (preset and overrides).
        settings: default ``Settings.from_env()``.
        engine: default the one ``settings`` configures (the offline engine without keys).
        on_progress: ``(done, total)`` in questions.

    Returns:
        One result per question, in order.
    """
    settings = settings or Settings.from_env()
    base = make_context(settings, kb, engine=engine, checkpoints=False)  # their cost: bench checkpoints
    timed = _TimedEngine(base.engine)
    spent = {"retrieval": 0.0}
    inner_retriever = base.retriever

    def retriever(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner_retriever(*args, **kwargs)
        finally:
            spent["retrieval"] += (time.perf_counter() - started) * 1000

    context = replace(base, engine=timed, retriever=retriever)
    results = []
    for n, q in enumerate(data.queries, 1):
        timed.ms, spent["retrieval"] = 0.0, 0.0
        run = run_question(q["text"], context, options)
        supporting = sorted(data.qrels[q["_id"]])
        evidence = [chunk_to_doc.get(cid, cid) for cid in generator_evidence(run, options.top_k)]
        all_, any_, _ = recall(evidence, supporting)
        answer = committed_answer(run)
        results.append(QuestionResult(
            qid=q["_id"], question=q["text"], supporting=supporting, evidence=evidence,
            answer=answer, recall_all=all_, recall_any=any_,
            answer_hit=answer_hit(answer, q.get("answers") or []),
            llm_calls=run.llm_calls, rewrites=run.rewrites, steps=len(run.events),
            latency_ms=run.duration_ms, engine_ms=round(timed.ms, 3),
            retrieval_ms=round(spent["retrieval"], 3), stop_reason=run.stop_reason,
            error=run.error, end="" if run.error or not run.path else run.path[-1]))
        if on_progress:
            on_progress(n, len(data.queries))
    return results


def summarize_qa(results: Sequence[QuestionResult], *, preset: str, options: Options,
                 engine: str = "local") -> dict:
    """The figures of one preset.

    ``questions``, ``k``, ``preset``, ``retrieval``, ``engine``,
    ``recall_all``, ``recall_any``, ``answer_hit`` (shares in [0, 1]), ``llm_calls_mean``,
    ``rewrites_mean``, ``steps_mean``, ``latency_ms_p50``/``_p95``, the mean engine and
    retrieval ms per question, ``graph_overhead_ms_per_step`` (graph time over all node steps),
    ``abstained`` and ``caveat`` (shares of runs ending in fallback / finalize_with_caveat)
    and ``errors``.
    """
    n = len(results)
    lat = [r.latency_ms for r in results]
    steps = sum(r.steps for r in results)
    return {
        "questions": n, "k": options.top_k, "preset": preset, "retrieval": options.retrieval,
        "engine": engine,
        "recall_all": round(mean([r.recall_all for r in results]), 4),
        "recall_any": round(mean([r.recall_any for r in results]), 4),
        "answer_hit": round(mean([r.answer_hit for r in results]), 4),
        "llm_calls_mean": round(mean([r.llm_calls for r in results]), 3),
        "rewrites_mean": round(mean([r.rewrites for r in results]), 3),
        "steps_mean": round(steps / n, 3) if n else 0.0,
        "latency_ms_p50": round(percentile(lat, 50), 2),
        "latency_ms_p95": round(percentile(lat, 95), 2),
        "engine_ms_mean": round(mean([r.engine_ms for r in results]), 2),
        "retrieval_ms_mean": round(mean([r.retrieval_ms for r in results]), 2),
        "graph_overhead_ms_per_step": round(sum(r.graph_ms for r in results) / steps, 3) if steps else 0.0,
        "abstained": round(mean([node(r.end).ending == ABSTAINED for r in results]), 4),
        "caveat": round(mean([node(r.end).ending == CAVEAT for r in results]), 4),
        "errors": sum(1 for r in results if r.error),
    }


@dataclass
class QaRun:
    """The figures of several presets on one corpus, the first being the baseline."""

    index: CorpusIndex
    summaries: list[dict] = field(default_factory=list)

    def with_ratios(self) -> list[dict]:
        """Each summary, with ratios to the baseline.

        Adds ``baseline`` (the first summary's preset) and ``vs_baseline``: recall_all,
        answer_hit and latency_ms_p50 as ratios to the first summary's (the baseline, naive RAG).
        """
        if not self.summaries:
            return []
        base = self.summaries[0]
        out = []
        for s in self.summaries:
            out.append({**s, "baseline": base["preset"], "vs_baseline": {
                key: ratio(s[key], base[key]) for key in ("recall_all", "answer_hit", "latency_ms_p50")}})
        return out
