"""Issue 11 section 5, the fixes found when Retrace was tried as a new user would: the pure parts.

Word-boundary cuts with an ellipsis, the timeline's labels on a narrow export, the flow without a
repeated stop reason, the replay driven by one control, and what self-correction changed on the
Compare page (steps added over Naive RAG, verdicts that differ, a word diff, one metric row per
pipeline). Every test runs on real offline runs over the papers (tests/conftest.py).
"""

from __future__ import annotations

import json

import pytest

from rag import text as rtext
from rag.config import preset_options
from rag.models import Comparison
from rag.run import make_context, run_question
from rag.trace import charts, replay, story
from rag.trace import flow as viz
from rag.trace.flow import wrap_html

LONG_QUESTION = ("What does the retrieval component of the retrieval-augmented generation model "
                 "consist of, and how are its query encoder and document index trained together?")


def as_json(fig) -> dict:
    return json.loads(fig.to_json())


class _Diff:
    """rag.trace.diff, imported when a test first uses it (so each test fails on its own without it)."""

    def __getattr__(self, name: str):
        from rag.trace import diff as module

        return getattr(module, name)


diff = _Diff()


# --------------------------------------------------------------------------- cuts


def test_clip_cuts_at_a_word_boundary_with_an_ellipsis():
    text = "the retrieval component consists of a query encoder and a document index"
    for limit in range(20, len(text)):
        out = rtext.clip(text, limit)
        assert len(out) <= limit and out.endswith("…"), (limit, out)
        kept = out[:-1]
        assert text.startswith(kept) and text[len(kept)] == " ", (limit, out)  # a whole word
    assert rtext.clip(text, len(text)) == text
    assert rtext.clip("  two\n lines  ", 40) == "two lines"


def test_replay_caption_is_cut_at_a_word_with_an_ellipsis():
    text = "word " * 40
    for width in range(12, 30):
        lines = wrap_html(text, width, 2).split("<br>")
        assert len(lines) == 2 and lines[-1].endswith("…"), lines
        assert len(lines[-1]) <= width
        assert lines[-1][:-1].split(" ")[-1] == "word", (width, lines)  # no word cut in two


def test_event_summaries_quote_a_long_query_cut_at_a_word(papers_kb):
    run = run_question(LONG_QUESTION, make_context(papers_kb.settings, papers_kb),
                       preset_options("naive"))
    summary = next(e.summary for e in run.events if e.node == "retrieve")
    quoted = summary.split("'")[1]
    assert quoted.endswith("…"), summary
    kept = quoted[:-1]
    assert LONG_QUESTION.startswith(kept) and LONG_QUESTION[len(kept)] == " ", summary


# --------------------------------------------------------------------------- figures


def test_timeline_labels_fit_their_margin_on_a_narrow_page(runs):
    fig = as_json(charts.timeline_figure(runs["rewritten"], {}))
    labels = fig["data"][0]["y"]
    assert len(labels) == len(runs["rewritten"].events)
    lines = [line for label in labels for line in label.split("<br>")]
    assert max(len(line) for line in lines) <= charts.TICK_CHARS, lines
    # the left margin holds the longest line, and plotly may grow it further
    assert fig["layout"]["margin"]["l"] >= charts.TICK_PX * max(len(line) for line in lines)
    assert fig["layout"]["yaxis"]["automargin"] is True
    # no label loses its step number or its attempt
    for label, s in zip(labels, story.steps(runs["rewritten"]), strict=True):
        assert label.replace("<br>", " ").replace("_ ", "_") == f"{s.step}. {s.label}", label


def test_the_flow_does_not_repeat_the_stop_reason(runs):
    for run in runs.values():
        layout = as_json(viz.flow_figure(run))["layout"]
        assert not (layout.get("title") or {}).get("text"), layout.get("title")


def test_replay_without_controls_shows_one_step_and_has_no_play(runs):
    run = runs["rewritten"]
    n = len(run.events)
    fig = as_json(replay.replay_figure(run, step=3, controls=False))
    assert not fig.get("frames")
    assert not fig["layout"].get("sliders") and not fig["layout"].get("updatemenus")
    caption = next(t for t in fig["data"] if t["name"] == "replay:caption")["text"][0]
    assert caption.startswith(f"<b>Step 3 of {n} · ")
    current = next(t for t in fig["data"] if t["name"] == "replay:current")
    assert current["customdata"] == [run.path[2]]
    # the export keeps its own Play, slider and frames
    full = as_json(replay.replay_figure(run))
    assert len(full["frames"]) == n + 1 and full["layout"]["sliders"]


# --------------------------------------------------------------------------- compare


@pytest.fixture(scope="module")
def cmp(runs) -> Comparison:
    return Comparison(question=runs["naive"].question, labels=["Full", "Naive RAG", "Custom"],
                      runs=[runs["answered"], runs["naive"], runs["rewritten"]])


def test_word_diff_marks_removed_and_added_words():
    tokens = diff.word_diff("The retriever is trained end to end.",
                            "The retriever is not trained end to end, jointly.")
    assert [(t.kind, t.text.strip()) for t in tokens] == [
        ("same", "The retriever is"), ("added", "not"), ("same", "trained end to"),
        ("removed", "end."), ("added", "end, jointly.")]
    kept = "".join(t.text for t in tokens if t.kind != diff.REMOVED)
    assert kept == "The retriever is not trained end to end, jointly."
    assert diff.word_diff("same words", "same  words") == [diff.Token("same  words", "same")]


def test_steps_added_over_naive_rag(runs):
    naive, rewritten = runs["naive"], runs["rewritten"]
    assert diff.added_steps(naive, naive) == []
    added = diff.added_steps(naive, rewritten)
    assert added == ["retrieve ×2", "grade_documents ×3", "rewrite_query ×2", "web_search",
                     "check_grounding", "grade_answer", "finalize_with_caveat"]


def test_the_baseline_is_naive_rag_wherever_it_stands(cmp):
    assert diff.baseline(cmp) == 1
    changes = diff.changes(cmp)
    assert [c.label for c in changes] == ["Full", "Custom"]
    full = changes[0]
    assert "grade_documents" in full.added_steps and "check_grounding" in full.added_steps
    custom = changes[1]
    assert not custom.same_answer and custom.diff
    assert any(t.kind == diff.ADDED for t in custom.diff)
    kept = "".join(t.text for t in custom.diff if t.kind != diff.REMOVED)
    assert kept.split() == cmp.runs[2].answer.split()


def test_only_the_verdicts_that_differ_are_listed(cmp, runs):
    rows = diff.verdict_differences(cmp)
    names = [r["verdict"] for r in rows]
    assert "ending" in names and "grounding check" in names and "rewrites" in names
    ending = next(r for r in rows if r["verdict"] == "ending")
    assert ending["Naive RAG"] == "Answered" and ending["Custom"] == "Answered with caveat"
    grounding = next(r for r in rows if r["verdict"] == "grounding check")
    assert grounding["Naive RAG"] == "not checked"
    same = Comparison(question="q", labels=["a", "b"], runs=[runs["naive"], runs["naive"]])
    assert diff.verdict_differences(same) == []


def test_one_metric_row_per_pipeline(cmp):
    rows = diff.metric_rows(cmp, {})
    assert [r["pipeline"] for r in rows] == cmp.labels
    for row, run in zip(rows, cmp.runs, strict=True):
        assert row == {"pipeline": row["pipeline"], "steps": len(run.events), "llm_calls": 0,
                       "tokens": 0, "cost": "$0", "latency_ms": round(run.duration_ms)}


# --------------------------------------------------------------------------- status wording


def test_an_ending_is_summarised_by_its_kind_so_the_reason_is_said_once(runs):
    for which, kind in (("answered", "Answered"), ("rewritten", "Answered with caveat"),
                        ("abstained", "No answer (abstained)")):
        run = runs[which]
        last = run.events[-1]
        assert last.summary == run.stop_reason  # the graph records the reason there
        assert story.event_summary(last) == kind
        assert story.steps(run)[-1].decided == kind
        assert all(story.event_summary(e) == e.summary for e in run.events[:-1])


def test_the_stop_note_is_left_out_when_the_answer_already_says_why(runs):
    assert story.stop_note(runs["answered"]) == runs["answered"].stop_reason
    assert story.stop_note(runs["naive"]) == runs["naive"].stop_reason
    assert story.stop_note(runs["rewritten"]) is None  # "Caveat: …" in the answer
    assert story.stop_note(runs["abstained"]) is None  # "(no retrieved chunk was relevant; …)"
    silent = runs["answered"].model_copy(update={"stop_reason": ""})
    assert story.stop_note(silent) is None


def test_long_node_names_break_after_an_underscore():
    assert viz.node_label("retrieve") == "<b>retrieve</b>"
    assert viz.node_label("contextualize_question") == "<b>contextualize_<br>question</b>"
    assert viz.node_label("finalize_with_caveat") == "<b>finalize_<br>with_caveat</b>"
    assert viz.node_label("grade_documents") == "<b>grade_<br>documents</b>"
    assert viz.node_label("<x>_" + "y" * 20) == "<b>&#60;x&#62;_<br>" + "y" * 20 + "</b>"


def test_a_readable_diff_is_one_deletion_then_one_insertion_per_changed_stretch():
    old = "The retriever is trained end to end with the generator on the data."
    new = "The dense retriever was trained jointly with a BART generator on <b>the</b> data."
    tokens = diff.readable(diff.word_diff(old, new))
    assert [(t.kind, t.text.strip()) for t in tokens] == [
        ("same", "The"), ("removed", "retriever is trained end to end with the"),
        ("added", "dense retriever was trained jointly with a BART"), ("same", "generator on"),
        ("removed", "the"), ("added", "<b>the</b>"), ("same", "data.")]
    assert "".join(t.text for t in tokens if t.kind != diff.REMOVED) == new
    assert "".join(t.text for t in tokens if t.kind != diff.ADDED) == old
    # on one line, as marked spans, the data escaped
    page = diff.diff_html(tokens)
    assert "\n" not in page and page.count("<del ") == 2 and page.count("<ins ") == 2
    assert "&lt;b&gt;the&lt;/b&gt;</ins> data.</p>" in page
