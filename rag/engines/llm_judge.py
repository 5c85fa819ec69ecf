"""The LLM engine's judgments: grading, rewriting, generating, answer checks, decomposing, contextualizing.

Each asks a chat model through the engine's plumbing (:class:`rag.engines.llm.LLMEngine`) and falls back to
the offline engine's judgment for that step when the call fails, with why in the judgment's meta.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from rag.answer_types import TYPES, describe, expected_type
from rag.engines import prompts
from rag.engines.base import (
    Answer,
    AnswerCitation,
    AnswerGrade,
    Decomposition,
    GroundingCheck,
    Judgment,
    RelevanceGrade,
    RewrittenQuery,
    StandaloneQuestion,
)
from rag.engines.contextualize import self_contained
from rag.engines.local import LocalEngine
from rag.models import Chunk, Turn, Verdict

J = TypeVar("J", bound=Judgment)
"""A judgment type: a fallback returns the same type it was given."""

_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


class GradeCache:
    """Thread-safe LRU cache of relevance grades keyed by (question, chunk text hash, model, endpoint).

    Holds no secrets, so one instance may serve every session of the process.
    """

    def __init__(self, maxsize: int = 20_000) -> None:
        """An empty cache holding at most ``maxsize`` grades (least recently used evicted first)."""
        self.maxsize = maxsize
        self._data: OrderedDict[tuple, RelevanceGrade] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(question: str, chunk: Chunk, model: str, endpoint: str) -> tuple:
        """The cache key: (stripped question, SHA-256 of the chunk text, model, endpoint)."""
        return (question.strip(), hashlib.sha256(chunk.text.encode()).hexdigest(), model, endpoint)

    def get(self, key: tuple) -> RelevanceGrade | None:
        """The grade cached under ``key`` (now most recently used), or None."""
        with self._lock:
            grade = self._data.get(key)
            if grade is not None:
                self._data.move_to_end(key)
            return grade

    def put(self, key: tuple, grade: RelevanceGrade) -> None:
        """Cache ``grade`` under ``key``, evicting the least recently used beyond ``maxsize``."""
        with self._lock:
            self._data[key] = grade
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        """The number of cached grades."""
        return len(self._data)


_DEFAULT_CACHE = GradeCache()


def usage(message) -> tuple[int, int]:
    """(prompt tokens, completion tokens) from a chat message's usage fields (0 when absent)."""
    found = getattr(message, "usage_metadata", None) or {}
    return int(found.get("input_tokens", 0)), int(found.get("output_tokens", 0))


def sources_block(chunks: Sequence[Chunk]) -> str:
    """``chunks`` as numbered ``<source n="i">`` blocks (1-based), fenced as data."""
    return "\n".join(f'<source n="{i}" from="{prompts.fence(c.label())}">\n{prompts.fence(c.text)}\n</source>'
                     for i, c in enumerate(chunks, 1))


class LLMJudgeMixin:
    """The judgments of :class:`rag.engines.llm.LLMEngine` other than routing (:mod:`rag.engines.llm_router`).

    Raises nothing: any failed call becomes the offline engine's judgment, its fallback recorded in meta.
    """

    fallback: LocalEngine
    cache: GradeCache
    models: dict[str, str]
    endpoint: str
    max_concurrency: int
    _grader: Any
    _generator: Any

    def _structured(self, llm, schema: type[J], system: str, user: str) -> tuple[J | None, str | None]:
        raise NotImplementedError

    def _call(self, llm, call: Callable, *,
              retry_if: Callable[[], bool] = lambda: True) -> tuple[Any, str | None]:
        raise NotImplementedError

    @staticmethod
    def _fell_back(record: J, role: str, to: str, reason: str | None) -> J:
        raise NotImplementedError

    # -- grade_documents --------------------------------------------------------------------
    def _grade_one(self, question: str, chunk: Chunk, partial: bool = False) -> RelevanceGrade:
        key = self.cache.key(question, chunk, self.models["grader"], self.endpoint) + (partial,)
        cached = self.cache.get(key)
        if cached is not None:
            return cached.model_copy().with_meta(llm_calls=0, prompt_tokens=0, completion_tokens=0,
                                                 cached=True)
        system = prompts.GRADER_SYSTEM + (prompts.GRADER_PARTIAL if partial else "")
        grade, error = self._structured(
            self._grader, RelevanceGrade, system,
            prompts.GRADER_USER.format(question=prompts.fence(question),
                                       source=prompts.fence(chunk.source), page=chunk.page,
                                       text=prompts.fence(chunk.text)))
        if grade is None:
            local = self.fallback.grade(question, [chunk], partial=partial)[0]
            return self._fell_back(local, "grader", "lexical", error)
        self.cache.put(key, grade.model_copy())
        return grade

    def grade(self, question: str, chunks: Sequence[Chunk], *,
              partial: bool = False) -> list[RelevanceGrade]:
        """One grade per chunk, graded concurrently (wall time about one round trip)."""
        if not chunks:
            return []
        workers = max(1, min(self.max_concurrency, len(chunks)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grade") as pool:
            return list(pool.map(lambda c: self._grade_one(question, c, partial), chunks))

    # -- rewrite_query ----------------------------------------------------------------------
    def rewrite(self, question: str, query: str, *, verdicts: Sequence[Verdict],
                chunks: Sequence[Chunk], ungrounded_claims: Sequence[str] = (),
                previous_queries: Sequence[str] = ()) -> RewrittenQuery:
        """A new query from the failed chunks and their grade reasons (or ungrounded claims)."""
        reasons = {v.chunk_id: v for v in verdicts}
        graded = "\n".join(
            f'<chunk source="{prompts.fence(c.label())}" relevant="{reasons[c.id].relevant}" '
            f'reason="{prompts.fence(reasons[c.id].reasoning)}">{prompts.fence(c.text[:600])}</chunk>'
            if c.id in reasons else f'<chunk source="{prompts.fence(c.label())}">'
            f'{prompts.fence(c.text[:600])}</chunk>' for c in chunks)
        tried = list(dict.fromkeys([*previous_queries, query]))
        result, error = self._structured(
            self._generator, RewrittenQuery, prompts.REWRITER_SYSTEM,
            prompts.REWRITER_USER.format(
                question=prompts.fence(question),
                queries="\n".join(f"- {prompts.fence(q)}" for q in tried),
                chunks=graded or "(none)",
                claims="\n".join(f"- {prompts.fence(c)}" for c in ungrounded_claims) or "(none)"))
        if result is not None and result.query.strip().lower() in {q.strip().lower() for q in tried}:
            error, result = "the model repeated a query already tried", None
        if result is None:
            local = self.fallback.rewrite(question, query, verdicts=verdicts, chunks=chunks,
                                          ungrounded_claims=ungrounded_claims,
                                          previous_queries=previous_queries)
            return self._fell_back(local, "rewriter", "pseudo-relevance feedback", error)
        return result

    # -- generate ---------------------------------------------------------------------------
    def generate(self, question: str, chunks: Sequence[Chunk],
                 on_token: Callable[[str], None] | None = None, *,
                 history: Sequence[Turn] = (), critique: bool = False) -> Answer:
        """Stream a cited answer; ``on_token`` receives each piece of text as it arrives.

        Citation n refers to ``chunks[n-1]``; markers outside 1..len(chunks) are not cited.
        ``history``: the thread's earlier turns; the last few are given, fenced, as
        conversation context (the evidence rules do not change).
        """
        if not chunks:
            return Answer(text="I found no evidence to answer this question.", citations=[])
        if history:
            messages = [("system", prompts.GENERATOR_SYSTEM + prompts.GENERATOR_HISTORY),
                        ("user", prompts.GENERATOR_USER_WITH_HISTORY.format(
                            turns=prompts.conversation(history), question=prompts.fence(question),
                            sources=sources_block(chunks)))]
        else:
            messages = [("system", prompts.GENERATOR_SYSTEM),
                        ("user", prompts.GENERATOR_USER.format(question=prompts.fence(question),
                                                               sources=sources_block(chunks)))]
        streamed: list[str] = []

        def call(bounded):
            text, final = "", None
            for piece in bounded.stream(messages):
                final = piece if final is None else final + piece
                if piece.content:
                    text += piece.content
                    streamed.append(piece.content)
                    if on_token is not None:
                        on_token(piece.content)
            return text, final

        # A retry after text was shown would repeat it: retry only before the first token.
        out, error = self._call(self._generator, call, retry_if=lambda: not streamed)
        if out is None:
            local = self.fallback.generate(question, chunks)
            return self._fell_back(local, "generator", "extractive", error or "")
        text, final = out
        prompt_t, completion_t = usage(final)
        used: dict[int, str] = {}
        for group in _CITE.findall(text):
            for n in (int(x) for x in group.split(",")):
                if 1 <= n <= len(chunks):
                    used.setdefault(n, chunks[n - 1].id)
        answer = Answer(text=text.strip(),
                        citations=[AnswerCitation(n=n, chunk_id=cid) for n, cid in sorted(used.items())])
        return answer.with_meta(llm_calls=1, prompt_tokens=prompt_t, completion_tokens=completion_t)

    # -- check_grounding --------------------------------------------------------------------
    def check_grounding(self, answer: Answer, chunks: Sequence[Chunk]) -> GroundingCheck:
        """The generator model checks each claim against the sources it cites."""
        by_id = {c.id: c for c in chunks}
        cited = [(a.n, by_id[a.chunk_id]) for a in answer.citations if a.chunk_id in by_id]
        sources = "\n".join(f'<source n="{n}" from="{prompts.fence(c.label())}">\n'
                            f'{prompts.fence(c.text)}\n</source>' for n, c in cited)
        result, error = self._structured(
            self._generator, GroundingCheck, prompts.GROUNDING_SYSTEM,
            prompts.GROUNDING_USER.format(answer=prompts.fence(answer.text),
                                          sources=sources or "(no source cited)"))
        if result is None:
            local = self.fallback.check_grounding(answer, chunks)
            return self._fell_back(local, "grounding check", "lexical support", error)
        if result.ungrounded_claims and result.grounded:
            result.grounded = False  # the list decides, whatever the flag says
        return result

    # -- grade_answer -----------------------------------------------------------------------
    def grade_answer(self, question: str, answer: Answer) -> AnswerGrade:
        """The grader model judges whether the answer addresses the question."""
        kind = expected_type(question)
        result, error = self._structured(
            self._grader, AnswerGrade, prompts.ANSWER_GRADER_SYSTEM,
            prompts.ANSWER_GRADER_USER.format(question=prompts.fence(question),
                                              expects=describe(kind) if kind else "",
                                              answer=prompts.fence(answer.text)))
        if result is None:
            local = self.fallback.grade_answer(question, answer)
            return self._fell_back(local, "answer check", "term coverage", error)
        if result.useful or result.missing_type not in TYPES:
            result.missing_type = None
        return result

    # -- decompose_query --------------------------------------------------------------------
    def decompose(self, question: str, first_hop: Sequence[Chunk]) -> Decomposition:
        """The generator model plans sub-questions from the question and the first hop."""
        result, error = self._structured(
            self._generator, Decomposition, prompts.DECOMPOSER_SYSTEM,
            prompts.DECOMPOSER_USER.format(question=prompts.fence(question),
                                           sources=sources_block(first_hop[:4])))
        if result is not None:
            subs = [q.strip() for q in result.sub_questions if q.strip()][:4]
            if result.kind != "single" and len(subs) < 2:
                error, result = "fewer than 2 sub-questions for a multi-hop question", None
            else:
                result.sub_questions = subs if result.kind != "single" else []
        if result is None:
            local = self.fallback.decompose(question, first_hop)
            return self._fell_back(local, "decomposer", "bridge terms", error)
        return result

    # -- contextualize_question -------------------------------------------------------------
    def contextualize(self, question: str, history: Sequence[Turn]) -> StandaloneQuestion:
        """The generator model rewrites the follow-up with the last few turns (fenced as data).

        A question that surely stands alone (:func:`self_contained`: the offline rules leave it unchanged and
        no word of it could point back) is kept exactly as it is, without asking the model: a model must
        never carry an earlier turn's name into it.
        Falls back to the offline engine's rules on any failure or an empty question.
        """
        local = self.fallback.contextualize(question, history)
        if self_contained(question, local.question):
            local.reasoning = f"{local.reasoning} (offline rules; the model was not asked)"
            return local
        result, error = self._structured(
            self._generator, StandaloneQuestion, prompts.CONTEXTUALIZER_SYSTEM,
            prompts.CONTEXTUALIZER_USER.format(turns=prompts.conversation(history),
                                               question=prompts.fence(question)))
        if result is not None and not " ".join(result.question.split()):
            result, error = None, "empty standalone question"
        if result is None:
            self._fell_back(local, "contextualizer", "the offline rules", error or "")
            return local
        result.question = " ".join(result.question.split())
        return result
