"""The replay, unrolled-path and timeline figures and the run's story.

Checked from the figures' JSON on real runs (the offline engine over the RAG papers, the LLM engine on a fake
server).
"""

from __future__ import annotations

import json
import re

import pytest

from rag.trace import charts as figures
from rag.trace import replay, story, views
from rag.trace.pricing import event_cost
from tests.run_fixtures import CLAIM, PRICES


def as_json(fig) -> dict:
    return json.loads(fig.to_json())


def trace(fig: dict, name: str) -> dict:
    return next(t for t in fig["data"] if t.get("name") == name)


def plain(text: str) -> str:
    text = re.sub(r"<[^>]+>", " ", text.replace("<br>", " "))
    text = re.sub(r"&#(\d+);", lambda m: chr(int(m.group(1))), text)
    return " ".join(text.split())


def segments(xs: list) -> list[list]:
    """A None-separated polyline back into its pieces."""
    out, cur = [], []
    for x in xs:
        if x is None:
            out.append(cur)
            cur = []
        else:
            cur.append(x)
    return out + ([cur] if cur else [])


def test_replay_has_one_frame_per_step_in_the_runs_order(runs):
    run = runs["rewritten"]
    fig = as_json(replay.replay_figure(run))
    n = len(run.events)
    assert [f["name"] for f in fig["frames"]] == [str(k) for k in range(n + 1)]
    names = [t["name"] for t in fig["data"]]
    assert [names[i] for i in fig["frames"][0]["traces"]] == list(replay.REPLAY_TRACES)
    # the flow itself is all there: every node, every step label
    nodes = trace(fig, "nodes")
    assert set(run.path) <= set(nodes["customdata"])
    assert sum(1 for a in fig["layout"]["annotations"] if a.get("name", "").startswith("step:")) == n

    pos = dict(zip(nodes["customdata"], zip(nodes["x"], nodes["y"], strict=False), strict=False))
    previous = "__start__"
    for k, frame in enumerate(fig["frames"]):
        trail, ring, current, caption = frame["data"]
        assert len(segments(trail["x"])) == k  # steps 1..k, one edge each
        if k == 0:
            assert current["customdata"] == ["__start__"]
            assert "Step 0 of" in plain(caption["text"][0])
            continue
        node = run.path[k - 1]
        # the k-th piece of the trail is the edge the run took into step k
        path = trace(fig, f"path:{previous}->{node}")
        assert segments(trail["x"])[k - 1] == path["x"]
        assert segments(trail["y"])[k - 1] == path["y"]
        # the ring surrounds the node of step k, and the label names it with its attempt
        x, y = pos[node]
        assert min(ring["x"]) < x < max(ring["x"]) and min(ring["y"]) < y < max(ring["y"])
        assert current["customdata"] == [node]
        label = story.steps(run)[k - 1].label
        assert plain(current["text"][0]) == f"{k}. {label}"
        said = plain(caption["text"][0])
        assert said.startswith(f"Step {k} of {n} · {label}")
        event = run.events[k - 1]
        assert " ".join(story.event_summary(event).split())[:60] in said
        if event.route:
            assert f"→ {event.route.to}" in said
        previous = node


def test_replay_slider_and_play_pause_drive_the_frames(runs):
    run = runs["answered"]
    fig = as_json(replay.replay_figure(run, step=2))
    [slider] = fig["layout"]["sliders"]
    assert slider["active"] == 2
    assert [s["args"][0] for s in slider["steps"]] == [[str(k)] for k in range(len(run.events) + 1)]
    assert all(s["method"] == "animate" for s in slider["steps"])
    [menu] = fig["layout"]["updatemenus"]
    play, pause = menu["buttons"]
    assert "Play" in play["label"] and play["args"][0] == [f["name"] for f in fig["frames"]]
    assert play["args"][1]["frame"]["duration"] == replay.FRAME_MS
    assert "Pause" in pause["label"] and pause["args"][0] == [None]
    # the figure opens on frame 2: its replay traces hold frame 2's data
    assert trace(fig, "replay:current")["customdata"] == [run.path[1]]
    assert trace(fig, "replay:trail")["x"] == fig["frames"][2]["data"][0]["x"]
    # out of range is clamped, the default is the whole run
    assert as_json(replay.replay_figure(run, step=99))["layout"]["sliders"][0]["active"] == \
        len(run.events)
    assert as_json(replay.replay_figure(run))["layout"]["sliders"][0]["active"] == len(run.events)


def test_loops_are_unrolled_and_labelled_with_attempts(runs):
    run = runs["rewritten"]
    labels = [s.label for s in story.steps(run)]
    i = run.path.index("retrieve")  # after whatever runs once first (decompose_query)
    assert labels[i:i + 8] == ["retrieve 1 of 3", "grade_documents 1 of 3", "rewrite 1 of 2",
                               "retrieve 2 of 3", "grade_documents 2 of 3", "rewrite 2 of 2",
                               "retrieve 3 of 3", "grade_documents 3 of 3"]
    assert labels[i + 8:i + 11] == ["web_search", "generate", "check_grounding"]
    assert labels[-1] == "finalize_with_caveat"
    rounds = story.rounds(run)
    assert [r.number for r in rounds] == [1, 2, 3]
    assert [len(r.steps) for r in rounds] == [i + 3, 3, len(run.events) - 6 - i]
    queries = [e.detail.query for e in run.events if e.node == "retrieve"]
    assert [r.query for r in rounds] == queries and rounds[0].query == run.question
    # each step says what it decided and why the run went on
    for s, e in zip(story.steps(run), run.events, strict=False):
        assert s.decided == story.event_summary(e)  # an ending: its kind (the reason is said once)
        assert s.why == (e.route.why if e.route else "the run ends here")

    fig = as_json(figures.path_figure(run))
    steps = trace(fig, "steps")
    assert steps["customdata"] == run.path
    assert [plain(t) for t in steps["text"]] == [f"{k}. {label}" for k, label in
                                                 enumerate(labels, 1)]
    bands = [s["name"] for s in fig["layout"]["shapes"] if s["name"].startswith("attempt:")]
    assert bands == ["attempt:1", "attempt:2", "attempt:3"]
    colors = {s["name"]: s["fillcolor"] for s in fig["layout"]["shapes"]}
    assert colors[f"step:{i + 3}"] == views.STATUS_COLORS[views.WEAK]  # a rewrite
    assert colors[f"step:{len(run.events)}"] == views.STATUS_COLORS[views.WEAK]  # the caveat
    assert colors[f"step:{i + 1}"] == views.STATUS_COLORS[views.OK]  # chunks came back


def test_naive_run_is_one_attempt(runs):
    run = runs["naive"]
    assert [s.label for s in story.steps(run)] == ["retrieve", "generate", "finalize"]
    assert len(story.rounds(run)) == 1
    assert story.stop_kind(run) == story.ANSWERED and story.stop_kind(runs["abstained"]) == \
        story.ABSTAINED and story.stop_kind(runs["rewritten"]) == story.CAVEAT


def test_timeline_bars_follow_the_events(runs):
    run = runs["rewritten"]
    fig = as_json(figures.timeline_figure(run, PRICES))
    bars = trace(fig, "steps")
    assert bars["y"] == [figures.tick_label(f"{s.step}. {s.label}") for s in story.steps(run)]
    t0 = run.events[0].started_at
    for base, width, e in zip(bars["base"], bars["x"], run.events, strict=False):
        assert base == pytest.approx((e.started_at - t0) * 1000, abs=0.01)
        assert width == pytest.approx(max(e.duration_ms, 0.05))
    assert bars["base"] == sorted(bars["base"])  # nodes run one after another
    assert all(row[1:4] == [0, 0, 0] and row[4] == "$0" for row in bars["customdata"])
    assert set(bars["text"]) == {""}  # no LLM ran: no token labels
    assert "0 LLM calls" in fig["layout"]["title"]["text"]


def test_llm_run_story_verdicts_claims_fallbacks_tokens_and_cost(llm):
    run = llm
    # Updated for issue 10: the rewrite brings back the same evidence, so the answer is not
    # generated (and checked) again and the run stops after one rewrite, saying why; the old
    # second rewrite, where the model repeated its query and the rewriter fell back, is gone.
    # (round 5: the first rewrite searches the document the question names, which brings new evidence, so
    # the answer is checked again; the second brings the same evidence and the budget is spent)
    assert story.headline(run) == ("Answered with caveat: the rewrite budget (2) was spent and 1 claim "
                                   "could not be verified and the evidence did not change after the last "
                                   "correction, so the previous answer stands")
    # every grounding check failed and lists its claim
    checks = story.checks(run)
    assert [c.kind for c in checks] == ["grounding", "grounding"]
    assert all(not c.passed and c.claims == (CLAIM,) for c in checks)
    assert checks[0].reasoning == "The cited chunk says nothing about ImageNet."
    rewrites = [s for s in story.steps(run) if s.node == "rewrite_query"]
    assert [s.label for s in rewrites] == ["rewrite 1 of 2", "rewrite 2 of 2"]
    assert not rewrites[0].fallbacks
    # chunk verdicts sit on their chunks, with the model's reason
    grading = next(e for e in run.events if e.node == "grade_documents")
    verdicts = story.chunk_verdicts(grading)
    assert len(verdicts) >= 6 and all(v.relevant and v.grade == "high" for v in verdicts)
    assert all(v.source.endswith(".pdf") and v.page >= 1 for v in verdicts)
    assert {v.reasoning for v in verdicts} == {"The chunk discusses the question's topic."}
    line = story.verdict_line(verdicts[0])
    assert line.startswith("relevant · high · ") and "p." in line

    # tokens and cost per node on the timeline, priced by role (grader vs generator)
    fig = as_json(figures.timeline_figure(run, PRICES))
    bars = trace(fig, "steps")
    for e, row, text in zip(run.events, bars["customdata"], bars["text"], strict=False):
        assert row[:4] == [e.node, e.llm_calls, e.prompt_tokens, e.completion_tokens]
        if e.prompt_tokens or e.completion_tokens:
            # route_question is priced as the grader's (issue 13: routing is a grader call)
            grader = e.node in ("grade_documents", "route_question")
            price = PRICES["grader-mini" if grader else "generator-big"]
            want = (e.prompt_tokens * price.input + e.completion_tokens * price.output) / 1e6
            assert event_cost(e, run, PRICES) == pytest.approx(want)
            assert text.startswith(f"{e.prompt_tokens + e.completion_tokens} tok · $")
    assert f"{run.llm_calls} LLM calls" in fig["layout"]["title"]["text"]
