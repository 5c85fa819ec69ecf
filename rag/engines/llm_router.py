"""route_question and reply_directly through the LLM engine (structured output ``RouteQuery``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rag.engines import prompts
from rag.engines.base import Answer, RouteQuery
from rag.engines.llm_judge import usage
from rag.engines.local import LocalEngine
from rag.models import Chunk


class LLMRouterMixin:
    """The router (grader model) and the direct reply (generator model) of :class:`rag.engines.llm.LLMEngine`.

    Any failure falls back to the offline rules (:class:`rag.engines.router.RouterMixin`), recorded in meta.
    """

    fallback: LocalEngine
    _grader: Any
    _generator: Any

    def _structured(self, llm, schema: type, system: str, user: str) -> tuple[Any, str | None]:
        raise NotImplementedError

    def _plain(self, llm, messages: list) -> tuple[Any, str | None]:
        raise NotImplementedError

    @staticmethod
    def _fell_back(record: Any, role: str, to: str, reason: str) -> Any:
        raise NotImplementedError

    def missing_terms(self, question: str) -> tuple[list[str], float]:
        """Question words the knowledge base never uses, and their share of its IDF weight."""
        return self.fallback.missing_terms(question)

    def holds_answer(self, question: str, chunk: Chunk) -> bool:
        """Whether ``chunk`` alone holds the kind of answer asked for, as the offline engine reads it."""
        return self.fallback.holds_answer(question, chunk)

    def route(self, question: str, *, sources: Sequence[str] = (), web_available: bool = False,
              semantic: bool = False, default_mode: str = "bm25", lacking: Sequence[str] = ()) -> RouteQuery:
        """The grader model routes the question.

        It is told the knowledge base's documents (``sources``, fenced as data), the question words its
        vocabulary lacks, whether web search is available and whether the embeddings are semantic.
        Falls back to the rules on any failure.
        """
        missing, share = self.missing_terms(question)
        result, error = self._structured(
            self._grader, RouteQuery, prompts.ROUTER_SYSTEM,
            prompts.ROUTER_USER.format(
                question=prompts.fence(question),
                sources="\n".join(f"- {prompts.fence(s)}" for s in list(sources)[:40]) or "(empty)",
                missing=(", ".join(prompts.fence(w) for w in missing[:12]) or "(none)")
                + (f" ({round(100 * share)}% of the question's weight)" if missing else "")
                + ("; names no passage mentions: " + ", ".join(prompts.fence(n) for n in lacking)
                   if lacking else ""),
                web="yes" if web_available else "no",
                embeddings="semantic" if semantic else "lexical (offline hashing)",
                default=default_mode))
        if result is None:
            local = self.fallback.route(question, sources=sources, web_available=web_available,
                                        semantic=semantic, default_mode=default_mode, lacking=lacking)
            return self._fell_back(local, "router", "rules", error or "")
        return result

    def reply(self, question: str, on_token: Callable[[str], None] | None = None) -> Answer:
        """The generator model replies plainly to a greeting or a question about the chat."""
        message, error = self._plain(self._generator,
                                     [("system", prompts.DIRECT_SYSTEM), ("user", prompts.fence(question))])
        if message is None:
            local = self.fallback.reply(question)
            return self._fell_back(local, "direct reply", "a fixed reply", error or "")
        text = str(message.content).strip()
        if on_token is not None and text:
            on_token(text)
        prompt_t, completion_t = usage(message)
        return Answer(text=text, citations=[]).with_meta(llm_calls=1, prompt_tokens=prompt_t,
                                                         completion_tokens=completion_t)
