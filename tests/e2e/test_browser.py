"""One real browser: `streamlit run` driven by Playwright in Debian's chromium.

Uploads a real PDF, asks a question, sees a cited answer, and opens the trace figure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import LEWIS, ROOT

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "What is the retrieval component of RAG and how is it trained?"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed "
                       "(python3 run.py test installs it)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def app_url(tmp_path):
    port = _free_port()
    env = {**os.environ, "RAG_DATA_DIR": str(tmp_path / "data")}
    log = open(tmp_path / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError((tmp_path / "streamlit.log").read_text())
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("streamlit did not start in 90 s")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = context.new_page()
        pg.set_default_timeout(60_000)
        yield pg
        context.close()
        browser.close()


def test_upload_ask_cited_answer_and_trace(app_url, page):
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # Documents: upload the Lewis RAG paper and index it.
    page.goto(f"{app_url}/documents")
    page.locator("input[type=file]").first.set_input_files(str(LEWIS))
    page.get_by_role("button", name="Index files").click()
    page.get_by_text(f"{LEWIS.name}: ingested 19 pages", exact=False).first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "browser-documents.png"), full_page=True)

    # Chat: ask, and wait for an answer whose sources name the file and page.
    page.goto(app_url)
    box = page.get_by_placeholder("Ask about your documents")
    box.fill(QUESTION)
    box.press("Enter")
    page.get_by_role("button", name="Open trace").first.wait_for(timeout=120_000)
    page.get_by_text(f"{LEWIS.name}, p.", exact=False).first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "browser-chat.png"), full_page=True)

    # Trace: the plotly flow renders with the graph's nodes.
    page.get_by_role("button", name="Open trace").first.click()
    page.locator(".js-plotly-plot").first.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.js-plotly-plot') &&"
        " document.querySelector('.js-plotly-plot').innerText.includes('grade_documents')")
    page.screenshot(path=str(ARTIFACTS / "browser-trace.png"), full_page=True)
    text = page.locator(".js-plotly-plot").first.inner_text()
    assert "retrieve" in text and "generate" in text
    assert not errors, errors
