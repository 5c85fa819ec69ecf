"""One real browser opens a citation on its page: `streamlit run` driven by Playwright in Debian's chromium.

Uploads a real paper on Documents, asks on Chat, opens the first source's page view and screenshots the page
image with the cited passage highlighted (test-artifacts/browser-pageview*.png).
"""

from __future__ import annotations

import pytest

from tests.conftest import LEWIS
from tests.e2e.conftest import ARTIFACTS, idle, needs_chromium, new_page, open_page

QUESTION = "What is the retrieval component of RAG and how is it trained?"

pytestmark = [pytest.mark.browser, needs_chromium]


def test_citation_opens_its_page_with_the_passage_highlighted(server, browser):
    context, page, errors = new_page(browser, height=1100)
    try:
        open_page(page, server.url, "documents", "Documents")
        nav = page.locator("[data-testid=stSidebarNav]")
        page.locator("input[type=file]").first.set_input_files(str(LEWIS))
        page.get_by_role("button", name="Index files").click()
        page.get_by_text(f"{LEWIS.name}: ingested 19 pages", exact=False).first.wait_for(timeout=120_000)

        nav.get_by_text("Chat", exact=True).click()
        box = page.get_by_placeholder("Ask about your documents")
        box.fill(QUESTION)
        box.press("Enter")
        page.get_by_role("button", name="Open trace").first.wait_for(timeout=120_000)
        source = page.locator("[data-testid=stExpander]").filter(has_text=f"{LEWIS.name} p.").first
        source.locator("summary").click()
        idle(page)  # a click while the script still runs can be lost in its rerun
        source.get_by_text("Show on its page").click()
        image = source.locator("[data-testid=stImage] img, img").first
        image.wait_for(timeout=60_000)
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
        size = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert size[1] >= 990 and 700 < size[0] < size[1]  # a portrait page, 1000 px on its longer side
        caption = source.get_by_text("the passage highlighted", exact=False).first
        caption.wait_for()
        assert LEWIS.name in caption.inner_text()
        image.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        image.screenshot(path=str(ARTIFACTS / "browser-pageview.png"))
        page.screenshot(path=str(ARTIFACTS / "browser-pageview-full.png"), full_page=True)
        assert not errors, errors
    finally:
        context.close()
