"""Less waiting: the retrieval cache, the first hop prefetched during routing, and speculative generation.

None of these changes a verdict: a cached retrieval is the same search over the same knowledge-base
revision; a prefetched plan or grade is the one the node would have asked for; a speculative answer is
used only when the evidence grading kept is exactly the evidence it was generated from.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rag.engines.base import Answer, CallMeta, Decomposition
from rag.graph.context import RunContext
from rag.graph.evidence import with_context
from rag.models import Chunk, Turn
from rag.store.retrieval import RetrievalMode
from rag.store.retrieval import retrieve as default_retriever
from rag.store.semantic_cache import Reuse, normalise


class RetrievalCache:
    """A thread-safe LRU of retrieval results.

    Keyed by (collection id, knowledge-base fingerprint, query, k, mode): an identical query over the same
    knowledge-base revision returns the same chunks without searching again. Holds chunk records only.
    """

    def __init__(self, maxsize: int = 512) -> None:
        """An empty cache holding at most ``maxsize`` results (least recently used evicted first)."""
        self.maxsize = maxsize
        self._data: OrderedDict[tuple, list[Chunk]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(kb, query: str, k: int, mode: str) -> tuple | None:
        """The cache key, or None when ``kb`` cannot say which revision it holds."""
        fingerprint = getattr(kb, "fingerprint", None)
        if fingerprint is None:
            return None
        try:
            return (str(kb.collection.id), *fingerprint(), " ".join(query.split()), k, mode)
        except Exception:  # a store that cannot answer is simply not cached
            return None

    def get(self, key: tuple) -> list[Chunk] | None:
        """A copy of the chunks cached under ``key`` (now most recently used), or None."""
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return None if found is None else list(found)

    def put(self, key: tuple, chunks: Sequence[Chunk]) -> None:
        """Cache ``chunks`` under ``key``."""
        with self._lock:
            self._data[key] = list(chunks)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._data.clear()


RETRIEVAL_CACHE = RetrievalCache()
"""The process's retrieval cache, used by the graph with the default retriever."""


def retrieve_cached(ctx: RunContext, query: str, mode: RetrievalMode,
                    k: int | None = None) -> tuple[list[Chunk], Reuse | None]:
    """(the top ``k`` chunks for ``query`` (default top_k), where they came from).

    None when searched now; else a :class:`Reuse` naming the query whose results were reused: ``query``
    itself from the retrieval cache, or a similar question from the semantic cache (the run context's).
    """
    k = k or ctx.options.top_k
    default = ctx.retriever is default_retriever
    key = RetrievalCache.key(ctx.kb, query, k, mode) if default else None
    if key is not None and (hit := RETRIEVAL_CACHE.get(key)) is not None:
        return hit, Reuse(normalise(query))
    def search() -> list[Chunk]:
        return ctx.retriever(ctx.kb, query, k, mode)
    semantic = ctx.semantic_cache if default else None
    found, reuse = semantic.retrieve(ctx.kb, query, k, mode, search) if semantic else (search(), None)
    if key is not None and reuse is None:  # a reused result keeps naming its question next time
        RETRIEVAL_CACHE.put(key, found)
    return found, reuse


def is_llm(ctx: RunContext) -> bool:
    """True when the run's engine makes calls (not the offline engine)."""
    return getattr(ctx.engine, "name", "local") != "local"


class Speculation:
    """An answer generated while grading still runs.

    From the evidence grading would keep if every chunk passed. Its tokens are buffered; :meth:`replay`
    hands them on (as they come) once generate accepts it.
    """

    def __init__(self, ctx: RunContext, question: str, evidence: Sequence[Chunk],
                 history: Sequence[Turn] = ()) -> None:
        """Start generating for ``question`` from ``evidence`` in a background thread."""
        self.question = question
        self.evidence_ids = [c.id for c in evidence]
        self.answer: Answer | None = None
        self._tokens: list[str] = []
        self._done = False
        self._cond = threading.Condition()
        extra = {"history": list(history)} if history else {}
        self._thread = threading.Thread(target=self._run, args=(ctx, list(evidence), extra), daemon=True,
                                        name="speculate")
        self._thread.start()

    def _run(self, ctx: RunContext, evidence: list[Chunk], extra: dict) -> None:
        try:
            self.answer = ctx.engine.generate(self.question, evidence, on_token=self._token, **extra)
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def _token(self, text: str) -> None:
        with self._cond:
            self._tokens.append(text)
            self._cond.notify_all()

    def accepts(self, question: str, evidence: Sequence[Chunk]) -> bool:
        """True when it was generated for ``question`` from exactly ``evidence`` (same chunks, same order)."""
        return question == self.question and [c.id for c in evidence] == self.evidence_ids

    def replay(self, on_token: Callable[[str], None]) -> Answer | None:
        """Hand every token to ``on_token`` as it comes; the answer when done (None if generation raised)."""
        sent = 0
        while True:
            with self._cond:
                while not self._done and len(self._tokens) <= sent:
                    self._cond.wait()
                fresh, done = self._tokens[sent:], self._done
            for text in fresh:
                on_token(text)
            sent += len(fresh)
            if done and sent == len(self._tokens):
                return self.answer

    def discarded_meta(self) -> CallMeta:
        """What a discarded speculation spent (one call, with tokens when it has finished)."""
        if self._done and self.answer is not None:
            m = self.answer.meta
            return CallMeta(llm_calls=m.llm_calls, prompt_tokens=m.prompt_tokens,
                            completion_tokens=m.completion_tokens)
        return CallMeta(llm_calls=1)


def speculative_evidence(kept: Sequence[Chunk], retrieved: Sequence[Chunk], top_k: int) -> list[Chunk]:
    """The evidence grade_documents leaves when every retrieved chunk is relevant (kept ones first)."""
    seen = {c.id for c in kept}
    return (list(kept) + [c for c in retrieved if c.id not in seen])[:top_k]


@dataclass
class Prefetch:
    """The first hop for a question and what was done with it in the same round.

    Its decomposition plan, its grades (they land in the LLM engine's grade cache), and a speculative
    answer from it.
    """

    question: str
    mode: RetrievalMode
    first_hop: list[Chunk]
    plan: Decomposition | None = None
    speculation: Speculation | None = None
    metas: list[CallMeta] = field(default_factory=list)
    """Calls spent on the grades (the plan's own meta travels with the plan)."""


def prefetch(ctx: RunContext, question: str, mode: RetrievalMode, *, grade: bool, plan: bool = True,
             speculate: Callable[[list[Chunk]], bool] | None = None,
             history: Sequence[Turn] = ()) -> Prefetch:
    """Retrieve the first hop, then do in one round what the next nodes would do one after another.

    Plan its decomposition (``plan``, when decomposition is on), grade it (``grade``) and, when
    ``speculate(first_hop)`` says so, start a speculative answer from it.
    """
    found, _ = retrieve_cached(ctx, question, mode)
    # the chunks exactly as retrieve hands them to grading (a cut sentence read to its end), so the grades
    # land under the keys grade_documents looks up and the speculative answer reads the same text
    first_hop = with_context(ctx.kb, found)
    engine, o = ctx.engine, ctx.options
    spec = (Speculation(ctx, question, first_hop[:o.top_k], history)
            if speculate is not None and grade and first_hop and speculate(first_hop) else None)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="prefetch") as pool:
        planned = pool.submit(engine.decompose, question, first_hop) if plan and o.decomposition else None
        grades: Any = pool.submit(engine.grade, question, first_hop) if grade and first_hop else None
        out = Prefetch(question=question, mode=mode, first_hop=first_hop,
                       plan=planned.result() if planned else None, speculation=spec)
        if grades is not None:
            out.metas = [g.meta.model_copy(update={"fallback": None}) for g in grades.result()]
    return out


def speculate_while_grading(state: Mapping[str, Any], ctx: RunContext,
                            chunks: list[Chunk]) -> tuple[Speculation | None, list[CallMeta]]:
    """The speculative answer generate may use.

    The one routing started, or (LLM engine, first grading of a question not decomposed) one started now
    from the evidence grading keeps if every chunk passes. It runs while the chunks are graded; generate
    uses it only when the evidence is exactly that. Returns (the speculation or None, the calls of an
    earlier speculation it replaces, which still count).
    """
    o = ctx.options
    question = state["question"]
    guess = speculative_evidence(state.get("documents", []), chunks, o.top_k)
    spec = ctx.live.get("speculation")
    if isinstance(spec, Speculation) and spec.accepts(question, guess):
        return spec, []
    dropped = [spec.discarded_meta()] if isinstance(spec, Speculation) else []
    first = not state.get("rewrites") and not state.get("documents") and not state.get("generations")
    if not (is_llm(ctx) and first and chunks and not state.get("sub_queries")):
        return None, dropped
    history = list(state.get("history") or []) if o.use_history else []
    return Speculation(ctx, question, guess, history), dropped
