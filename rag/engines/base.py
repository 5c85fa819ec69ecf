"""The Engine protocol and the records every engine returns (the seeds' schemas)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, Self

from pydantic import BaseModel, Field, PrivateAttr

from rag.models import Chunk, Turn, Verdict


class CallMeta(BaseModel):
    """How a judgment was made.

    LLM calls and tokens spent (from the API's usage fields), whether it came from a cache, and any fallback
    taken with the reason.
    """

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    fallback: str | None = None


class Judgment(BaseModel):
    """Base of engine records. ``meta`` is private, so it never enters an LLM schema."""

    _meta: CallMeta = PrivateAttr(default_factory=CallMeta)

    @property
    def meta(self) -> CallMeta:
        """How this judgment was made (calls, tokens, cache, fallback)."""
        return self._meta

    def with_meta(self, **values: Any) -> Self:
        """Update the :class:`CallMeta` fields named in ``values``; returns this record (same type)."""
        self._meta = self._meta.model_copy(update=values)
        return self


class RelevanceGrade(Judgment):
    """Is this chunk relevant to the question?"""

    relevant: bool = Field(description="True if the chunk helps answer the question.")
    score: Literal["high", "medium", "low"] = Field(description=(
        "How strongly it is relevant. For a chunk that is not relevant: medium when it is partly relevant "
        "(on the question's topic but not enough to answer it), else low."))
    reasoning: str = Field(description="One or two sentences: why.")


RewriteStrategy = Literal["expand_terms", "narrow_focus", "rephrase_intent",
                          "decompose_to_subquestion", "add_context"]


class RewrittenQuery(Judgment):
    """A better retrieval query, with the strategy used to get it."""

    query: str = Field(description="The new search query.")
    strategy: RewriteStrategy = Field(description="Which rewriting strategy was used.")
    reasoning: str = Field(description="Why this rewrite should retrieve better evidence.")


class AnswerCitation(BaseModel):
    """One citation of an answer: marker ``[n]`` refers to chunk ``chunk_id``."""

    n: int = Field(description="The marker number used in the text, as in [n].")
    chunk_id: str = Field(description="The id of the cited chunk.")


class Answer(Judgment):
    """An answer whose sentences carry [n] markers, and what each n cites."""

    text: str = Field(description="The answer, each claim followed by its [n] marker.")
    citations: list[AnswerCitation] = Field(default_factory=list)


class GroundingCheck(Judgment):
    """Is every claim of the answer supported by the chunks it cites? (Self-RAG's IsSup)."""

    grounded: bool
    ungrounded_claims: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0, description="0 to 1.")
    reasoning: str


class AnswerGrade(Judgment):
    """Does the answer address the question? (Self-RAG's IsUse)."""

    useful: bool
    reasoning: str
    answer_span: str | None = Field(
        default=None, description="When useful: the words of the answer that hold the kind of answer "
        "the question asks for (a name, a figure, a date, a place, an expansion), or null.")
    answer_kind: str | None = Field(default=None,
                                    description="The kind of answer ``answer_span`` is, or null.")
    missing_type: str | None = Field(
        default=None, description="When not useful because the answer lacks the kind of answer the "
        "question asks for: that kind (person, organisation, number, date, place, acronym, definition, "
        "list); otherwise null.")


class Decomposition(Judgment):
    """Sub-questions for a multi-hop or comparison question, each retrieved on its own."""

    kind: Literal["single", "bridge", "comparison"] = Field(
        description="single: one retrieval suffices; bridge: a second hop needs an entity found "
                    "by the first; comparison: two or more entities compared.")
    sub_questions: list[str] = Field(
        description="2 to 4 self-contained search questions (empty for single).")
    reasoning: str = Field(description="Why, naming the entities or bridge terms used.")


class StandaloneQuestion(Judgment):
    """A follow-up rewritten with the conversation so far into a question that stands alone."""

    question: str = Field(description="The follow-up as a self-contained question: every "
                          "pronoun or omitted topic replaced by what it refers to in the earlier "
                          "turns. The follow-up unchanged when it already stands alone.")
    reasoning: str = Field(description="What was carried over from which earlier turn, or why "
                           "nothing was.")
    _carried: list[str] = PrivateAttr(default_factory=list)
    _from_turn: int | None = PrivateAttr(default=None)

    @property
    def carried(self) -> list[str]:
        """Terms carried over from an earlier turn (offline engine; empty for an LLM)."""
        return self._carried

    @property
    def from_turn(self) -> int | None:
        """The 1-based turn they came from (offline engine)."""
        return self._from_turn

    def with_carry(self, carried: Sequence[str], from_turn: int | None) -> Self:
        """Record what was carried over and from which 1-based turn; returns self."""
        self._carried, self._from_turn = list(carried), from_turn
        return self


Datasource = Literal["kb", "web", "none"]
RouteMode = Literal["bm25", "dense", "hybrid", "default"]


class RouteQuery(Judgment):
    """Where to look for the answer and how to retrieve it.

    Adaptive routing (Jeong et al. 2024) and routing by query type.
    """

    datasource: Datasource = Field(
        description="kb: the knowledge base covers the question; web: it needs facts the knowledge base "
                    "lacks (recent events, topics it never mentions); none: a greeting, thanks, or a "
                    "question about this chat itself, which needs no retrieval.")
    retrieval_mode: RouteMode = Field(
        description="bm25 for keyword-like questions (error messages, codes, exact names, numbers); dense "
                    "or hybrid for conceptual questions when the embeddings are semantic; default when "
                    "neither fits.")
    hops: Literal["one", "multi"] = Field(
        description="one: a single search can answer it; multi: it compares two or more things, or "
                    "needs a fact about something it does not name (a bridge), so it must be split "
                    "into sub-questions.")
    reasoning: str = Field(description="One or two plain sentences: why.")


class Engine(Protocol):
    """Makes every judgment of the graph. Implementations: LocalEngine (offline), LLMEngine."""

    name: str
    """``local`` or ``openai``."""
    models: dict[str, str]
    """Role -> model name (empty for the offline engine)."""

    def grade(self, question: str, chunks: Sequence[Chunk], *,
              partial: bool = False) -> list[RelevanceGrade]:
        """One grade per chunk, in order.

        ``partial``: the question is one hop of a decomposed multi-hop question, so a chunk answering part of
        it is relevant.
        """

    def rewrite(self, question: str, query: str, *, verdicts: Sequence[Verdict],
                chunks: Sequence[Chunk], ungrounded_claims: Sequence[str],
                previous_queries: Sequence[str]) -> RewrittenQuery:
        """A new query, given the failed chunks and their grade reasons, or the ungrounded claims.

        ``previous_queries`` are the queries already retrieved with, oldest first (the first
        is the question itself).
        """

    def generate(self, question: str, chunks: Sequence[Chunk],
                 on_token: Callable[[str], None] | None = None, *,
                 history: Sequence[Turn] = (), critique: bool = False) -> Answer:
        """A cited answer from ``chunks``; citations refer to chunks by id.

        ``on_token`` receives the answer text as it is produced; ``history`` is the thread's earlier
        turns (an LLM sees the last few as conversation context; the offline engine ignores it).
        ``critique`` (the answer check is on) asks for the lead the answer check would accept when the
        evidence holds one (Self-RAG's critique-guided selection, Asai et al. 2023); an LLM engine,
        which writes its answer whole, ignores it.
        """

    def check_grounding(self, answer: Answer, chunks: Sequence[Chunk]) -> GroundingCheck:
        """Check each claim of ``answer`` against the chunks it cites."""

    def grade_answer(self, question: str, answer: Answer) -> AnswerGrade:
        """Does ``answer`` address ``question``?"""

    def decompose(self, question: str, first_hop: Sequence[Chunk]) -> Decomposition:
        """Sub-questions for ``question``, given the chunks a first retrieval returned."""

    def route(self, question: str, *, sources: Sequence[str] = (), web_available: bool = False,
              semantic: bool = False, default_mode: str = "bm25", lacking: Sequence[str] = ()) -> RouteQuery:
        """Where to look and how to retrieve.

        ``sources``: document names of the knowledge base; ``semantic``: its embeddings are semantic (not
        the offline hashing ones); ``lacking``: names in the question no passage of the knowledge base
        mentions.
        """

    def reply(self, question: str, on_token: Callable[[str], None] | None = None) -> Answer:
        """A plain reply with no retrieval, for a greeting or a question about the chat itself."""

    def holds_answer(self, question: str, chunk: Chunk) -> bool:
        """Whether ``chunk`` alone holds a passage of the kind of answer ``question`` asks for.

        The offline reading (:meth:`rag.engines.typed.TypedMixin.holds_answer`); a seek_answer_type correction
        puts such chunks first in the evidence.
        """

    def missing_terms(self, question: str) -> tuple[list[str], float]:
        """(question words the knowledge base never uses, their share of the question's IDF weight)."""

    def contextualize(self, question: str, history: Sequence[Turn]) -> StandaloneQuestion:
        """``question``.

        (a follow-up) as a standalone question, given the earlier turns of its thread, oldest first.
        """
