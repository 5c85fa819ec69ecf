"""The run history on PostgreSQL (``RAG_DATABASE_URL``, issue 20).

The same store as on SQLite, shared by every process that opens the same URL.
"""

from __future__ import annotations

import json
import threading

import pytest

from rag.config import Settings
from rag.history import FEEDBACK_UP, RunOwnedElsewhere, RunStore, location
from rag.models import Comparison, Run
from tests.legacy_history import LEGACY_RUNS

pytestmark = pytest.mark.server


@pytest.fixture
def legacy() -> list[Run]:
    return [Run.model_validate(r) for r in json.loads(LEGACY_RUNS.read_text())]


def test_settings_choose_the_database(tmp_path, database_url):
    with_url = Settings.from_env({"RAG_DATABASE_URL": database_url}, data_dir=tmp_path)
    assert location(with_url) == database_url
    assert database_url not in repr(with_url)  # it may hold a password
    assert location(Settings.from_env({}, data_dir=tmp_path)) == str(tmp_path / "runs.sqlite")


def test_two_replicas_share_runs_threads_feedback_and_comparisons(database_url, legacy):
    one, two = RunStore(database_url), RunStore(database_url)  # as two processes would open it
    for run in legacy[:3]:
        one.save(run, "alice")
    assert [s.id for s in two.list()] == [r.id for r in sorted(legacy[:3], key=lambda r: -r.created_at)]
    assert two.get(legacy[0].id) == legacy[0] and two.count("alice") == 3
    assert [s.id for s in two.list(query=legacy[1].question[5:20].upper())] == [legacy[1].id]
    assert two.list(query="100%_") == []  # LIKE's wildcards are matched as text

    assert one.set_feedback(legacy[0].id, "alice", FEEDBACK_UP)
    assert two.feedback() == {legacy[0].id: 1}
    one.save(legacy[0], "alice")  # saving again keeps the feedback
    assert two.feedback([legacy[0].id, "nope"]) == {legacy[0].id: 1}
    with pytest.raises(RunOwnedElsewhere):
        two.save(legacy[0], "bob")

    thread = one.create_thread("alice", knowledge_base="default")
    assert one.add_turn(thread.id, "alice", legacy[0]) == 1
    assert two.add_turn(thread.id, "alice", legacy[1]) == 2  # a follow-up on the other replica
    assert two.add_turn(thread.id, "alice", legacy[2], turn=2) == 2  # a regenerated answer
    seen = one.get_thread(thread.id)
    assert [(t.turn, [r.id for r in t.runs]) for t in seen.turns] == [
        (1, [legacy[0].id]), (2, [legacy[1].id, legacy[2].id])]
    assert seen.summary.title == legacy[0].question and seen.summary.turns == 2
    assert [t.id for t in two.list_threads("alice")] == [thread.id] and two.list_threads("bob") == []
    with pytest.raises(RunOwnedElsewhere):
        two.rename_thread(thread.id, "bob", "mine")
    assert two.rename_thread(thread.id, "alice", "Renamed")
    assert one.get_thread(thread.id).summary.title == "Renamed"

    cmp = Comparison(id="cmp-pg", question=legacy[3].question, created_at=5.0, labels=["A", "B"],
                     runs=[legacy[3], legacy[4]])
    one.save_comparison(cmp, "alice")
    back = two.get_comparison("cmp-pg")
    assert back is not None and [r.id for r in back.runs] == [legacy[3].id, legacy[4].id]
    assert [c.id for c in two.list_comparisons("alice")] == ["cmp-pg"]

    assert two.delete_thread(thread.id, "alice", with_runs=True)
    assert one.get_thread(thread.id) is None and one.get(legacy[1].id) is None
    assert {s.id for s in one.list()} == {legacy[3].id, legacy[4].id}  # the thread's runs went with it


def test_turns_added_at_once_from_many_connections_get_distinct_numbers(database_url, legacy):
    stores = [RunStore(database_url) for _ in range(2)]
    thread = stores[0].create_thread("alice")
    copies = [legacy[0].model_copy(update={"id": f"run-{i}"}) for i in range(12)]
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            stores[i % 2].add_turn(thread.id, "alice", copies[i])
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    workers = [threading.Thread(target=add, args=(i,)) for i in range(len(copies))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert [t.turn for t in stores[1].get_thread(thread.id).turns] == list(range(1, 13))


def test_an_unreachable_database_is_a_one_line_oserror(postgres):
    with pytest.raises(OSError, match="cannot open the run history postgresql://postgres@127.0.0.1"):
        RunStore(postgres.url("no_such_database"))
