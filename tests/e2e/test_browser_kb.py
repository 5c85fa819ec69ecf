"""Knowledge bases in a real browser: the sidebar follows the samples and a new knowledge base.

AppTest runs app.py's sidebar only on its first run, so the switch made by a page (through
``_session.select_kb``, applied before the sidebar widget is drawn) is checked here, in chromium.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ARTIFACTS, needs_chromium, new_page

pytestmark = [pytest.mark.browser, needs_chromium]


def sidebar_kb(page) -> str:
    box = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").filter(has_text="Knowledge base")
    return box.first.locator("input").first.input_value()  # the selected option is the input's value


def test_samples_and_a_new_knowledge_base_are_selected_in_the_sidebar(app_url, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page, errors = new_page(browser, timeout_ms=90_000)

    page.goto(app_url)
    page.get_by_role("button", name="Load the sample knowledge base").click()
    page.get_by_text("into the knowledge base 'sample', now selected").wait_for()
    assert sidebar_kb(page) == "sample"
    page.get_by_text("Asking 'sample'").wait_for()

    # Documents (same session: through the navigation): create a knowledge base, selected at once
    page.locator("[data-testid=stSidebarNav] a").filter(has_text="Documents").click()
    page.get_by_text("Knowledge bases (selected: sample)").click()
    page.get_by_placeholder("e.g. papers-2024").fill("my-papers")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("Created the knowledge base 'my-papers'").wait_for()
    page.get_by_text("Indexed in 'my-papers'").wait_for()
    assert sidebar_kb(page) == "my-papers"
    page.screenshot(path=str(ARTIFACTS / "browser-kb-created.png"), full_page=True)
    assert not errors, errors
    context.close()
