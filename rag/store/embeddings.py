"""Embedding functions registered with Chroma: an offline hashing embedder, and OpenAI when configured."""

from __future__ import annotations

import threading
import zlib
from collections import Counter, OrderedDict
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from rag.errors import describe_error
from rag.secrets import remember, scrub
from rag.text import terms

HASHING_NAME = "retrace-hashing"


class EmbeddingError(RuntimeError):
    """The embedding endpoint failed; the message says how, and never holds a key."""


@register_embedding_function
class HashingEmbeddingFunction(EmbeddingFunction[Documents]):
    """Offline embeddings by signed feature hashing (Weinberger et al.

    2009).

    Features are stemmed unigrams (weight 1 + ln tf) and adjacent-term bigrams (half weight),
    hashed into ``dim`` slots with a sign bit; vectors are L2-normalised, so cosine
    similarity is a dot product. Deterministic, no network, no model download.
    Returns one ``dim``-length float32 vector per input text.
    """

    def __init__(self, dim: int = 1024) -> None:
        """Hash into ``dim`` dimensions (at least 16). Raises ValueError for a smaller ``dim``."""
        if dim < 16:
            raise ValueError("dim must be at least 16")
        self.dim = dim

    def __call__(self, input: Documents) -> Embeddings:
        """One unit vector per text (Chroma's embedding-function protocol)."""
        return [self.embed_terms(terms(text)) for text in input]

    def embed_one(self, text: str) -> np.ndarray:
        """The unit vector of one text: signed hashed term and bigram counts, log-scaled."""
        return self.embed_terms(terms(text))

    def embed_terms(self, toks: list[str]) -> np.ndarray:
        """The unit vector of a text given as its :func:`rag.text.terms`.

        A caller that has the terms already (the ingest workers) tokenises once. Each distinct term weighs
        1 + ln tf and each distinct adjacent pair 0.5; a feature's CRC-32 picks its slot (``crc % dim``) and
        its sign (the top bit), and the signed weights are summed per slot in one ``bincount``, in feature
        order (terms first, then pairs), so the vector is the same bit for bit as summing them one by one.
        """
        counts = Counter(toks)
        pairs = dict.fromkeys(map(" ".join, zip(toks, toks[1:], strict=False)))
        n_terms, n = len(counts), len(counts) + len(pairs)
        if not n:
            vec = np.zeros(self.dim, dtype=np.float32)
            vec[0] = 1.0  # an empty text still needs a valid unit vector
            return vec
        crc = np.fromiter(map(zlib.crc32, map(str.encode, [*counts, *pairs])), dtype=np.uint32, count=n)
        weights = np.full(n, 0.5)
        weights[:n_terms] = np.log(np.fromiter(counts.values(), dtype=np.float64, count=n_terms)) + 1.0
        weights = np.where(crc >> 31, weights, -weights)
        vec = np.bincount((crc % self.dim).astype(np.intp), weights=weights,
                          minlength=self.dim).astype(np.float32)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm

    @staticmethod
    def name() -> str:
        """The name Chroma records for this embedding function."""
        return HASHING_NAME

    def default_space(self) -> Space:
        """Cosine: the vectors are unit length."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """The distance spaces these vectors may be used with."""
        return ["cosine", "ip", "l2"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbeddingFunction:
        """Rebuild from the config Chroma stored with the collection."""
        return HashingEmbeddingFunction(dim=int(config.get("dim", 1024)))

    def get_config(self) -> dict[str, Any]:
        """The config Chroma stores with the collection."""
        return {"dim": self.dim}

    def identity(self) -> str:
        """A string naming this embedding model and its shape; stored on each collection."""
        return f"{HASHING_NAME}/dim={self.dim}"


OPENAI_NAME = "retrace-openai"


@register_embedding_function
class OpenAICompatibleEmbeddingFunction(EmbeddingFunction[Documents]):
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    Through langchain-openai's ``OpenAIEmbeddings`` with ``check_embedding_ctx_length=False``, so no
    tokenizer encodings are downloaded.

    Its Chroma config (persisted with the collection) holds the model and base URL, never the
    key; ``build_from_config`` reads the key from OPENAI_API_KEY. Raises EmbeddingError (one
    line, no key) when the endpoint fails (connection, status, timeout).
    """

    def __init__(self, model: str = "text-embedding-3-small", api_key: str | None = None,
                 base_url: str | None = None, timeout_s: float = 30.0) -> None:
        """An OpenAI-compatible embeddings client; the key stays in memory only."""
        from langchain_openai import OpenAIEmbeddings
        from pydantic import SecretStr

        remember(api_key)
        self.model = model
        self.base_url = base_url
        # The client's fields are pydantic aliases (api_key, base_url, timeout) its stubs do not list.
        options: dict[str, Any] = {"api_key": SecretStr(api_key or ""), "base_url": base_url,
                                   "timeout": timeout_s}
        self._client = OpenAIEmbeddings(model=model, check_embedding_ctx_length=False, max_retries=2,
                                        **options)

    def __repr__(self) -> str:  # never show the key
        """Name the model and server, never the key."""
        return f"OpenAICompatibleEmbeddingFunction(model={self.model!r}, base_url={self.base_url!r})"

    def __call__(self, input: Documents) -> Embeddings:
        """One vector per text. Raises EmbeddingError (one line, key scrubbed) when the server fails."""
        try:
            vectors = self._client.embed_documents(list(input))
        except Exception as exc:
            where = self.base_url or "api.openai.com"
            # from None: the client's error may echo the key (a 401 body); a chained
            # exception would carry it into any traceback or log
            raise EmbeddingError(scrub(f"embeddings from {where} failed: "
                                       f"{describe_error(exc, 30.0)}")) from None
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    @staticmethod
    def name() -> str:
        """The name Chroma records for this embedding function."""
        return OPENAI_NAME

    def default_space(self) -> Space:
        """Cosine, as OpenAI recommends for its embeddings."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """The distance spaces these vectors may be used with."""
        return ["cosine", "ip", "l2"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OpenAICompatibleEmbeddingFunction:
        """Rebuild from the config Chroma stored (the key comes from OPENAI_API_KEY, never the config)."""
        import os

        return OpenAICompatibleEmbeddingFunction(model=config.get("model", "text-embedding-3-small"),
                                                 api_key=os.environ.get("OPENAI_API_KEY"),
                                                 base_url=config.get("base_url"))

    def get_config(self) -> dict[str, Any]:
        """The config Chroma stores with the collection: model and server, never the key."""
        return {"model": self.model, "base_url": self.base_url}

    def identity(self) -> str:
        """``openai/<model>``: what a knowledge base records as its embedding model."""
        return f"openai/{self.model}"


class QueryVectors:
    """The embeddings of the last ``size`` queries by one embedding function, each computed once.

    Dense retrieval and the semantic cache (:mod:`rag.store.semantic_cache`) both embed a question: a
    model behind an API is called once for both. Thread-safe.
    """

    def __init__(self, ef: EmbeddingFunction, size: int = 256) -> None:
        """Remember up to ``size`` query vectors of ``ef`` (least recently used dropped first)."""
        self.ef, self.size = ef, size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> Any:
        """The vector of ``text`` (the model's dimension). Raises what ``ef`` raises (EmbeddingError)."""
        with self._lock:
            if text in self._vectors:
                self._vectors.move_to_end(text)
                return self._vectors[text]
        vector = self.ef([text])[0]
        with self._lock:
            self._vectors[text] = vector
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector


def make_embedding_function(settings) -> EmbeddingFunction:
    """The embedding function for ``settings``.

    OpenAI-compatible embeddings when a key is configured (see ``Settings.embedding_backend``), otherwise the
    offline hashing one.
    """
    if settings.embedding_backend == "openai":
        return OpenAICompatibleEmbeddingFunction(settings.embedding_model, settings.openai_api_key,
                                                 settings.openai_base_url)
    return HashingEmbeddingFunction()


def embedding_identity(ef: EmbeddingFunction) -> str:
    """A stable name for ``ef`` (model and shape) used to refuse mixing vectors in a collection."""
    ident = getattr(ef, "identity", None)
    if callable(ident):
        return ident()
    return f"{ef.name()}/{sorted((ef.get_config() or {}).items())}"


HASHING_IDENTITY = HashingEmbeddingFunction().identity()
"""The identity of the default offline embeddings (``retrace-hashing/dim=1024``)."""
OPENAI_PREFIX = "openai/"


def configured_embedding(settings) -> str:
    """The identity of the embedding model ``settings`` configure for new knowledge bases.

    ``openai/<RAG_EMBEDDING_MODEL>`` when an OpenAI key is set (see ``Settings.embedding_backend``), else
    the offline ``retrace-hashing/dim=1024``.
    """
    if settings.embedding_backend == "openai":
        return OPENAI_PREFIX + settings.embedding_model
    return HASHING_IDENTITY


def parse_embedding(spec: str | None, settings) -> str:
    """The identity an embedding model given by a user names.

    ``None``/``""``/``configured``: :func:`configured_embedding`; ``hashing``, ``hashing/dim=N`` or
    ``retrace-hashing/dim=N``: the offline embeddings (N >= 16); ``openai/<model>`` or a bare
    ``text-embedding-*`` model name: OpenAI-compatible embeddings. Raises ValueError for anything else.
    """
    text = (spec or "").strip()
    if text in ("", "configured"):
        return configured_embedding(settings)
    if text == "hashing":
        return HASHING_IDENTITY
    for prefix in ("hashing/dim=", f"{HASHING_NAME}/dim="):
        if text.startswith(prefix) and text[len(prefix):].isdigit() and int(text[len(prefix):]) >= 16:
            return f"{HASHING_NAME}/dim={int(text[len(prefix):])}"
    if text.startswith(OPENAI_PREFIX) and len(text) > len(OPENAI_PREFIX):
        return text
    if text.startswith("text-embedding-"):
        return OPENAI_PREFIX + text
    raise ValueError(f"unknown embedding model {text!r}: use 'hashing' (offline, no key), "
                     "'hashing/dim=N', or 'openai/<model>' (needs an OpenAI key)")


def needs_key(identity: str) -> bool:
    """True when the embedding model ``identity`` needs an OpenAI key (hashing needs none)."""
    return identity.startswith(OPENAI_PREFIX)


def embedding_function_for(identity: str, settings, *, base_url: str | None = None,
                           kb_name: str | None = None) -> EmbeddingFunction:
    """The registered embedding function of the model ``identity`` (from :func:`embedding_identity`).

    OpenAI-compatible models take the key from ``settings`` and its base URL when set, else ``base_url`` (the
    server that built the knowledge base). Raises EmbeddingKeyMissing (one line naming ``kb_name``) when the
    model needs a key ``settings`` lack, ValueError for an unknown identity.
    """
    from rag.store.client import EmbeddingKeyMissing

    if identity.startswith(f"{HASHING_NAME}/dim="):
        return HashingEmbeddingFunction(dim=int(identity.rsplit("=", 1)[1]))
    if needs_key(identity):
        if not settings.openai_api_key:
            what = f"knowledge base '{kb_name}'" if kb_name else "this knowledge base"
            raise EmbeddingKeyMissing(
                f"{what} was built with embeddings '{identity}', which need an OpenAI key: type one on "
                f"the Settings page or set OPENAI_API_KEY (or re-index it with hashing embeddings)")
        return OpenAICompatibleEmbeddingFunction(identity[len(OPENAI_PREFIX):], settings.openai_api_key,
                                                 settings.openai_base_url or base_url or None)
    raise ValueError(f"unknown embedding model {identity!r}")
