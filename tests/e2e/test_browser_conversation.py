"""A conversation in Debian's chromium (issue 11, done-when).

On a small knowledge base (the Self-RAG paper) and the offline engine: three turns; the page refreshed and
the server restarted over the same data dir, and the conversation found again each time; a second browser
context that does not see it; an answer regenerated with other switches; a ``[n]`` marker clicked and its
source shown. Every request the pages make is recorded: none leaves 127.0.0.1. Screenshots go to
test-artifacts/conversation-*.png.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from rag.history import RunStore
from tests.conftest import SELF_RAG
from tests.e2e.conftest import ARTIFACTS, Server, needs_chromium, new_page

pytestmark = [pytest.mark.browser, needs_chromium]
QUESTIONS = ["What is Self-RAG?", "How is it trained?", "Which datasets was it evaluated on?"]
THREAD = f"{QUESTIONS[0]} (3)"  # the thread's button in the sidebar: its title and turns


def shot(page, name: str) -> None:
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / f"conversation-{name}.png"), full_page=True)


def answers(page):
    return page.get_by_role("button", name="Open trace")


def open_thread(page) -> None:
    """Open the app's root, find the conversation in the sidebar and open it: its three turns show."""
    page.get_by_role("heading", name="Chat", exact=True).wait_for()
    page.locator("[data-testid=stSidebar]").get_by_role("button", name=THREAD).click()
    answers(page).nth(2).wait_for()
    for q in QUESTIONS:
        page.locator("[data-testid=stChatMessage]").get_by_text(q, exact=True).first.wait_for()
    page.get_by_text("Understood as: How is Self-RAG trained?", exact=True).wait_for()


def test_a_conversation_survives_refresh_and_restart_stays_private_regenerates_and_opens_sources(
        browser, tmp_path):
    from rag.config import Settings
    from rag.ingest.pipeline import ingest_files
    from rag.store.chroma import open_knowledge_base

    ARTIFACTS.mkdir(exist_ok=True)
    data = tmp_path / "data"
    kb = open_knowledge_base(Settings.from_env({}, data_dir=data))
    assert [r.status for r in ingest_files(kb, [SELF_RAG])] == ["ingested"]
    log = tmp_path / "streamlit.log"
    server = Server(data, log)
    ports = {server.port}
    requests: list[str] = []
    context, page, errors = new_page(browser, height=1100, timeout_ms=90_000)
    page.on("request", lambda r: requests.append(r.url))
    try:
        # Three turns; the follow-ups are understood with the conversation's history.
        page.goto(server.url)
        page.get_by_role("heading", name="Chat", exact=True).wait_for()
        box = page.get_by_placeholder("Ask about your documents")
        for i, question in enumerate(QUESTIONS):
            box.fill(question)
            box.press("Enter")
            answers(page).nth(i).wait_for(timeout=120_000)
            page.wait_for_timeout(500)
        page.get_by_text("Understood as: How is Self-RAG trained?", exact=True).wait_for()
        page.locator("[data-testid=stSidebar]").get_by_role(
            "button", name=re.compile(r"^What is Self-RAG\? \(\d\)")).wait_for()  # listed
        answers(page).nth(2).scroll_into_view_if_needed()
        shot(page, "1-three-turns")

        # A refresh: the conversation is listed and opens with its three turns.
        page.reload()
        open_thread(page)
        shot(page, "2-after-refresh")

        # A server restart over the same data dir: found again.
        server.stop()
        server = Server(data, log)
        ports.add(server.port)
        page.goto(server.url)
        open_thread(page)
        shot(page, "3-after-restart")

        # Another browser (a second context, its own cookies) does not see it.
        other = browser.new_context(viewport={"width": 1400, "height": 1000})
        stranger = other.new_page()
        stranger.set_default_timeout(90_000)
        stranger.on("request", lambda r: requests.append(r.url))
        stranger.goto(server.url)
        stranger.get_by_role("heading", name="Chat", exact=True).wait_for()
        stranger.get_by_text("Conversations").wait_for()
        stranger.wait_for_timeout(1500)
        assert stranger.get_by_role("button", name=THREAD).count() == 0
        assert stranger.get_by_text(QUESTIONS[1]).count() == 0
        stranger.screenshot(path=str(ARTIFACTS / "conversation-4-other-browser.png"), full_page=True)
        other.close()

        # A [n] marker of the first answer opens its source in place.
        marker = page.locator("[data-testid=stPopover]").filter(has_text="[1]").first
        marker.locator("button").first.click()
        body = page.locator("[data-testid=stPopoverBody]").first
        body.wait_for()
        store = RunStore(data / "runs.sqlite")
        [thread] = [store.get_thread(t.id) for t in store.list_threads(None)]
        first = thread.turns[0].run
        source = next(c for c in first.citations if c.n == 1)
        assert f"{source.source} p.{source.page}" in body.inner_text()
        words = " ".join(source.text.split()[:6])
        assert words and words in " ".join(body.inner_text().split())
        shot(page, "5-marker-open")
        page.keyboard.press("Escape")

        # Regenerate the first answer with other switches (Answer check off): both answers stay.
        page.locator("[data-testid=stSidebar]").get_by_text("Answer check", exact=True).click()
        page.get_by_text("Custom: changed from Full.").wait_for()
        page.get_by_role("button", name="Regenerate").first.click()
        page.get_by_text("Answer 2 of 2 · Custom (regenerated)").wait_for(timeout=120_000)
        page.get_by_text("Answer 1 of 2 · Full").wait_for()
        answers(page).nth(3).wait_for()
        page.get_by_text("Answer 2 of 2 · Custom (regenerated)").scroll_into_view_if_needed()
        shot(page, "6-regenerated")
        turn = store.get_thread(thread.id).turns[0]
        assert [r.id for r in turn.runs][0] == first.id and len(turn.runs) == 2
        assert turn.runs[1].options.answer_check is False and first.options.answer_check is True
    finally:
        context.close()
        server.stop()

    assert not errors, errors
    hosts = {(p.hostname, p.port) for p in map(urlsplit, requests)
             if p.scheme in ("http", "https", "ws", "wss")}
    assert hosts <= {("127.0.0.1", port) for port in ports}, [
        u for u in requests if urlsplit(u).hostname != "127.0.0.1"]
    assert len(requests) > 20  # the recorder saw the pages' traffic
