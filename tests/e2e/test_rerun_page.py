"""Re-run from here on the Trace page, through AppTest: the child opens in Compare beside its parent.

A real run over the real papers in a real (temporary) Chroma, its checkpoints in the app's data directory.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from rag.config import Settings, preset_options
from rag.history import RunStore
from rag.rerun import step_of
from rag.run import make_context, run_question
from rag.store.chroma import open_knowledge_base
from tests.e2e.conftest import plain
from tests.run_fixtures import QUESTION

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_rerun_from_a_step_opens_the_child_beside_its_parent_in_compare(papers_copy):
    settings = Settings.from_env({}, data_dir=papers_copy)
    parent = run_question(QUESTION, make_context(settings, open_knowledge_base(settings)),
                          preset_options("full"))
    assert parent.thread_id and not parent.error, parent.stop_reason
    step = step_of(parent, "retrieve")

    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception, at.exception
    at.session_state["runs"] = {parent.id: parent}
    at.session_state["trace_run_id"] = parent.id
    at.session_state[f"trace_w_step_{parent.id}"] = step  # the replay shows the step to re-run
    at.switch_page("app_pages/trace.py").run()
    assert not at.exception, at.exception
    p = f"trace_rr_{parent.id}_"
    assert at.number_input(key=f"{p}top_k").value == 6
    assert at.toggle(key=f"{p}grading").value is True
    assert at.radio(key=f"{p}mode").value == parent.options.retrieval
    at.number_input(key=f"{p}top_k").set_value(9)
    at.button(key=f"{p}go_{step}").click().run()
    assert not at.exception, at.exception

    # the child, saved with its parent, is open in Compare beside it
    child_id = next(i for i in at.session_state["runs"] if i != parent.id)
    child = RunStore.for_settings(settings).get(child_id)
    assert child is not None and child.parent_run_id == parent.id and child.from_node == "retrieve"
    assert child.options.top_k == 9 and child.reused_steps == step - 1
    captions = [plain(c.value) for c in at.caption]
    assert any(f"Re-run of run {parent.id} from retrieve" in c
               and f"The first step where they differ is step {step}." in c for c in captions), captions
    table = next(d.value for d in at.dataframe if "re-run" in d.value.columns)
    marked = table[table[""] == "◀ first difference"]
    assert list(marked["step"]) == [step]
    assert list(table["step"][table[""] == "reused"]) == list(range(1, step))
    assert marked["re-run"].iloc[0].startswith("retrieve: ")
    assert "9" in marked["re-run"].iloc[0] and marked["re-run"].iloc[0] != marked["run"].iloc[0]

    # the child's own trace says which steps it reused, and from which run
    at.session_state["trace_run_id"] = child.id
    at.session_state[f"trace_w_step_{child.id}"] = 1
    at.switch_page("app_pages/trace.py").run()
    assert not at.exception, at.exception
    captions = [plain(c.value) for c in at.caption]
    assert f"Reused from run {parent.id}: not executed again in this run." in captions, captions
