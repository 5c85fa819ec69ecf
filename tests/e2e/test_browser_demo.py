"""The stakeholder demo in a real browser.

`streamlit run` driven by Playwright in Debian's chromium, with no keys.

Upload the two RAG papers, ask a question, replay its trace (the step slider, a click on a
node), compare Naive RAG, CRAG and Full side by side, download the HTML report and open it in a
chromium context with networking disabled, then restart the server and find the run again.
Screenshots go to test-artifacts/demo-*.png.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import LEWIS, SELF_RAG
from tests.e2e.conftest import ARTIFACTS, Server, idle, needs_chromium, new_page

QUESTION = "What is the retrieval component of RAG and how is it trained?"

pytestmark = [pytest.mark.browser, needs_chromium]


def shot(page, name: str, height: int | None = None) -> None:
    """A screenshot; ``height`` grows the viewport first (Streamlit scrolls inside the page)."""
    size = page.viewport_size
    if height:
        page.set_viewport_size({"width": size["width"], "height": height})
        page.wait_for_timeout(800)  # let plotly re-lay out to the new size
    page.screenshot(path=str(ARTIFACTS / f"demo-{name}.png"), full_page=True)
    if height:
        page.set_viewport_size(size)


def nav(page, title: str) -> None:
    idle(page)  # a click while the script still runs can be lost in its rerun
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).first.wait_for()


def flow(page):
    """The flow with its replay: the one plot captioned ``Step k of n`` (the page's slider drives it)."""
    return page.locator(".js-plotly-plot").filter(has_text=re.compile(r"Step \d+ of \d+")).first


def flow_text(page) -> str:
    return flow(page).inner_text()


def test_demo_replay_compare_export_offline_and_restart(browser, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    data_dir = tmp_path / "data"
    log = tmp_path / "streamlit.log"
    server = Server(data_dir, log)
    context, page, errors = new_page(browser, height=1100, accept_downloads=True)
    try:
        # Documents: a new user uploads the two RAG papers.
        page.goto(server.url)
        page.get_by_placeholder("Ask about your documents").wait_for()
        nav(page, "Documents")
        page.locator("input[type=file]").first.set_input_files([str(LEWIS), str(SELF_RAG)])
        page.get_by_role("button", name="Index files").click()
        page.get_by_text(f"{SELF_RAG.name}: ingested", exact=False).first.wait_for()
        page.get_by_text(f"{LEWIS.name}: ingested 19 pages", exact=False).first.wait_for()

        # Chat: ask, then open the run's trace.
        nav(page, "Chat")
        box = page.get_by_placeholder("Ask about your documents")
        box.fill(QUESTION)
        box.press("Enter")
        page.get_by_role("button", name="Open trace").first.wait_for(timeout=120_000)
        page.get_by_role("button", name="Open trace").first.click()
        page.get_by_role("heading", name="Replay").wait_for()
        flow(page).get_by_text("grade_documents").first.wait_for()
        n = int(re.search(r"Step (\d+) of (\d+)", flow_text(page)).group(2))
        assert n >= 3
        assert f"Step {n} of {n}" in flow_text(page)  # opens on the whole run

        # The step slider is the one step control (no ▶ Play on the figure to disagree with it):
        # it shows a step in full, what it decided and why, and the figure follows it.
        assert flow(page).locator(".updatemenu-button").count() == 0
        thumb = page.locator('[data-testid="stSlider"] input[type=range]').first
        thumb.focus()
        thumb.press("Home")
        thumb.press("ArrowRight")
        thumb.press("ArrowRight")
        page.get_by_text(re.compile(f"Step 2 of {n} · [a-z_]+")).first.wait_for()
        assert "Step 2" in flow_text(page)  # the figure follows the slider
        shot(page, "trace-replay")

        # A click on a node of the flow shows its visits: each chunk's verdict and its reason.
        target = flow(page).locator(".textpoint text", has_text="grade_documents").first
        target.click(force=True)
        page.locator('button[role=radio][aria-checked="true"]',
                     has_text="grade_documents").wait_for()  # the node picked by the click
        page.get_by_text(re.compile(r"Step \d+ of \d+ · grade_documents")).first.wait_for()
        page.get_by_text("IDF-weighted terms", exact=False).first.wait_for()
        shot(page, "trace-node", height=2000)

        # Compare: three presets side by side.
        nav(page, "Compare")
        page.get_by_label("Question").fill(QUESTION)
        page.get_by_role("button", name="Compare", exact=True).click()
        page.get_by_role("button", name="Open trace").nth(2).wait_for(timeout=120_000)
        for label in ("Naive RAG", "Corrective RAG (CRAG)", "Full"):
            page.get_by_role("heading", name=label, exact=True).wait_for()
        assert page.locator(".js-plotly-plot").count() == 3
        shot(page, "compare", height=2300)

        # Download the comparison's HTML report.
        with page.expect_download() as download:
            page.get_by_role("button", name="Download HTML report").click()
        report = ARTIFACTS / "demo-report.html"
        download.value.save_as(str(report))
        html = report.read_text(encoding="utf-8")
        assert "Naive RAG" in html and "Corrective RAG (CRAG)" in html
        assert not re.search(r"<script[^>]+src=", html)
        assert not errors, errors
    finally:
        context.close()
        server.stop()

    # The report opens from a file with networking disabled: plotly.js is embedded.
    offline = browser.new_context(viewport={"width": 1400, "height": 1100}, offline=True)
    try:
        page = offline.new_page()
        failed: list[str] = []
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto(report.as_uri())
        page.locator(".main-svg").first.wait_for()
        assert page.locator(".js-plotly-plot").count() == 3 + 2 * 3
        replay = page.locator(".js-plotly-plot").nth(3)
        text = replay.inner_text()
        for node in ("retrieve", "generate", "finalize"):
            assert node in text
        replay.locator(".updatemenu-button").first.click()  # ▶ Play works offline too
        replay.get_by_text(re.compile(r"Step [12] of")).first.wait_for()
        replay.scroll_into_view_if_needed()
        shot(page, "report-offline")
        assert not failed, failed
    finally:
        offline.close()

    # After a restart, the run is still in the history (listed on purpose: All sessions).
    server = Server(data_dir, log)
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(server.url)
        page.get_by_placeholder("Ask about your documents").wait_for()
        nav(page, "Trace")
        page.get_by_text("No run in this session yet", exact=False).wait_for()
        page.get_by_text("All sessions", exact=True).first.click()
        page.get_by_text(QUESTION, exact=False).first.wait_for()
        flow(page).get_by_text("grade_documents").first.wait_for()
        shot(page, "after-restart")
    finally:
        context.close()
        server.stop()
