"""Settings (environment, data directory, models, keys) and per-run Options (toggles, top_k, budgets)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

DEFAULT_COLLECTION = "default"
DEFAULT_MAX_UPLOAD_MB = 50.0


_PLAIN_ERRORS = {"int_parsing": "must be a number", "float_parsing": "must be a number",
                 "greater_than": "must be > 0"}
"""Pydantic error type -> the words a malformed variable is reported with."""


class Settings(BaseSettings):
    """Process-wide configuration from the environment and a ``.env`` file (pydantic-settings).

    Each field is read from the variable its alias names (``RAG_DATA_DIR``, ``OPENAI_API_KEY`` ...); an
    empty or blank variable counts as unset. A variable set in the environment wins over ``.env``; neither
    is ever written back. Keys are held only in memory; ``repr`` never shows them.
    """

    model_config = SettingsConfigDict(frozen=True, env_file=".env", env_file_encoding="utf-8", extra="ignore",
                                      populate_by_name=True)

    data_dir: Path = Field(Path("data"), validation_alias="RAG_DATA_DIR")
    """Everything persistent lives here: ``chroma/``, ``runs.sqlite``, ``checkpoints.sqlite`` and
    ``semantic_cache.sqlite``."""
    chroma_host: str | None = Field(None, validation_alias="CHROMA_HOST")
    """When set, use a Chroma server (``chroma run``) instead of the embedded store."""
    chroma_port: int = Field(8000, validation_alias="CHROMA_PORT")
    database_url: str | None = Field(None, validation_alias="RAG_DATABASE_URL", repr=False)
    """When set (``postgresql://user@host:5432/retrace``), runs, conversations, feedback, comparisons, the
    graph's checkpoints, the keyword index and the semantic cache live in that database, shared by every
    replica; unset: SQLite files in ``data_dir``.
    Not shown by ``repr`` (it may hold a password)."""
    max_upload_mb: float = Field(DEFAULT_MAX_UPLOAD_MB, validation_alias="RAG_MAX_UPLOAD_MB")
    """Files larger than this (in MB, 10^6 bytes) are refused before parsing."""
    openai_api_key: str | None = Field(None, validation_alias="OPENAI_API_KEY", repr=False)
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    grader_model: str = Field("gpt-4o-mini", validation_alias="RAG_GRADER_MODEL")
    generator_model: str = Field("gpt-4o", validation_alias="RAG_GENERATOR_MODEL")
    embedding_model: str = Field("text-embedding-3-small", validation_alias="RAG_EMBEDDING_MODEL")
    tavily_api_key: str | None = Field(None, validation_alias="TAVILY_API_KEY", repr=False)
    tavily_api_base_url: str | None = Field(None, validation_alias="TAVILY_API_BASE_URL")
    llm_timeout_s: float = Field(20.0, validation_alias="RAG_LLM_TIMEOUT_S")
    """Per-call timeout of the LLM engine, in seconds."""
    llm_max_retries: int = Field(2, validation_alias="RAG_LLM_MAX_RETRIES")
    """Retries (with exponential backoff) on 429, 5xx, timeouts and connection errors, all within the
    run's time budget."""
    run_deadline_s: float = Field(60.0, gt=0, validation_alias="RAG_RUN_DEADLINE_S")
    """Time budget of one run, in seconds (Options.deadline_s overrides it per run)."""
    semantic_cache_threshold: float = Field(0.97, ge=0, le=1, validation_alias="RAG_SEMANTIC_CACHE_THRESHOLD")
    """Cosine similarity of two questions' embeddings from which the second reuses the first one's
    retrieval (:mod:`rag.store.semantic_cache`); ``0`` or ``off`` turns the semantic cache off."""

    @field_validator("semantic_cache_threshold", mode="before")
    @classmethod
    def _off_is_zero(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("off", "false", "no", "none"):
            return 0.0
        return value

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v.strip() if isinstance(v, str) else v for k, v in data.items()
                    if not (isinstance(v, str) and not v.strip())}
        return data

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, dotenv: bool | None = None,
                 **overrides) -> Settings:
        """Settings from ``env`` (default ``os.environ``) and, below it, a ``.env`` file; overrides win.

        ``dotenv``: read the ``.env`` file too (default: only when ``env`` is None, so that a given
        mapping is all that is read). The file is ``./.env``, or the one RAG_ENV_FILE names (empty: none).

        Reads RAG_DATA_DIR, CHROMA_HOST, CHROMA_PORT, RAG_DATABASE_URL, RAG_MAX_UPLOAD_MB, OPENAI_API_KEY,
        OPENAI_BASE_URL, RAG_GRADER_MODEL, RAG_GENERATOR_MODEL, RAG_EMBEDDING_MODEL,
        TAVILY_API_KEY, TAVILY_API_BASE_URL, RAG_LLM_TIMEOUT_S, RAG_LLM_MAX_RETRIES,
        RAG_RUN_DEADLINE_S, RAG_SEMANTIC_CACHE_THRESHOLD, RAG_DATABASE_URL. An override of None is ignored.
        Raises ValueError (one line naming the variable) on a malformed number, a deadline <= 0 or a
        threshold outside [0, 1].
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        env_file = os.environ.get("RAG_ENV_FILE", ".env") or None
        try:
            if env is None and dotenv is not False:
                return cls(_env_file=env_file, **given)
            fields = cls.model_fields  # an override wins over its variable
            named = {str(fields[k].validation_alias or k) if k in fields else k: v for k, v in given.items()}
            values = {**(os.environ if env is None else env), **named}
            sources: list[PydanticBaseSettingsSource] = [InitSettingsSource(cls, init_kwargs=values)]
            if dotenv and env_file:
                sources.append(DotEnvSettingsSource(cls, env_file=env_file))
            return cls(_build_sources=(tuple(sources), values))
        except ValidationError as exc:
            error = exc.errors()[0]
            name = ".".join(str(part) for part in error["loc"])
            words = _PLAIN_ERRORS.get(error["type"], error["msg"])
            raise ValueError(f"{name} {words}, got {error.get('input')!r}") from None

    def with_(self, **changes) -> Settings:
        """A copy with ``changes`` applied (for per-session keys typed into the UI)."""
        return self.model_copy(update=changes)

    @property
    def max_upload_bytes(self) -> int:
        """``max_upload_mb`` in bytes (10^6 bytes a MB)."""
        return int(self.max_upload_mb * 1_000_000)

    @property
    def engine_name(self) -> str:
        """``"local"`` (offline) unless an OpenAI key is configured."""
        return "openai" if self.openai_api_key else "local"

    @property
    def embedding_backend(self) -> str:
        """``openai`` when a key is set.

        (unless RAG_EMBEDDING_MODEL is ``hashing``), else ``hashing``, the offline embeddings.
        """
        if self.openai_api_key and self.embedding_model != "hashing":
            return "openai"
        return "hashing"

    @property
    def web_search_enabled(self) -> bool:
        """True when a Tavily key is set (web_search can run)."""
        return bool(self.tavily_api_key)


PresetName = Literal["naive", "crag", "self-rag", "full"]


class Options(BaseModel):
    """Per-run switches and budgets. Everything off is plain single-pass RAG."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grading: bool = True
    """Grade every retrieved chunk for relevance (grade_documents)."""
    rewriting: bool = True
    """Rewrite the query when the evidence is weak (rewrite_query)."""
    web_fallback: bool = True
    """Fall back to web search when the documents are not enough (web_search)."""
    grounding_check: bool = True
    """Check that every answer sentence is supported by the chunks it cites (check_grounding)."""
    answer_check: bool = True
    """Check that the answer addresses the question (grade_answer)."""
    top_k: int = Field(6, ge=1, le=50)
    """Chunks retrieved per query."""
    min_relevant: int = Field(2, ge=1, le=50)
    """Relevant chunks needed to generate without a caveat."""
    max_rewrites: int = Field(2, ge=0, le=5)
    """Rewrite budget for one run."""
    decomposition: bool = True
    """Split multi-hop and comparison questions into sub-questions, each retrieved on its own
    (decompose_query)."""
    use_history: bool = True
    """Use the thread's earlier turns (contextualize_question rewrites a follow-up into a
    standalone question; an LLM generator also sees the last turns). On in every preset; not
    one of the preset :data:`TOGGLES`, so turning it off does not make a pipeline custom."""
    retrieval: Literal["dense", "bm25", "hybrid"] = "bm25"
    """How retrieve ranks chunks: embeddings, BM25, or both fused by reciprocal rank fusion.
    BM25 is the default because it measures best (``python -m rag bench retrieval``: recall@6
    on HotpotQA 0.53 all / 0.97 any, against 0.495 / 0.96 hybrid and 0.40 / 0.925 dense with
    the offline embeddings, which are lexical too)."""
    routing: bool = True
    """Route the question first (route_question): where to look (the knowledge base, the web, or
    nowhere for a greeting) and how to retrieve (bm25 for keyword-like questions, dense or hybrid
    for conceptual ones when the embeddings are semantic). With routing on, a first correction may
    also retry with another retrieval mode (``switch_retriever``) before it rewrites the query."""
    deadline_s: float | None = Field(None, gt=0, le=3600)
    """Time budget of the run in seconds; None takes Settings.run_deadline_s (RAG_RUN_DEADLINE_S,
    default 60). When spent, the run ends at once with the best answer it has (with a caveat) or a
    fast answer from what was retrieved."""

    @model_validator(mode="after")
    def _check(self) -> Options:
        if self.min_relevant > self.top_k:
            raise ValueError(f"min_relevant ({self.min_relevant}) cannot exceed top_k "
                             f"({self.top_k}): such a run could never have enough evidence")
        return self

    def recursion_limit(self) -> int:
        """A LangGraph recursion limit that no legal path can reach: every loop is budgeted."""
        # Each rewrite cycle is at most rewrite, retrieve, grade, generate, 2 checks (6 steps);
        # plus one web search cycle, contextualize_question, route_question, decompose_query,
        # the fixed head and tail, and the short way out when the time budget is spent.
        return 16 + 8 * (self.max_rewrites + 2)


PRESETS: dict[str, tuple[str, dict]] = {
    "naive": ("Naive RAG", dict(grading=False, rewriting=False, web_fallback=False,
                                grounding_check=False, answer_check=False, decomposition=False,
                                routing=False)),
    "crag": ("Corrective RAG (CRAG)", dict(grading=True, rewriting=True, web_fallback=True,
                                           grounding_check=False, answer_check=False,
                                           decomposition=False, routing=False)),
    "self-rag": ("Self-RAG", dict(grading=True, rewriting=False, web_fallback=False,
                                  grounding_check=True, answer_check=True, decomposition=False,
                                  routing=False)),
    "full": ("Full", dict(grading=True, rewriting=True, web_fallback=True,
                          grounding_check=True, answer_check=True, decomposition=True,
                          routing=True)),
}
"""Preset key -> (display name, toggles). Naive RAG is everything off; Full is everything on."""


def preset_options(name: str, **overrides) -> Options:
    """Options for a preset (``naive``, ``crag``, ``self-rag``, ``full``), with overrides.

    Raises ValueError for an unknown preset name.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return Options(**{**PRESETS[name][1], **overrides})


MIN_PIPELINES = 2
MAX_PIPELINES = 4
TOGGLES: tuple[str, ...] = tuple(PRESETS["full"][1])
"""The switches a custom pipeline turns on or off: those the presets set (grading, rewriting,
web_fallback, grounding_check, answer_check, …)."""
TOGGLE_LABELS: dict[str, tuple[str, str]] = {
    "routing": ("Route the question", "Choose where to look (the documents, the web, or no retrieval "
                                      "for a greeting) and how to retrieve (BM25, dense or hybrid)."),
    "decomposition": ("Decompose the question", "Split multi-hop and comparison questions into "
                                                "sub-questions, each retrieved on its own."),
    "grading": ("Grade chunks", "Grade every retrieved chunk for relevance."),
    "rewriting": ("Rewrite the query", "Rewrite the query when the evidence is weak."),
    "web_fallback": ("Web fallback", "Search the web when the documents are not enough "
                                     "(needs TAVILY_API_KEY)."),
    "grounding_check": ("Grounding check", "Check every answer sentence against the chunks it "
                                           "cites."),
    "answer_check": ("Answer check", "Check that the answer addresses the question."),
}
"""Switch -> (label, one-line help) as the pages show them: every name in :data:`TOGGLES`."""
PRESETS_HELP = "Naive RAG is everything off; Full is everything on."
CUSTOM = "custom"
"""The preset key of options that match no preset."""


def preset_of(options: Options) -> str:
    """The preset key whose toggles ``options`` has.

    (``naive``, ``crag``, ``self-rag``, ``full``), or ``custom``.
    """
    for key, (_, toggles) in PRESETS.items():
        if all(getattr(options, k) == v for k, v in toggles.items()):
            return key
    return CUSTOM


def preset_label(key: str) -> str:
    """``Corrective RAG (CRAG)`` for ``crag``; ``Custom`` for anything not a preset."""
    return PRESETS[key][0] if key in PRESETS else "Custom"


def custom_label(options: Options) -> str:
    """``Custom: grading, rewriting`` (the switches that are on), ``Custom: all off``."""
    on = [t for t in TOGGLES if getattr(options, t)]
    return "Custom: " + (", ".join(t.replace("_", " ") for t in on) if on else "all off")


def custom_options(toggles_on: Sequence[str], **numbers) -> Options:
    """Options with exactly ``toggles_on`` switched on.

    (names from :data:`TOGGLES`) and the given top_k / min_relevant / max_rewrites. Raises ValueError for an
    unknown switch or invalid numbers.
    """
    unknown = [t for t in toggles_on if t not in TOGGLES]
    if unknown:
        raise ValueError(f"unknown switch {unknown[0]!r}; choose from {', '.join(TOGGLES)}")
    return Options(**{t: t in toggles_on for t in TOGGLES}, **numbers)


def parse_pipelines(presets: str | Sequence[str] = (), customs: Sequence[str] = (),
                    **numbers) -> list[tuple[str, Options]]:
    """Pipelines from preset keys.

    (``"naive,crag,full"`` or a list) and custom switch sets (each ``"grading+rewriting"``, or ``"none"`` for
    all off), as (label, Options) pairs in that order; ``numbers`` (top_k, min_relevant, max_rewrites) apply
    to each.

    Raises ValueError for an unknown preset or switch, a pipeline given twice, or fewer than
    2 or more than 4 pipelines.
    """
    keys = [p.strip() for p in (presets.split(",") if isinstance(presets, str) else presets)
            if p and p.strip()]
    out: list[tuple[str, Options]] = []
    for key in keys:
        if key not in PRESETS:
            raise ValueError(f"unknown preset {key!r}; choose from {', '.join(PRESETS)}")
        out.append((PRESETS[key][0], preset_options(key, **numbers)))
    for spec in customs:
        on = [] if spec.strip() in ("", "none") else [t.strip() for t in spec.split("+")]
        options = custom_options(on, **numbers)
        out.append((custom_label(options), options))
    labels = [label for label, _ in out]
    dupes = {label for label in labels if labels.count(label) > 1}
    if dupes:
        raise ValueError(f"{sorted(dupes)[0]} is given twice; compare different pipelines")
    if not MIN_PIPELINES <= len(out) <= MAX_PIPELINES:
        raise ValueError(f"compare {MIN_PIPELINES} to {MAX_PIPELINES} pipelines "
                         f"(got {len(out)})")
    return out
