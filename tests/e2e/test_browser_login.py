"""Login and the address in Debian's chromium (issue 20, sections 4 and 5).

A refresh keeps the conversation, its knowledge base and the preset. With login on (``st.login`` against
oidc-provider-mock, a local OpenID provider on 127.0.0.1), two users each see only their own
conversations and an admin lists both. Every request the pages make stays on 127.0.0.1 (the provider's
form names a CDN stylesheet: refused). Screenshots go to test-artifacts/login-*.png.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest

from rag.history import RunStore
from tests.e2e.conftest import ARTIFACTS, Server, free_port, idle, needs_chromium, new_page
from tests.waiting import http_ok, wait_for

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.slow]


def local_only(context, outside: list[tuple[str, str]]) -> None:
    """Let the pages reach 127.0.0.1 only; note ``(the asking page's URL, the URL)`` and refuse the rest."""
    def route(r):
        if urlsplit(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:
            outside.append((r.request.frame.url, r.request.url))
            r.abort()
    context.route("**/*", route)


def sidebar_threads(page) -> list[str]:
    """The labels of the conversation buttons in the sidebar."""
    buttons = page.locator("[data-testid=stSidebar] [class*=st-key-chat_t_] button")
    return [t.replace("\u2060", "") for t in buttons.all_inner_texts()]


@pytest.fixture
def oidc(tmp_path):
    """oidc-provider-mock on 127.0.0.1 at a free port; its address. Any client id and secret are accepted."""
    port = free_port()
    log = open(tmp_path / "oidc.log", "w")  # noqa: SIM115 (closed after the provider)
    proc = subprocess.Popen([sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port",
                             str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: http_ok(f"{url}/.well-known/openid-configuration"), timeout_s=60,
                 what="the OpenID provider", proc=proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()


def test_a_refresh_keeps_the_conversation_its_knowledge_base_and_the_preset(browser, papers_copy, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    server = Server(papers_copy, tmp_path / "streamlit.log")
    outside: list[tuple[str, str]] = []
    context, page, errors = new_page(browser, timeout_ms=90_000)
    local_only(context, outside)
    try:
        page.goto(f"{server.url}/chat")
        page.get_by_role("heading", name="Chat", exact=True).wait_for()
        idle(page)
        preset = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").filter(has_text="Preset")
        field = preset.locator("input").first
        field.click()
        field.press_sequentially("Corrective")
        field.press("Enter")
        idle(page)
        assert field.input_value().startswith("Corrective RAG"), field.input_value()
        box = page.get_by_placeholder("Ask about your documents")
        box.fill("What is Self-RAG?")
        box.press("Enter")
        page.get_by_role("button", name="Open trace").first.wait_for(timeout=120_000)
        idle(page)
        page.wait_for_url(re.compile(r"thread="))
        [tid] = [t.id for t in RunStore(papers_copy / "runs.sqlite").list_threads(None)]
        query = parse_qs(urlsplit(page.url).query)
        assert (query["thread"], query["kb"], query["preset"]) == ([tid], ["default"], ["crag"]), page.url

        page.reload()  # a new session: everything comes back from the address
        page.get_by_role("button", name="Open trace").first.wait_for()
        idle(page)
        assert parse_qs(urlsplit(page.url).query)["thread"] == [tid]
        page.locator("[data-testid=stChatMessage]").get_by_text("What is Self-RAG?", exact=True).wait_for()
        assert field.input_value().startswith("Corrective RAG"), field.input_value()
        assert sidebar_threads(page) == ["What is Self-RAG? (1)"]
        page.screenshot(path=str(ARTIFACTS / "login-0-refreshed.png"), full_page=True)
        assert not errors, errors
        assert not outside, outside
    finally:
        context.close()
        server.stop()


def log_in(browser, url: str, who: str, outside: list[tuple[str, str]]):
    """A new browser context logged in as ``who`` through the provider's form: ``(context, page, errors)``."""
    context, page, errors = new_page(browser, timeout_ms=90_000)
    local_only(context, outside)
    page.goto(f"{url}/chat")
    page.get_by_role("button", name="Log in").click()
    page.locator("input[name=sub]").fill(who)
    page.get_by_role("button", name="Authorize").click()
    page.get_by_text(re.compile("^Logged in as")).wait_for()
    page.get_by_role("heading", name="Chat", exact=True).wait_for()
    page.get_by_text("Asking 'default'").wait_for()  # drawn after the sidebar's conversations
    idle(page)
    return context, page, errors


def test_with_login_each_user_sees_only_their_conversations_and_an_admin_sees_both(
        browser, papers_copy, runs, oidc, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'''
[auth]
redirect_uri = "http://127.0.0.1:{port}/oauth2callback"
cookie_secret = "{uuid.uuid4().hex}"
client_id = "retrace"
client_secret = "not-a-secret"
server_metadata_url = "{oidc}/.well-known/openid-configuration"

[retrace]
admins = ["root@example.org"]
''')
    store = RunStore(papers_copy / "runs.sqlite")
    bob = store.create_thread("user:bob@example.org", knowledge_base="default")
    store.add_turn(bob.id, "user:bob@example.org",
                   runs["answered"].model_copy(update={"id": uuid.uuid4().hex}))
    store.rename_thread(bob.id, "user:bob@example.org", "Bob private notes")
    server = Server(papers_copy, tmp_path / "streamlit.log", port=port,
                    args=("--secrets.files", str(secrets)))
    outside: list[tuple[str, str]] = []
    try:
        # Ann asks a question: her conversation is hers, and Bob's is nowhere on her page
        context, page, errors = log_in(browser, server.url, "ann@example.org", outside)
        assert sidebar_threads(page) == []
        box = page.get_by_placeholder("Ask about your documents")
        box.fill("What is Self-RAG?")
        box.press("Enter")
        page.get_by_role("button", name="Open trace").first.wait_for(timeout=120_000)
        idle(page)
        assert sidebar_threads(page) == ["What is Self-RAG? (1)"]
        assert page.get_by_text("Bob private notes").count() == 0
        assert page.get_by_text("All users").count() == 0 and page.get_by_text("All sessions").count() == 0
        [ann] = store.list_threads("user:ann@example.org")
        page.goto(f"{server.url}/chat?thread={bob.id}")  # a link to Bob's conversation does not open it
        page.get_by_text("The link names a conversation that does not exist or is not yours.").wait_for()
        assert page.get_by_text("Bob private notes").count() == 0
        page.screenshot(path=str(ARTIFACTS / "login-1-ann.png"), full_page=True)
        assert not errors, errors
        context.close()

        # Bob sees his own only
        context, page, errors = log_in(browser, server.url, "bob@example.org", outside)
        page.screenshot(path=str(ARTIFACTS / "login-2-bob.png"), full_page=True)
        page.locator("[data-testid=stSidebar]").get_by_text("Bob private notes (1)").wait_for()
        assert sidebar_threads(page) == ["Bob private notes (1)"]
        assert page.get_by_text("All users").count() == 0
        page.screenshot(path=str(ARTIFACTS / "login-2-bob.png"), full_page=True)
        assert not errors, errors
        context.close()

        # the admin lists both with All users, read-only
        context, page, errors = log_in(browser, server.url, "root@example.org", outside)
        assert sidebar_threads(page) == []
        page.locator("[data-testid=stSidebar] label").filter(has_text="All users").first.click()
        page.locator("[data-testid=stSidebar]").get_by_text("Bob private notes (1) · read-only").wait_for()
        idle(page)
        assert sorted(sidebar_threads(page)) == ["Bob private notes (1) · read-only",
                                                 "What is Self-RAG? (1) · read-only"]
        page.screenshot(path=str(ARTIFACTS / "login-3-admin.png"), full_page=True)
        assert not errors, errors
        context.close()
        assert store.owner(store.get_thread(ann.id).turns[0].run.id) == "user:ann@example.org"
        # the provider's own form asks a CDN for its stylesheet (refused); no page of the app asks anything
        assert all(asker.startswith(oidc) for asker, _ in outside), outside
    finally:
        server.stop()
