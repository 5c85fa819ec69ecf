"""Run history in a real SQLite file, comparisons, exports and their CLI, on real runs."""

from __future__ import annotations

import json
import re
import sqlite3
import threading

import pytest

from rag.models import Comparison
from rag.config import custom_label, parse_pipelines
from rag.trace.story import grounded_verdict, useful_verdict
from rag.run import run_comparison
from rag.config import preset_options
from rag.trace.export import comparison_html, comparison_json, run_html, run_json
from rag.run import make_context, run_question
from rag.history import CLI_SESSION, RunOwnedElsewhere, RunStore
from rag.config import preset_of
from tests.conftest import LEWIS, SELF_RAG
from tests.run_fixtures import CLAIM, KEY, PRICES, QUESTION


# --------------------------------------------------------------------------- the store


def test_a_run_round_trips_and_survives_a_restart(tmp_path, runs):
    path = tmp_path / "data" / "runs.sqlite"
    store = RunStore(path)
    for r in runs.values():
        store.save(r, "session-a")
    again = RunStore(path)  # a new process opening the same file
    for r in runs.values():
        back = again.get(r.id)
        assert back is not None and back.model_dump() == r.model_dump()
    assert again.get("no-such-run") is None
    summaries = again.list()
    assert [s.id for s in summaries] == [r.id for r in sorted(
        runs.values(), key=lambda r: r.created_at, reverse=True)]
    s = next(s for s in summaries if s.id == runs["rewritten"].id)
    assert (s.question, s.engine, s.stop_kind, s.preset, s.steps) == (
        runs["rewritten"].question, "local", "caveat", "custom", len(runs["rewritten"].events))
    assert next(s for s in summaries if s.id == runs["answered"].id).preset == "full"
    assert next(s for s in summaries if s.id == runs["naive"].id).preset == "naive"


def test_sessions_see_their_own_runs_and_never_overwrite_or_delete_others(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    store.save(runs["answered"], "alice")
    store.save(runs["naive"], "alice")
    store.save(runs["abstained"], "bob")
    assert {s.id for s in store.list("alice")} == {runs["answered"].id, runs["naive"].id}
    assert [s.id for s in store.list("bob")] == [runs["abstained"].id]
    assert store.count() == 3 and store.count("alice") == 2
    assert store.owner(runs["abstained"].id) == "bob"

    # bob may read alice's run, but neither overwrite nor delete it
    assert store.get(runs["answered"].id).question == runs["answered"].question
    with pytest.raises(RunOwnedElsewhere):
        store.save(runs["answered"], "bob")
    with pytest.raises(RunOwnedElsewhere):
        store.delete(runs["answered"].id, "bob")
    assert store.get(runs["answered"].id) is not None
    # alice may re-save (replace) and delete her own
    store.save(runs["answered"], "alice")
    assert store.count("alice") == 2
    assert store.delete(runs["answered"].id, "alice") is True
    assert store.get(runs["answered"].id) is None
    assert store.delete(runs["answered"].id, "alice") is False
    with pytest.raises(ValueError):
        store.save(runs["rewritten"], "")


def test_filters_by_question_and_ending(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    for r in runs.values():
        store.save(r, "s")
    assert {s.id for s in store.list(query="tungsten")} == {runs["abstained"].id}
    assert {s.id for s in store.list(query="TUNGSTEN")} == {runs["abstained"].id}
    assert store.list(query="100%_") == []  # LIKE wildcards are taken literally
    assert {s.id for s in store.list(stop_kinds=["abstained", "caveat"])} == {
        runs["abstained"].id, runs["rewritten"].id}
    assert len(store.list(limit=2)) == 2
    assert {r.id for r in store.load("s")} == {r.id for r in runs.values()}


def test_concurrent_saves_from_many_threads(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    copies = [r.model_copy(update={"id": f"{r.id}-{i}"}) for i in range(10)
              for r in runs.values()]
    errors: list[BaseException] = []

    def save(chunk):
        try:
            for r in chunk:
                store.save(r, "threads")
        except BaseException as exc:  # pragma: no cover - the assertion shows it
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(copies[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and store.count("threads") == len(copies)


def test_a_file_that_is_not_a_history_is_a_clear_error(tmp_path):
    bad = tmp_path / "runs.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(OSError, match="cannot open the run history"):
        RunStore(bad)


def test_keys_never_reach_the_history_or_an_export(tmp_path, llm):
    store = RunStore(tmp_path / "runs.sqlite")
    store.save(llm, "s")
    assert KEY not in (tmp_path / "runs.sqlite").read_bytes().decode("latin-1")
    for text in (run_json(llm, prices=PRICES), run_html(llm, prices=PRICES)):
        assert KEY not in text
    # a key pasted into a question by mistake is redacted when the session's keys are given
    leaky = llm.model_copy(update={"question": f"why does {KEY} fail?"})
    for text in (run_json(leaky, secrets=[KEY]), run_html(leaky, secrets=[KEY])):
        assert KEY not in text and "why does [redacted] fail?" in text


# --------------------------------------------------------------------------- compare


def test_parse_pipelines():
    pipes = parse_pipelines("naive,crag,full")
    assert [label for label, _ in pipes] == ["Naive RAG", "Corrective RAG (CRAG)", "Full"]
    assert [preset_of(o) for _, o in pipes] == ["naive", "crag", "full"]
    pipes = parse_pipelines(["self-rag"], ["grading+rewriting"], top_k=4)
    assert pipes[1][0] == "Custom: grading, rewriting" == custom_label(pipes[1][1])
    assert pipes[1][1].grading and pipes[1][1].rewriting and not pipes[1][1].web_fallback
    assert all(o.top_k == 4 for _, o in pipes)
    for bad, said in (("naive", "2 to 4"), ("naive,crag,self-rag,full,naive", "twice"),
                      ("naive,crag,self-rag,full", None), ("naive,bogus", "unknown preset")):
        if said is None:
            assert len(parse_pipelines(bad)) == 4
            continue
        with pytest.raises(ValueError, match=said):
            parse_pipelines(bad)
    with pytest.raises(ValueError, match="unknown switch"):
        parse_pipelines("naive", ["grading+magic"])
    with pytest.raises(ValueError, match="2 to 4"):
        parse_pipelines("naive,crag,self-rag,full", ["none"])


def test_compare_runs_pipelines_at_once_and_matches_one_by_one(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    pipes = parse_pipelines("naive,crag,full")
    cmp = run_comparison(QUESTION, ctx, pipes)
    assert cmp.labels == ["Naive RAG", "Corrective RAG (CRAG)", "Full"]
    assert [preset_of(r.options) for r in cmp.runs] == ["naive", "crag", "full"]
    assert cmp.runs[0].path == ["retrieve", "generate", "finalize"]
    assert cmp.runs[1].path[:2] == ["retrieve", "grade_documents"]
    assert "check_grounding" in cmp.runs[2].path and "check_grounding" not in cmp.runs[1].path
    assert len({r.id for r in cmp.runs}) == 3 and all(r.question == QUESTION for r in cmp.runs)
    assert [grounded_verdict(r) for r in cmp.runs][:2] == ["not checked"] * 2
    assert grounded_verdict(cmp.runs[2]) in ("grounded",) or \
        grounded_verdict(cmp.runs[2]).startswith("not grounded")
    assert useful_verdict(cmp.runs[0]) == "not checked"
    # the offline engine is deterministic: running concurrently changes nothing
    one_by_one = run_comparison(QUESTION, ctx, pipes, concurrent=False)
    for a, b in zip(cmp.runs, one_by_one.runs):
        assert (a.path, a.answer, a.citations, a.stop_reason) == (b.path, b.answer, b.citations,
                                                                  b.stop_reason)
    with pytest.raises(ValueError, match="empty"):
        run_comparison("  ", ctx, pipes)


def test_comparisons_are_saved_with_their_runs(tmp_path, papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    cmp = run_comparison(QUESTION, ctx, parse_pipelines("naive,full"))
    store = RunStore(tmp_path / "runs.sqlite")
    store.save_comparison(cmp, "s")
    back = store.get_comparison(cmp.id)
    assert isinstance(back, Comparison) and back.labels == cmp.labels
    assert [r.model_dump() for r in back.runs] == [r.model_dump() for r in cmp.runs]
    assert [s.comparison_id for s in store.list("s")] == [cmp.id, cmp.id]
    assert store.list_comparisons("s")[0].run_ids == [r.id for r in cmp.runs]
    with pytest.raises(RunOwnedElsewhere):
        store.save_comparison(cmp, "other")


# --------------------------------------------------------------------------- exports


def test_run_html_is_self_contained_with_replay_verdicts_and_answer(llm):
    html = run_html(llm, prices=PRICES)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    # plotly.js is inlined exactly once; nothing is fetched from anywhere
    assert html.count("plotly.js v") == 1 or html.count("* plotly.js") == 1
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=", html)
    assert "cdn.plot.ly/plotly" not in html.split("</script>", 1)[1]
    # the flow with its replay frames, and the timeline
    assert html.count('class="plotly-graph-div"') == 2
    assert '"frames"' in html or "frames" in html and "Plotly.addFrames" in html
    assert "▶ Play" in html
    # the stop reason, the verdicts with their reasons, the failed checks with their claim,
    # the fallback, and the answer with its sources
    assert llm.stop_reason in html
    assert "The chunk discusses the question&#x27;s topic." in html
    # (one failed grounding check since issue 10: the rewrite brought back the same evidence, so
    # no second answer was generated and checked; the claim shows in the check and its caveat)
    assert html.count(CLAIM) >= 2 and "not grounded" in html
    # (since issue 10 the run stops after the first rewrite, whose evidence is unchanged: the
    # second rewrite, where the fake model repeated its query and the rewriter fell back, and
    # its "rewrite 2 of 2" are gone; the stop reason says why instead)
    assert "evidence did not change" in html
    assert llm.answer.split("\n")[0][:40] in html.replace("&#x27;", "'")
    assert f"[{llm.citations[0].n}]" in html and llm.citations[0].source in html
    assert "rewrite 1 of 2" in html


def test_html_escapes_everything(runs):
    evil = runs["naive"].model_copy(update={"question": "<script>alert('x')</script> & co"})
    html = run_html(evil)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co" in html


def test_json_exports(runs, papers_kb):
    doc = json.loads(run_json(runs["rewritten"]))
    assert doc["format"] == "retrace.run/1" and doc["stop_kind"] == "caveat"
    assert doc["preset"] == "Custom" and doc["cost_usd"] == 0  # Full without decomposition
    assert doc["run"]["id"] == runs["rewritten"].id
    assert [e["node"] for e in doc["run"]["events"]] == runs["rewritten"].path
    cmp = run_comparison(QUESTION, make_context(papers_kb.settings, papers_kb),
                         parse_pipelines("naive,crag,full"))
    doc = json.loads(comparison_json(cmp))
    assert doc["format"] == "retrace.comparison/1" and doc["question"] == QUESTION
    assert [p["label"] for p in doc["pipelines"]] == cmp.labels
    assert [p["run"]["path"] for p in doc["pipelines"]] == [r.path for r in cmp.runs]
    html = comparison_html(cmp)
    assert html.count("plotly.js v") == 1 or html.count("* plotly.js") == 1
    assert not re.search(r"<script[^>]+src=", html)
    for label in cmp.labels:
        assert label.replace("(", "(") in html
    # a small path per pipeline, then each run in full (flow with replay, timeline)
    assert html.count('class="plotly-graph-div"') == 3 + 2 * 3


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def rag_cli(cli):
    """``python -m rag ARGS... --data-dir D``, in this process."""
    return lambda *args, data_dir: cli(*args, "--data-dir", data_dir)


@pytest.mark.slow
def test_cli_ask_compare_list_and_export(tmp_path, rag_cli):
    data = tmp_path / "data"
    assert rag_cli("ingest", str(LEWIS), str(SELF_RAG), data_dir=data).returncode == 0

    out = rag_cli("ask", QUESTION, "--json", data_dir=data)
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run_id"]
    store = RunStore(data / "runs.sqlite")
    assert store.owner(run_id) == CLI_SESSION and store.get(run_id).question == QUESTION

    out = rag_cli("compare", QUESTION, "--presets", "naive,crag,full", "--json", data_dir=data)
    assert out.returncode == 0, out.stderr
    cmp = json.loads(out.stdout)
    assert [p["label"] for p in cmp["pipelines"]] == ["Naive RAG", "Corrective RAG (CRAG)",
                                                     "Full"]
    assert cmp["pipelines"][0]["path"] == ["retrieve", "generate", "finalize"]
    assert all(p["llm_calls"] == 0 and p["cost_usd"] == 0 for p in cmp["pipelines"])
    assert {"answer", "citations", "stop_reason", "grounded", "useful", "run_id"} <= set(
        cmp["pipelines"][0])

    out = rag_cli("compare", QUESTION, "--presets", "naive,full", data_dir=data)
    assert out.returncode == 0 and "== Naive RAG" in out.stdout and "== Full" in out.stdout

    out = rag_cli("runs", "list", "--json", data_dir=data)
    listed = json.loads(out.stdout)
    assert len(listed) == 1 + 3 + 2 and listed[-1]["id"] == run_id
    assert {r["session_id"] for r in listed} == {CLI_SESSION}
    out = rag_cli("runs", "list", data_dir=data)
    assert out.returncode == 0 and run_id in out.stdout and QUESTION[:40] in out.stdout

    html_file, json_file = tmp_path / "run.html", tmp_path / "run.json"
    out = rag_cli("runs", "export", run_id, "--format", "html", "--out", str(html_file),
                  data_dir=data)
    assert out.returncode == 0, out.stderr
    assert "<!DOCTYPE html>" in html_file.read_text() and QUESTION in html_file.read_text()
    out = rag_cli("runs", "export", run_id, "--format", "json", "--out", str(json_file),
                  data_dir=data)
    assert json.loads(json_file.read_text())["run"]["id"] == run_id
    out = rag_cli("runs", "export", cmp["comparison_id"], "--format", "json", "--out",
                  str(json_file), data_dir=data)
    assert json.loads(json_file.read_text())["id"] == cmp["comparison_id"]

    out = rag_cli("runs", "export", "nope", "--format", "json", "--out", str(json_file),
                  data_dir=data)
    assert out.returncode == 2 and "no run or comparison with id 'nope'" in out.stderr
    assert "Traceback" not in out.stderr
    out = rag_cli("compare", QUESTION, "--presets", "naive", data_dir=data)
    assert out.returncode == 2 and "compare 2 to 4 pipelines" in out.stderr
    assert "Traceback" not in out.stderr


def test_sqlite_file_is_plain_sqlite(tmp_path, runs):
    """Other tools can read the history: one row per run, the run as JSON."""
    store = RunStore(tmp_path / "runs.sqlite")
    store.save(runs["naive"], "s")
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        (data,) = db.execute("SELECT data FROM runs WHERE id = ?", (runs["naive"].id,)).fetchone()
    assert json.loads(data)["path"] == ["retrieve", "generate", "finalize"]


def test_a_run_asked_again_gets_a_new_id(papers_kb):
    ctx = make_context(papers_kb.settings, papers_kb)
    a = run_question(QUESTION, ctx, preset_options("naive"))
    b = run_question(QUESTION, ctx, preset_options("naive"))
    assert a.id != b.id


# --------------------------------------------------------------------------- session + history


def test_history_merges_this_sessions_unsaved_runs_with_the_saved_ones(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    answered, naive, rewritten, abstained = (runs[k] for k in
                                             ("answered", "naive", "rewritten", "abstained"))
    store.save(answered, "me")
    store.save(abstained, "someone-else")
    # in memory: one run also saved, one the history could not take (unsaved)
    session = [answered, rewritten]
    newest_first = sorted([answered, rewritten], key=lambda r: r.created_at, reverse=True)
    assert [s.id for s in store.history(session, "me")] == [r.id for r in newest_first]
    both = store.history(session, "me", all_sessions=True)
    assert sorted(s.id for s in both) == sorted(r.id for r in (answered, rewritten, abstained))
    assert [s.created_at for s in both] == sorted((s.created_at for s in both), reverse=True)
    unsaved = next(s for s in both if s.id == rewritten.id)
    assert (unsaved.session_id, unsaved.stop_kind, unsaved.preset, unsaved.steps) == (
        "me", "caveat", "custom", len(rewritten.events))
    # an unsaved run is filtered like the saved ones: by words of its question, by its ending
    assert [s.id for s in store.history(session, "me", query=rewritten.question[5:25].upper())
            ] == [rewritten.id]
    assert [s.id for s in store.history(session, "me", stop_kinds=["caveat"])] == [rewritten.id]
    assert store.history(session, "me", stop_kinds=["abstained"]) == []
    assert [s.id for s in store.history([naive], "me", all_sessions=True,
                                        stop_kinds=["abstained"])] == [abstained.id]
    # each run once, as saved (its owner is the saving session)
    assert [s.session_id for s in store.history([abstained], "me", all_sessions=True)
            if s.id == abstained.id] == ["someone-else"]


def test_load_with_counts_every_run_once(tmp_path, runs):
    store = RunStore(tmp_path / "runs.sqlite")
    store.save(runs["answered"], "me")
    store.save(runs["abstained"], "someone-else")
    mine = store.load_with([runs["answered"], runs["naive"]], "me")
    assert [r.id for r in mine] == [runs["answered"].id, runs["naive"].id]
    every = store.load_with([runs["answered"], runs["naive"]], "me", all_sessions=True)
    assert sorted(r.id for r in every) == sorted(
        r.id for r in (runs["answered"], runs["naive"], runs["abstained"]))
    assert every[-1].id == runs["naive"].id  # unsaved runs come after the saved ones
