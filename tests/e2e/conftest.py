"""Fixtures for the end-to-end tests.

A fresh data dir for AppTest, a real `streamlit run` server, and Debian's chromium driven by Playwright.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st

from rag.config import Settings
from tests.conftest import LEWIS, ROOT, SELF_RAG
from tests.waiting import ProcessExited, http_ok, stop_process, wait_for

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason=(
    "Debian chromium is not installed (python3 run.py test installs it)"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def app_data_dir(d: Path, monkeypatch) -> Iterator[Path]:
    """Make ``d`` the data dir the app opens (RAG_DATA_DIR).

    Cached settings, clients and knowledge bases are dropped before and after.
    """
    monkeypatch.setenv("RAG_DATA_DIR", str(d))
    st.cache_resource.clear()
    try:
        yield d
    finally:
        st.cache_resource.clear()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A fresh data dir per test, opened by the app (:func:`app_data_dir`)."""
    with app_data_dir(tmp_path / "data", monkeypatch) as d:
        yield d


def plain(text: str) -> str:
    """Markdown-escaped UI text back to what the user reads."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


@pytest.fixture(scope="session")
def papers_dir(tmp_path_factory):
    """A data dir holding the two papers (Lewis RAG, Self-RAG), ingested once for the session."""
    from rag.ingest.pipeline import ingest_files
    from rag.store.chroma import open_knowledge_base

    d = tmp_path_factory.mktemp("e2e-papers") / "data"
    kb = open_knowledge_base(Settings.from_env({}, data_dir=d))
    assert [r.status for r in ingest_files(kb, [LEWIS, SELF_RAG])] == ["ingested", "ingested"]
    return d


@pytest.fixture
def papers_copy(papers_dir, tmp_path, monkeypatch):
    """A fresh copy of :func:`papers_dir` per test (so each test has its own history), opened by the app."""
    shutil.copytree(papers_dir, tmp_path / "data")
    with app_data_dir(tmp_path / "data", monkeypatch) as d:
        yield d


class Server:
    """`streamlit run app.py` on ``port`` (default: a free one) over ``data_dir``, with Streamlit's ``args``.

    stop() ends only this process.
    """

    def __init__(self, data_dir: Path, log: Path, *, port: int | None = None,
                 args: tuple[str, ...] = ()) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log, "a")  # noqa: SIM115 (the server writes to it until stop() closes it)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false", *args],
            cwd=ROOT, env={**os.environ, "RAG_DATA_DIR": str(data_dir)},
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: http_ok(f"{self.url}/_stcore/health"), timeout_s=90, what="streamlit",
                     proc=self.proc)
        except ProcessExited:
            raise RuntimeError(log.read_text()) from None
        except TimeoutError:
            self.stop()
            raise

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        yield b
        b.close()


@pytest.fixture
def server(tmp_path):
    """A real `streamlit run app.py` over a fresh data dir, stopped after the test."""
    s = Server(tmp_path / "data", tmp_path / "streamlit.log")
    yield s
    s.stop()


@pytest.fixture
def app_url(server) -> str:
    """The address of :func:`server`."""
    return server.url


def new_page(browser, *, height: int = 1000, timeout_ms: int = 60_000, **options):
    """A 1400-pixel-wide page in a new browser context: ``(context, page, errors)``.

    ``errors`` collects the page's uncaught JavaScript errors; ``options`` go to ``browser.new_context``.
    """
    context = browser.new_context(viewport={"width": 1400, "height": height}, **options)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the app has no script run going (Streamlit's running indicator is gone)."""
    page.wait_for_timeout(500)
    page.locator("[data-testid=stStatusWidget]").wait_for(state="hidden", timeout=timeout_ms)


def open_page(page, base_url: str, path: str, heading: str) -> None:
    """Load ``base_url/path`` straight away and wait for its ``heading`` and an idle app.

    Loading the page by its address, instead of loading the root and clicking the sidebar, avoids a race:
    the root's redirect to /chat reruns the script, and a click made during that run can be lost.
    """
    page.goto(f"{base_url}/{path}")
    page.get_by_role("heading", name=heading, exact=True).first.wait_for()
    idle(page)
