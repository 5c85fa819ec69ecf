"""One real browser: `streamlit run` driven by Playwright in Debian's chromium.

Uploads a real PDF, asks a question, sees a cited answer, and opens the trace figure.
"""

from __future__ import annotations

import pytest

from tests.conftest import LEWIS
from tests.e2e.conftest import ARTIFACTS, Server, needs_chromium, new_page, open_page

QUESTION = "What is the retrieval component of RAG and how is it trained?"

pytestmark = [pytest.mark.browser, needs_chromium]


@pytest.fixture
def opened(browser):
    context, page, errors = new_page(browser)
    yield page, errors
    context.close()


def test_upload_ask_cited_answer_and_trace(app_url, opened):
    ARTIFACTS.mkdir(exist_ok=True)
    page, errors = opened

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
    page.locator("[data-testid=stExpander] summary").filter(
        has_text=f"{LEWIS.name} p.").first.wait_for()  # a source, named by file and page
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


def test_evaluate_page_runs_the_sample_set(tmp_path, browser):
    """The Evaluate page in a real browser: samples loaded, two pipelines, the table and charts."""
    from rag.config import Settings
    from rag.eval import load_items
    from rag.samples import SAMPLES_DIR, load_samples
    from rag.store.chroma import open_knowledge_base

    data = tmp_path / "data"
    load_samples(open_knowledge_base(Settings.from_env({}, data_dir=data)))
    server = Server(data, tmp_path / "streamlit.log")
    context, pg, errors = new_page(browser)
    try:
        open_page(pg, server.url, "evaluate", "Evaluate")
        pg.get_by_text("Offline engine (no keys)").wait_for()  # the app's own navigation and sidebar
        sample = load_items(SAMPLES_DIR / "eval" / "sample-questions.jsonl")
        unanswerable = sum(i.answerable is False for i in sample)
        pg.get_by_text(f"{len(sample)} questions; {unanswerable} marked unanswerable").wait_for()
        pg.wait_for_timeout(1000)
        pg.get_by_role("button", name="Evaluate").click()
        pg.get_by_text("By pipeline").wait_for(timeout=120_000)
        pg.locator(".js-plotly-plot").nth(1).wait_for()
        pg.get_by_text("Every question").wait_for()
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "browser-evaluate.png"), full_page=True)
        assert "How each pipeline ended" in pg.locator(".js-plotly-plot").first.inner_text()
        nav = pg.locator("[data-testid=stSidebarNav]").inner_text()
        assert "Evaluate" in nav and "ui" not in nav.split() and "session" not in nav.split()
        assert not errors, errors
    finally:
        context.close()
        server.stop()
