"""Shared fixtures: real Chroma in temporary dirs, the shared data, and the ONNX guard."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
PAPERS = DATA / "papers"
TRICKY = DATA / "tricky-pdfs"
LEWIS = PAPERS / "2005.11401v4_lewis_rag.pdf"
SELF_RAG = PAPERS / "2310.11511v1_self_rag.pdf"


class DefaultEmbeddingCalled(AssertionError):
    """Chroma's default ONNX embedding ran: it would download a model, and fails offline."""


DEFAULT_EMBEDDING_CALLS: list[str] = []


@pytest.fixture(autouse=True, scope="session")
def _guard_default_embedding():
    """Make Chroma's default ONNX embedding function fail loudly if anything ever calls it."""
    from chromadb.api import types as chroma_types
    from chromadb.utils.embedding_functions import onnx_mini_lm_l6_v2

    def refuse(self, input):  # Chroma checks this exact signature
        DEFAULT_EMBEDDING_CALLS.append(type(self).__name__)
        raise DefaultEmbeddingCalled(f"{type(self).__name__} was called; pass our embedding function")

    def refuse_download(self):
        refuse(self, None)

    patches = [(onnx_mini_lm_l6_v2.ONNXMiniLM_L6_V2, "__call__", refuse),
               (onnx_mini_lm_l6_v2.ONNXMiniLM_L6_V2, "_download_model_if_not_exists",
                refuse_download),
               (chroma_types.DefaultEmbeddingFunction, "__call__", refuse)]
    saved = [(cls, name, cls.__dict__.get(name)) for cls, name, _ in patches]
    for cls, name, fn in patches:
        setattr(cls, name, fn)
    yield
    for cls, name, original in saved:
        if original is not None:
            setattr(cls, name, original)


@pytest.fixture(autouse=True, scope="session")
def _offline_env(tmp_path_factory):
    """No test may reach a real service: drop keys, keep the default data dir out of the repo."""
    saved = dict(os.environ)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TAVILY_API_KEY", "TAVILY_API_BASE_URL",
                "CHROMA_HOST", "CHROMA_PORT", "RAG_DATABASE_URL"):
        os.environ.pop(key, None)
    os.environ["RAG_DATA_DIR"] = str(tmp_path_factory.mktemp("default-data"))
    os.environ["ANONYMIZED_TELEMETRY"] = "False"
    os.environ["RAG_ENV_FILE"] = ""  # a developer's ./.env (keys) stays out of the tests
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL 15 on 127.0.0.1 (tests/pg.py), shared by the session.

    Skipped, saying why, where the server is not installed.
    """
    from tests.pg import PostgresServer, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def database_url(postgres):
    """The URL of a new, empty database on the throwaway PostgreSQL (``RAG_DATABASE_URL``'s form)."""
    return postgres.create_database()


@pytest.fixture
def settings(tmp_path):
    from rag.config import Settings

    return Settings.from_env({}, data_dir=tmp_path / "data")


@pytest.fixture
def kb(settings):
    from rag.store.chroma import open_knowledge_base

    return open_knowledge_base(settings)


@pytest.fixture(scope="session")
def papers_kb(tmp_path_factory):
    """A knowledge base holding the Lewis RAG and Self-RAG papers (ingested once per session)."""
    from rag.config import Settings
    from rag.ingest.pipeline import ingest_files
    from rag.store.chroma import open_knowledge_base

    s = Settings.from_env({}, data_dir=tmp_path_factory.mktemp("papers") / "data")
    base = open_knowledge_base(s)
    reports = ingest_files(base, [LEWIS, SELF_RAG])
    assert [r.status for r in reports] == ["ingested", "ingested"], [r.line() for r in reports]
    base.settings = s
    return base


@pytest.fixture
def fake():
    """A fake OpenAI-compatible server on 127.0.0.1 (tests/fakes/servers.py), scripted per test."""
    from tests.fakes.servers import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def tavily():
    """A fake Tavily server on 127.0.0.1, reached through ``api_base_url``."""
    from tests.fakes.servers import FakeTavily

    server = FakeTavily().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def runs(papers_kb):
    """Real offline runs over the papers (tests/run_fixtures.py): answered, naive, rewritten, abstained.

    Built once; tests copy a run before changing it.
    """
    from tests.run_fixtures import offline_runs

    return offline_runs(papers_kb)


@pytest.fixture(scope="session")
def llm(papers_kb, tmp_path_factory):
    """One real run on the LLM engine against a fake OpenAI-compatible server."""
    from tests.fakes.servers import FakeOpenAI
    from tests.run_fixtures import llm_run

    server = FakeOpenAI().start()
    try:
        yield llm_run(server, papers_kb, tmp_path_factory.mktemp("llm"))
    finally:
        server.stop()


class CliResult(NamedTuple):
    """What one ``python -m rag`` command gave: exit code, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys):
    """Run ``python -m rag ARGS...`` in this process; returns a :class:`CliResult`.

    ``rag.cli.main`` under ``capsys``: much faster than a subprocess. An argparse error or
    ``--help`` gives its exit code like the real command does.
    """
    from rag.cli import main

    def run(*args) -> CliResult:
        capsys.readouterr()  # drop what came before
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run
