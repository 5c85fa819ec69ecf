"""``python -m rag bench checkpoints``: what saving a checkpoint after every step costs a run.

The sample documents (``docs/``, offline hashing embeddings) in a temporary knowledge base; each question
runs without a checkpointer and with the SQLite one, alternately (so load drifts hit both alike), on the
offline engine, or with ``delay_ms`` on the LLM engine against ``bench latency``'s local model server that
waits that long per call (a run then takes seconds, as on a real model). Reported: the run's own wall time
(p50, ms) with and without checkpoints, the time spent inside the saver's ``put`` and ``put_writes`` per
run (ms; LangGraph writes them from a background thread, so the wall-time difference is what a user
waits), checkpoints per run and their size in bytes.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rag.bench.latency import BENCH_QUESTIONS, DelayedChatServer
from rag.config import PRESETS, Settings, preset_options
from rag.engines.llm import GradeCache, LLMEngine
from rag.engines.local import LocalEngine
from rag.graph.context import RunContext
from rag.graph.prefetch import RETRIEVAL_CACHE
from rag.history.checkpoints import CHECKPOINTS_NAME, checkpoint_bytes, run_checkpoints, sqlite_saver
from rag.run import make_context, run_question
from rag.samples import load_samples
from rag.store.bm25 import lexical_stats
from rag.store.chroma import open_knowledge_base


@dataclass(frozen=True)
class CheckpointCost:
    """The figures of ``bench checkpoints`` (times in ms, p50 over every run; sizes per run)."""

    preset: str
    engine: str
    """``local``, or ``openai`` against the delayed local server."""
    runs: int
    """Runs each way (with and without checkpoints)."""
    steps: float
    """Mean steps per run."""
    run_ms_without: float
    run_ms_with: float
    overhead_ms: float
    """``run_ms_with - run_ms_without``."""
    saver_ms: float
    """Time inside the saver's put and put_writes per run."""
    checkpoints: float
    """Mean checkpoints saved per run."""
    bytes_per_run: float
    """Mean bytes per run: serialised checkpoints, metadata and pending writes."""
    bytes_per_checkpoint: float


class _Timer:
    """Wraps a saver's ``put`` and ``put_writes`` on the instance, adding the ms they take to ``spent``."""

    def __init__(self, saver) -> None:
        self.spent = 0.0
        for name in ("put", "put_writes"):
            setattr(saver, name, self._timed(getattr(saver, name)))

    def _timed(self, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent += (time.perf_counter() - started) * 1000
        return timed


def run_checkpoint_cost(questions: int = 8, repeats: int = 3, preset: str = "full", delay_ms: float = 0,
                        on_progress: Callable[[int, int], None] | None = None) -> CheckpointCost:
    """Measure checkpointing on ``questions`` of BENCH_QUESTIONS, ``repeats`` times, under ``preset``.

    ``delay_ms`` > 0: on the LLM engine against a local server waiting that long per call; 0: offline.
    Raises ValueError for an unknown preset or fewer than 1 question or repeat.
    """
    if questions < 1 or repeats < 1:
        raise ValueError("--questions and --repeats must be at least 1")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    asked = [BENCH_QUESTIONS[i % len(BENCH_QUESTIONS)] for i in range(questions)]
    with tempfile.TemporaryDirectory(prefix="retrace-checkpoints-") as tmp, \
            DelayedChatServer(max(delay_ms, 0)) as server:
        env = {"RAG_EMBEDDING_MODEL": "hashing"}
        if delay_ms > 0:
            env.update(OPENAI_API_KEY="sk-bench-local", OPENAI_BASE_URL=server.base_url)
        settings = Settings.from_env(env, data_dir=Path(tmp))
        kb = open_knowledge_base(settings, "bench-checkpoints")
        load_samples(kb)
        saver = sqlite_saver(Path(tmp) / CHECKPOINTS_NAME)  # its own, not the process's shared one
        timer = _Timer(saver)
        stats = lexical_stats(kb)

        def context(checkpointer=None) -> RunContext:
            """A fresh engine per run (an empty grade cache): neither way profits from the other's calls."""
            engine = (LLMEngine(settings, LocalEngine(stats), cache=GradeCache(),
                                timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries)
                      if delay_ms > 0 else None)
            made = make_context(settings, kb, engine=engine, checkpoints=False)
            return replace(made, checkpointer=checkpointer)

        options = preset_options(preset)
        run_question(asked[0], context(saver), options)  # warm-up: imports, the BM25 index, the tables
        run_question(asked[0], context(), options)
        without, with_, spent, steps, counts, sizes = [], [], [], [], [], []
        total, done = repeats * len(asked), 0
        for _ in range(repeats):
            for question in asked:
                RETRIEVAL_CACHE.clear()  # neither way profits from the other's retrievals
                without.append(run_question(question, context(), options).duration_ms)
                before = timer.spent
                RETRIEVAL_CACHE.clear()
                run = run_question(question, context(saver), options)
                with_.append(run.duration_ms)
                spent.append(timer.spent - before)
                steps.append(len(run.events))
                counts.append(sum(1 for _ in run_checkpoints(saver, run.thread_id, run.id)))
                sizes.append(checkpoint_bytes(saver, run.thread_id, run.id))
                done += 1
                if on_progress:
                    on_progress(done, total)
        saver.conn.close()
    p50 = statistics.median
    return CheckpointCost(preset=preset, engine=run.engine, runs=len(with_),
                          steps=round(statistics.fmean(steps), 1),
                          run_ms_without=round(p50(without), 1), run_ms_with=round(p50(with_), 1),
                          overhead_ms=round(p50(with_) - p50(without), 1), saver_ms=round(p50(spent), 1),
                          checkpoints=round(statistics.fmean(counts), 1),
                          bytes_per_run=round(statistics.fmean(sizes)),
                          bytes_per_checkpoint=round(sum(sizes) / max(1, sum(counts))))


def format_checkpoint_cost(c: CheckpointCost) -> str:
    """The figures as a few lines of text."""
    return (f"preset {c.preset}, {c.runs} runs each way, {c.steps:g} steps per run ({c.engine} engine)\n"
            f"run p50: {c.run_ms_without:g} ms without checkpoints, {c.run_ms_with:g} ms with "
            f"(+{c.overhead_ms:g} ms)\n"
            f"inside the saver: {c.saver_ms:g} ms per run (p50)\n"
            f"{c.checkpoints:g} checkpoints per run, {c.bytes_per_run / 1000:.1f} kB per run "
            f"({c.bytes_per_checkpoint / 1000:.1f} kB per checkpoint)")
