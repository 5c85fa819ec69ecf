"""The LLM engine.

Every judgment through langchain-openai's ChatOpenAI with structured output, against OpenAI or any
OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp server).

Grading runs concurrently and is cached; generation streams its tokens. Any failure of a call
(timeout, 429 after bounded retries, 5xx, connection refused, unparsable structured output)
falls back to the offline engine's judgment for that step, recorded in the judgment's meta as,
for example, ``grader fell back to lexical: timeout after 20 s``. Token counts come from the
API's usage fields, never from a local tokenizer.
"""

from __future__ import annotations

import copy
import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

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
from rag.engines.llm_router import LLMRouterMixin
from rag.engines.local import LocalEngine
from rag.errors import TIME_SPENT, describe_error
from rag.models import Chunk, Turn, Verdict
from rag.secrets import remember, scrub

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




def _retryable(exc: BaseException) -> bool:
    """429, 5xx, timeouts and connection errors are worth another attempt (as openai-python retries)."""
    import openai

    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


class CallFailed(Exception):
    """Every attempt of an LLM call failed, or the time budget left no room for one."""

    def __init__(self, reason: str, attempts: int) -> None:
        """``reason`` in plain words (:func:`describe_error`); ``attempts`` made (0: none)."""
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


def _usage(message) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


def _sources(chunks: Sequence[Chunk]) -> str:
    return "\n".join(f'<source n="{i}" from="{prompts.fence(c.label())}">\n{prompts.fence(c.text)}\n</source>'
                     for i, c in enumerate(chunks, 1))


class LLMEngine(LLMRouterMixin):
    """Judgments by chat models.

    ``grader_model`` grades chunks and answers; ``generator_model`` generates, rewrites and checks grounding.
    ``fallback`` (the offline engine over the same knowledge base) answers for any step whose call fails.

    Raises nothing from its judgment methods: failures become fallbacks recorded in meta.
    Retries (``max_retries``, exponential backoff from 0.5 s) are made here, not by the client, so that
    every attempt fits in the run's time budget (:meth:`with_deadline`): each attempt waits at most
    min(``timeout_s``, time left), and none starts once the budget is spent.
    """

    name = "openai"

    def __init__(self, settings, fallback: LocalEngine, *, cache: GradeCache | None = None,
                 timeout_s: float = 20.0, max_retries: int = 2, max_concurrency: int = 8) -> None:
        """Build the chat models from ``settings`` (timeouts in seconds); no request is made here."""
        from langchain_openai import ChatOpenAI
        from pydantic import SecretStr

        if not settings.openai_api_key:
            raise ValueError("the LLM engine needs OPENAI_API_KEY (or a key typed in Settings)")
        remember(settings.openai_api_key)
        self.fallback = fallback
        self.cache = cache if cache is not None else _DEFAULT_CACHE  # an empty cache is falsy
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.deadline: float | None = None
        """``time.monotonic()`` by which every call must end (set by :meth:`with_deadline`)."""
        self.max_concurrency = max_concurrency
        self.endpoint = settings.openai_base_url or "https://api.openai.com/v1"
        self.models = {"grader": settings.grader_model, "generator": settings.generator_model}

        def chat(model: str, **kw):
            return ChatOpenAI(model=model, api_key=SecretStr(settings.openai_api_key),
                              base_url=settings.openai_base_url, timeout=timeout_s,
                              max_retries=0, temperature=0, **kw)

        self._grader = chat(settings.grader_model)
        self._generator = chat(settings.generator_model, stream_usage=True)

    def __repr__(self) -> str:  # never show the key
        """The models and endpoint, never the key."""
        return f"LLMEngine(models={self.models}, endpoint={self.endpoint!r})"

    # -- plumbing -------------------------------------------------------------------------
    def with_deadline(self, deadline: float | None) -> LLMEngine:
        """A twin of this engine (same clients and cache) whose calls all end by ``deadline``.

        ``deadline`` is a ``time.monotonic()`` value (None: no deadline). One twin per run, so runs in
        parallel keep their own budgets.
        """
        twin = copy.copy(self)
        twin.deadline = deadline
        return twin

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline (None without one; may be negative)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    @staticmethod
    def _bounded(llm, timeout: float):
        """``llm`` whose requests time out after ``timeout`` seconds, with no client retries.

        The HTTP client is shared; only its options differ.
        """
        root = llm.root_client.with_options(timeout=timeout, max_retries=0)
        return llm.model_copy(update={"root_client": root, "client": root.chat.completions})

    def _attempt(self, llm, call: Callable, *, retry_if: Callable[[], bool] = lambda: True):
        """``call(bounded_llm)`` with retries inside the time budget.

        Returns (result, attempts). Raises CallFailed with the real wait when every attempt failed or
        the budget left no room for one.
        """
        started = time.monotonic()
        attempts, last, timeout = 0, None, self.timeout_s
        while True:
            left = self.remaining_s()
            if left is not None and left < 0.05:
                break
            timeout = self.timeout_s if left is None else max(0.05, min(self.timeout_s, left))
            attempts += 1
            try:
                return call(self._bounded(llm, timeout)), attempts
            except Exception as exc:  # every failure mode falls back; the reason is kept
                last = exc
            if attempts > self.max_retries or not _retryable(last) or not retry_if():
                break
            pause = 0.5 * 2 ** (attempts - 1)
            left = self.remaining_s()
            if left is not None and pause >= left:
                break
            time.sleep(pause)
        waited = time.monotonic() - started
        if last is None:
            raise CallFailed(describe_error(None, timeout), 0)
        raise CallFailed(describe_error(last, timeout, waited_s=waited, attempts=attempts), attempts)

    def _plain(self, llm, messages: list) -> tuple[Any, str | None]:
        """(message, None) or (None, reason): one plain chat call inside the time budget."""
        try:
            message, _ = self._attempt(llm, lambda bounded: bounded.invoke(messages))
        except CallFailed as failed:
            return None, failed.reason
        return message, None

    def _structured(self, llm, schema: type[Judgment], system: str, user: str):
        """(record, None) or (None, reason). The record's meta carries calls and tokens."""
        def call(bounded):
            runnable = bounded.with_structured_output(schema, method="json_schema", include_raw=True)
            return runnable.invoke([("system", system), ("user", user)])

        try:
            out, _ = self._attempt(llm, call)
        except CallFailed as failed:
            return None, failed.reason
        prompt_t, completion_t = _usage(out.get("raw"))
        parsed = out.get("parsed")
        if out.get("parsing_error") is not None or parsed is None:
            return None, "unparsable structured output"
        if not isinstance(parsed, schema):
            try:
                parsed = schema.model_validate(parsed)
            except Exception:
                return None, "unparsable structured output"
        parsed.with_meta(llm_calls=1, prompt_tokens=prompt_t, completion_tokens=completion_t)
        return parsed, None

    @staticmethod
    def _fell_back(record: J, role: str, to: str, reason: str) -> J:
        """``record`` (an offline judgment) marked as ``role``'s fallback to ``to`` for ``reason``."""
        made = 0 if reason.startswith(TIME_SPENT) else 1  # no call when none was tried
        return record.with_meta(llm_calls=made, fallback=scrub(f"{role} fell back to {to}: {reason}"))

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
                 history: Sequence[Turn] = ()) -> Answer:
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
                            sources=_sources(chunks)))]
        else:
            messages = [("system", prompts.GENERATOR_SYSTEM),
                        ("user", prompts.GENERATOR_USER.format(question=prompts.fence(question),
                                                               sources=_sources(chunks)))]
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

        try:
            # A retry after text was shown would repeat it: retry only before the first token.
            (text, final), _ = self._attempt(self._generator, call, retry_if=lambda: not streamed)
        except CallFailed as failed:
            local = self.fallback.generate(question, chunks)
            return self._fell_back(local, "generator", "extractive", failed.reason)
        prompt_t, completion_t = _usage(final)
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
        result, error = self._structured(
            self._grader, AnswerGrade, prompts.ANSWER_GRADER_SYSTEM,
            prompts.ANSWER_GRADER_USER.format(question=prompts.fence(question),
                                              answer=prompts.fence(answer.text)))
        if result is None:
            local = self.fallback.grade_answer(question, answer)
            return self._fell_back(local, "answer check", "term coverage", error)
        return result

    # -- decompose_query --------------------------------------------------------------------
    def decompose(self, question: str, first_hop: Sequence[Chunk]) -> Decomposition:
        """The generator model plans sub-questions from the question and the first hop."""
        result, error = self._structured(
            self._generator, Decomposition, prompts.DECOMPOSER_SYSTEM,
            prompts.DECOMPOSER_USER.format(question=prompts.fence(question),
                                           sources=_sources(first_hop[:4])))
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

        Falls back to the offline engine's topic carry-over on any failure or an empty question.
        """
        result, error = self._structured(
            self._generator, StandaloneQuestion, prompts.CONTEXTUALIZER_SYSTEM,
            prompts.CONTEXTUALIZER_USER.format(turns=prompts.conversation(history),
                                               question=prompts.fence(question)))
        if result is not None and not " ".join(result.question.split()):
            result, error = None, "empty standalone question"
        if result is None:
            local = self.fallback.contextualize(question, history)
            self._fell_back(local, "contextualizer", "topic carry-over", error or "")
            return local
        result.question = " ".join(result.question.split())
        return result
