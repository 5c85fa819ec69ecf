"""Issue 11 section 5 through AppTest: the page fixes found when Retrace was tried as a new user would.

Compare (the new comparison shown, what self-correction changed, four pipelines in one table), Trace (one
step control; the stop reason said once), status wording and colours (Chat, Settings, Insights), and the
Documents page (a readable chunk preview, Enter submits the password, the uploader emptied after
indexing, every chosen file named in full). Real Chroma holding the two RAG papers in a temporary data
dir, a real run history, the real graph on the offline engine.
"""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from rag.config import Settings
from rag.history import RunStore
from rag.store.chroma import open_knowledge_base
from tests.conftest import ROOT
from tests.e2e.conftest import app_data_dir, plain
from tests.run_fixtures import ABSENT, QUESTION

APP = str(ROOT / "app.py")
ME = "session-me"
ENCRYPTED = ROOT.parent / "shared" / "data" / "tricky-pdfs" / "pypdf__encryption__r4-aes-user-password.pdf"
PASSWORD = "asdfzxcv"



@pytest.fixture
def data_dir(papers_copy):
    """The two papers' data dir, copied for this test (its own history)."""
    return papers_copy


@pytest.fixture
def empty_dir(tmp_path, monkeypatch):
    with app_data_dir(tmp_path / "empty", monkeypatch) as d:
        yield d


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["session_id"] = ME
    at.run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> list[str]:
    """Every string the page shows: Markdown, alerts, captions, labels, figure titles."""
    out = [plain(e.value) for kind in ("markdown", "caption", "success", "info", "warning", "error",
                                       "subheader", "title")
           for e in getattr(at, kind)]
    out += [plain(e.label) for e in at.expander] + [plain(s.label) for s in at.status]
    for chart in at.get("plotly_chart"):
        title = (json.loads(chart.proto.spec)["layout"].get("title") or {}).get("text") or ""
        out.append(re.sub(r"<br>", " ", title))
    return out


def compare(at: AppTest, question: str) -> None:
    at.text_input(key="cmp_w_question").input(question)
    at.button(key="cmp_run").click().run()
    assert not at.exception, at.exception
    assert not any("compare" in e.value for e in at.error), [e.value for e in at.error]


# --------------------------------------------------------------------------- compare


def test_a_new_comparison_is_shown_not_the_previous_one(data_dir):
    at = open_page("compare")
    at.multiselect(key="cmp_w_presets").set_value(["naive", "crag"]).run()
    questions = [QUESTION, ABSENT, "How does Self-RAG decide when to retrieve?"]
    for q in questions:
        compare(at, q)
        heads = [plain(s.value) for s in at.subheader]
        assert f"“{q}”" in heads, (q, heads)
        newest = list(at.session_state["cmp_comparisons"])[-1]
        pickers = [s for s in at.selectbox if s.key == "cmp_w_pick"]  # (the sidebar has the KB picker)
        shown = [newest] if len(at.session_state["cmp_comparisons"]) > 1 else []
        assert [p.value for p in pickers] == shown
    # picking an older one still works
    first = list(at.session_state["cmp_comparisons"])[0]
    at.selectbox(key="cmp_w_pick").set_value(first).run()
    assert f"“{questions[0]}”" in [plain(s.value) for s in at.subheader]


def test_compare_says_what_self_correction_changed_in_one_table_for_four(data_dir):
    at = open_page("compare")
    at.multiselect(key="cmp_w_presets").set_value(["naive", "crag", "self-rag", "full"]).run()
    compare(at, ABSENT)
    [cmp] = at.session_state["cmp_comparisons"].values()
    assert len(cmp.runs) == 4

    # one metrics table, a row per pipeline (no per-column Markdown tables to overflow)
    metrics = next(d.value for d in at.dataframe if "pipeline" in d.value.columns
                   and "latency_ms" in d.value.columns)
    assert list(metrics["pipeline"]) == cmp.labels
    assert list(metrics["steps"]) == [len(r.events) for r in cmp.runs]
    assert not any("| LLM calls |" in m.value for m in at.markdown)

    body = "\n".join(texts(at))
    assert "What self-correction changed" in body
    # the steps each pipeline added over Naive RAG
    full = cmp.runs[cmp.labels.index("Full")]
    naive = cmp.runs[cmp.labels.index("Naive RAG")]
    added = [n for n in dict.fromkeys(full.path) if full.path.count(n) > naive.path.count(n)]
    assert "route_question" in added  # Full's router sends a question outside the knowledge base away
    crag = cmp.runs[cmp.labels.index("Corrective RAG (CRAG)")]
    crag_added = {n for n in crag.path if crag.path.count(n) > naive.path.count(n)}
    assert {"grade_documents", "rewrite_query"} <= crag_added
    line = next(t for t in texts(at) if t.startswith("**Full** added: "))
    assert [s.split(" ×")[0] for s in line.removeprefix("**Full** added: ").split(", ")] == added
    # the verdicts that differ, as a table
    verdicts = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert "ending" in list(verdicts["verdict"])
    assert list(verdicts.columns) == ["verdict", *cmp.labels]
    # where the answers differ: a word diff against Naive RAG
    assert full.answer != naive.answer
    # one paragraph a diff: deletions and insertions as marked spans, not Markdown fragments
    diffs = [h.proto.body for h in at.get("html") if "retrace-diff" in h.proto.body]
    assert diffs and all(d.count("<p ") == 1 for d in diffs), diffs
    assert any("<del " in d for d in diffs) and any("<ins " in d for d in diffs), diffs
    assert not any(":red-background[" in m.value or ":green-background[" in m.value for m in at.markdown)


def test_word_diff_html_keeps_data_inert():
    from rag.trace.diff import diff_html, readable, word_diff

    hostile = "See ![x](http://evil.test/a.png) <img src=x onerror=alert(1)> **now** :red[alarm] $x$"
    page = diff_html(readable(word_diff("An answer.", hostile)))
    # the only markup is our own: every character of the data is HTML-escaped
    assert re.findall(r"<(\w+)", page) == ["p", "del", "ins"], page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img" not in page
    assert "![x](http://evil.test/a.png)" in page  # shown as written (st.html renders no Markdown)


# --------------------------------------------------------------------------- trace


def saved(data_dir, runs, *which: str):
    store = RunStore(data_dir / "runs.sqlite")
    for w in which:
        store.save(runs[w], ME)


def flow_of(at: AppTest) -> dict:
    [chart] = [c for c in at.get("plotly_chart") if c.key.startswith("trace_flow")]
    return json.loads(chart.proto.spec)


def test_the_step_slider_is_the_only_step_control(data_dir, runs):
    run = runs["rewritten"]
    saved(data_dir, runs, "rewritten")
    at = open_page("trace")
    n = len(run.events)
    for k in (n, 3, 0, 5):
        at.slider(key=f"trace_w_step_{run.id}").set_value(k).run()
        assert not at.exception, at.exception
        fig = flow_of(at)
        # no second control: no plotly Play, slider or frames that could run ahead of the page
        assert not fig.get("frames") and not fig["layout"].get("updatemenus")
        assert not fig["layout"].get("sliders")
        caption = next(t for t in fig["data"] if t["name"] == "replay:caption")["text"][0]
        assert caption.startswith(f"<b>Step {k} of {n}"), caption
        panel = [plain(m.value) for m in at.markdown if plain(m.value).startswith("**Step ")]
        assert panel and panel[0].startswith(f"**Step {k}"), panel
    assert not any("Play" in (s.help or "") for s in at.slider)


def test_play_steps_the_page_through_the_run_ringing_each_step_on_the_flow(data_dir, runs):
    run = runs["rewritten"]
    saved(data_dir, runs, "rewritten")
    at = open_page("trace")
    n = len(run.events)
    slider = f"trace_w_step_{run.id}"
    assert at.slider(key=slider).value == n and "Play" in at.button(key="trace_play").label
    at.button(key="trace_play").click().run()  # from the end: starts again at the first step
    shown = []
    for _ in range(n + 1):  # each tick of the fragment's clock is one run
        assert not at.exception, at.exception
        k = at.slider(key=slider).value
        fig = flow_of(at)
        caption = next(t for t in fig["data"] if t["name"] == "replay:caption")["text"][0]
        assert caption.startswith(f"<b>Step {k} of {n}"), caption
        ring = next(t for t in fig["data"] if t["name"] == "replay:current")
        assert ring["customdata"] == [run.events[k - 1].node]  # the current step's node is ringed
        shown.append(k)
        at.run()
    assert shown[:n] == list(range(1, n + 1)), shown
    # at the last step it stops: Play again, the slider left at the end
    assert at.slider(key=slider).value == n and "Play" in at.button(key="trace_play").label
    at.run()
    assert at.slider(key=slider).value == n

    # Pause holds the step shown; Play goes on from there
    at.slider(key=slider).set_value(2).run()
    at.button(key="trace_play").click().run()
    assert at.slider(key=slider).value == 3 and "Pause" in at.button(key="trace_play").label
    at.button(key="trace_play").click().run()
    held = at.slider(key=slider).value
    at.run()
    assert at.slider(key=slider).value == held and "Play" in at.button(key="trace_play").label


@pytest.mark.parametrize("which", ["abstained", "rewritten", "answered"])
def test_the_trace_page_states_the_stop_reason_once(data_dir, runs, which):
    run = runs[which]
    saved(data_dir, runs, which)
    at = open_page("trace")
    shown = texts(at)
    assert sum(t.count(run.stop_reason) for t in shown) == 1, [t for t in shown if run.stop_reason in t]


# --------------------------------------------------------------------------- status wording


def ask(at: AppTest, question: str):
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return next(r for r in reversed(at.session_state["runs"].values()) if r.question == question)


def test_chat_says_why_a_run_stopped_once_and_no_tick_on_no_answer(data_dir):
    at = open_page("chat")
    answered = ask(at, QUESTION)  # the first turn starts the conversation (the page reruns)
    run = ask(at, ABSENT)  # a later turn: its status stays on the page
    assert run.path[-1] == "fallback" and answered.path[-1] == "finalize"
    reason = run.stop_reason.split(": ", 1)[1]
    shown = texts(at)
    assert sum(t.count(reason) for t in shown) == 1, [t for t in shown if reason in t]
    assert sum(t.count(answered.stop_reason) for t in shown) == 1, [
        t for t in shown if answered.stop_reason in t]
    [status] = at.status
    assert status.state != "complete", (status.state, status.label)  # no green tick
    assert "No answer" in plain(status.label)


def test_chat_answered_later_turn_is_complete(data_dir):
    at = open_page("chat")
    ask(at, ABSENT)
    run = ask(at, QUESTION)
    assert run.path[-1] in ("finalize", "finalize_with_caveat")
    [status] = at.status
    assert status.state == "complete" and plain(status.label).startswith("Answered")
    reason = run.stop_reason.split(": ", 1)[1]
    assert sum(t.count(reason) for t in texts(at)) == 1


def test_no_openai_key_is_a_notice_not_an_error(empty_dir):
    at = open_page("settings")
    at.button(key="settings_test_LLM server").click().run()
    at.button(key="settings_test_Web search (Tavily)").click().run()
    assert not at.error, [e.value for e in at.error]
    infos = [plain(i.value) for i in at.info]
    assert any("No OpenAI key: the offline engine is in use." in i for i in infos), infos
    assert any("No Tavily key" in i for i in infos), infos


def test_insights_shows_no_literal_none(data_dir, runs):
    saved(data_dir, runs, "naive", "answered")
    at = open_page("insights")
    table = next(d.value for d in at.dataframe if "pipeline" in d.value.columns)
    naive = table[table["pipeline"] == "Naive RAG"].iloc[0]
    assert naive["hallucination_rate"] == "not checked"
    for column in table.columns:
        for value in table[column]:
            assert value is not None and str(value) not in ("None", "nan"), (column, value)


# --------------------------------------------------------------------------- documents

NOTES = ("# Tungsten notes\n\nTungsten is a metal with the highest melting point.\n\n"
         "It boils at about 5,930 °C.\nIts symbol is W, from *wolfram*.\n")


def test_chunk_preview_is_readable_on_several_lines(empty_dir):
    at = open_page("documents")
    at.file_uploader(key="docs_uploader").set_value([("notes.md", NOTES.encode(), "text/markdown")]).run()
    at.button(key="docs_index").click().run()
    assert not at.exception, at.exception
    kb = open_knowledge_base(Settings.from_env({}, data_dir=empty_dir))
    [doc] = kb.documents()
    [chunk] = kb.document_chunks(doc.doc_sha)
    assert "\n" in chunk.text
    previews = [plain(m.value) for m in at.markdown if "Tungsten is a metal" in plain(m.value)]
    assert previews, [m.value for m in at.markdown]
    # every line of the chunk, in full, as its own line (hard breaks), and the emphasis stays text
    lines = [line.strip() for line in re.split(r" *\n", previews[0]) if line.strip()]
    assert lines == [line.strip() for line in chunk.text.split("\n") if line.strip()]
    assert previews[0].count("  \n") >= len(lines) - 1  # hard breaks, not one run-on line
    assert "\\*wolfram\\*" in next(m.value for m in at.markdown if "wolfram" in m.value)


def test_the_password_is_submitted_by_enter(empty_dir):
    at = open_page("documents")
    at.file_uploader(key="docs_uploader").set_value(
        [(ENCRYPTED.name, ENCRYPTED.read_bytes(), "application/pdf")]).run()
    at.button(key="docs_index").click().run()
    pw = at.text_input(key=f"docs_pw_{ENCRYPTED.name}")
    # in a form: the browser submits it on Enter (with the form's one submit button)
    assert pw.proto.form_id, "the password field is not in a form, so Enter does nothing"
    submit = at.button(key="docs_retry")
    assert submit.proto.form_id == pw.proto.form_id and submit.proto.is_form_submitter
    pw.input(PASSWORD)
    submit.click().run()
    assert not at.exception, at.exception
    assert any(plain(s.value).startswith(f"{ENCRYPTED.name}: ingested") for s in at.success)


def test_the_uploader_is_emptied_after_indexing_and_names_every_file_in_full(empty_dir):
    at = open_page("documents")
    stem = "a-report-with-a-very-long-common-name-for-the-retrieval-experiments"
    names = [f"{stem}-part-one.md", f"{stem}-part-two.md"]
    at.file_uploader(key="docs_uploader").set_value(
        [(n, f"# {n}\n\nTungsten notes {i}.\n".encode(), "text/markdown")
         for i, n in enumerate(names)]).run()
    shown = "\n".join(texts(at)) + "\n".join(str(v) for d in at.dataframe for v in d.value.values.ravel())
    for n in names:
        assert n in shown, (n, shown)  # each chosen file named in full, before indexing
    at.button(key="docs_index").click().run()
    assert not at.exception, at.exception
    assert sum(plain(s.value).endswith("ingested 1 page, 1 chunk") for s in at.success) == 2
    # the chips are gone: no uploader still holds the indexed files
    assert all(not u.value for u in at.file_uploader), [u.value for u in at.file_uploader]
    assert len(at.file_uploader) == 1
