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
import time
from collections.abc import Callable
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_before_delay, wait_exponential
from tenacity.stop import stop_base

from rag.engines.llm_judge import GradeCache, J, LLMJudgeMixin, usage
from rag.engines.llm_router import LLMRouterMixin
from rag.engines.local import LocalEngine
from rag.errors import TIME_SPENT, describe_error
from rag.secrets import remember, scrub

MIN_ATTEMPT_S = 0.05
"""No attempt starts with less of the run's time budget left than this, in seconds."""

__all__ = ["TIME_SPENT", "CallFailed", "GradeCache", "LLMEngine", "describe_error"]

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


class LLMEngine(LLMJudgeMixin, LLMRouterMixin):
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
        """``call(bounded_llm)`` with retries inside the time budget (tenacity).

        A failure :func:`_retryable` calls for is tried again while ``retry_if()`` holds, at most
        ``max_retries`` times, after a pause of 0.5 s, 1 s, 2 s ...; not when the pause would leave less than
        MIN_ATTEMPT_S of the time budget. Returns (result, attempts). Raises CallFailed with the real wait
        when every attempt failed or the budget left no room for one.
        """
        left = self.remaining_s()
        if left is not None and left < MIN_ATTEMPT_S:
            raise CallFailed(describe_error(None, self.timeout_s), 0)
        started = time.monotonic()
        timeouts: list[float] = []

        def once():
            left = self.remaining_s()
            timeouts.append(self.timeout_s if left is None else max(MIN_ATTEMPT_S, min(self.timeout_s, left)))
            return call(self._bounded(llm, timeouts[-1]))

        stop: stop_base = stop_after_attempt(self.max_retries + 1)
        if left is not None:  # no pause that would leave too little of the budget for another attempt
            stop = stop | stop_before_delay(left - MIN_ATTEMPT_S)
        retrying = Retrying(retry=retry_if_exception(lambda exc: _retryable(exc) and retry_if()), stop=stop,
                            wait=wait_exponential(multiplier=0.5), reraise=True)
        try:
            return retrying(once), len(timeouts)
        except Exception as exc:  # every failure mode falls back; the reason is kept
            waited = time.monotonic() - started
            reason = describe_error(exc, timeouts[-1], waited_s=waited, attempts=len(timeouts))
        raise CallFailed(reason, len(timeouts))

    def _plain(self, llm, messages: list) -> tuple[Any, str | None]:
        """(message, None) or (None, reason): one plain chat call inside the time budget."""
        try:
            message, _ = self._attempt(llm, lambda bounded: bounded.invoke(messages))
        except CallFailed as failed:
            return None, failed.reason
        return message, None

    def _call(self, llm, call: Callable, *,
              retry_if: Callable[[], bool] = lambda: True) -> tuple[Any, str | None]:
        """(``call(bounded_llm)``, None) or (None, reason): :meth:`_attempt` with the failure as a reason."""
        try:
            out, _ = self._attempt(llm, call, retry_if=retry_if)
        except CallFailed as failed:
            return None, failed.reason
        return out, None

    def _structured(self, llm, schema: type[J], system: str, user: str) -> tuple[J | None, str | None]:
        """(record, None) or (None, reason). The record's meta carries calls and tokens."""
        def call(bounded):
            runnable = bounded.with_structured_output(schema, method="json_schema", include_raw=True)
            return runnable.invoke([("system", system), ("user", user)])

        try:
            out, _ = self._attempt(llm, call)
        except CallFailed as failed:
            return None, failed.reason
        prompt_t, completion_t = usage(out.get("raw"))
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
    def _fell_back(record: J, role: str, to: str, reason: str | None) -> J:
        """``record`` (an offline judgment) marked as ``role``'s fallback to ``to`` for ``reason``."""
        why = reason or "the call failed"
        made = 0 if why.startswith(TIME_SPENT) else 1  # no call when none was tried
        return record.with_meta(llm_calls=made, fallback=scrub(f"{role} fell back to {to}: {why}"))
