"""The app's shell in Debian's chromium (issue 11, section 5).

A page's own address works when loaded directly (``/chat`` used to show "Page not found", and before
``st.navigation`` had run, a ``pages/`` folder made Streamlit list its v1 pages: ``session``, ``ui``);
Streamlit's Deploy button is not shown; and no page makes a request off the server (favicon, icon font).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import ARTIFACTS, needs_chromium, new_page

pytestmark = [pytest.mark.browser, needs_chromium]
PAGES = ["Documents", "Chat", "Trace", "Compare", "Evaluate", "Insights", "Settings"]


def app_shown(page, title: str) -> None:
    """Wait for the app's own sidebar (the engine line) and the page's heading."""
    # in the sidebar: the Settings page also shows the engine line, in its table
    page.locator("[data-testid=stSidebarUserContent]").get_by_text("Offline engine (no keys)").wait_for()
    page.get_by_role("heading", name=title, exact=True).first.wait_for()
    page.wait_for_timeout(1500)  # a late "Page not found" dialog would show by now


def test_pages_load_by_address_without_deploy_or_outside_requests(server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page, _ = new_page(browser, timeout_ms=90_000)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))

    # The very first visit to a fresh server is /chat itself, then /trace.
    for path, title in (("chat", "Chat"), ("trace", "Trace")):
        page.goto(f"{server.url}/{path}")
        app_shown(page, title)
        assert page.get_by_text("Page not found").count() == 0, path
        assert urlsplit(page.url).path == f"/{path}"
        nav = page.locator("[data-testid=stSidebarNav]").inner_text().split()
        assert [p for p in PAGES if p in nav] == PAGES and "ui" not in nav and "session" not in nav
    page.screenshot(path=str(ARTIFACTS / "browser-shell-trace.png"))

    # The root opens the Chat page at /chat; every page by its link, none with a Deploy button.
    page.goto(server.url)
    app_shown(page, "Chat")
    # /chat, with the selected knowledge base and preset in the address (?kb=default&preset=full) so a
    # refresh keeps them
    page.wait_for_url(re.compile(re.escape(f"{server.url}/chat") + r"(\?kb=default(&preset=full)?)?$"))
    for title in PAGES:
        page.locator("[data-testid=stSidebarNav]").get_by_text(title, exact=True).click()
        app_shown(page, title)
        assert page.get_by_role("button", name="Deploy").count() == 0
        assert page.get_by_text("Deploy", exact=True).count() == 0
        icon = page.evaluate("() => document.querySelector(\"link[rel='shortcut icon']\").href")
        assert icon.startswith(("data:", server.url)), icon
    page.screenshot(path=str(ARTIFACTS / "browser-shell-settings.png"))
    context.close()

    hosts = {(p.hostname, p.port) for p in map(urlsplit, requests)
             if p.scheme in ("http", "https", "ws", "wss")}
    assert hosts == {("127.0.0.1", server.port)}, [u for u in requests if "127.0.0.1" not in u]
