"""Re-run from here in a real browser: the Trace page forks a saved run, and Compare shows both.

Debian's chromium driven by Playwright against ``streamlit run app.py`` over a data directory that holds the
papers and one saved run (with its checkpoints).
"""

from __future__ import annotations

import shutil

import pytest

from rag.config import Settings, preset_options
from rag.history import CLI_SESSION, RunStore
from rag.rerun import step_of
from rag.run import make_context, run_question
from rag.store.chroma import open_knowledge_base
from tests.e2e.conftest import ARTIFACTS, Server, idle, needs_chromium, new_page, open_page
from tests.run_fixtures import QUESTION

pytestmark = [pytest.mark.browser, needs_chromium]


def test_rerun_from_here_opens_the_child_beside_its_parent(papers_dir, tmp_path, browser):
    data = tmp_path / "data"
    shutil.copytree(papers_dir, data)
    settings = Settings.from_env({}, data_dir=data)
    parent = run_question(QUESTION, make_context(settings, open_knowledge_base(settings)),
                          preset_options("full"))
    RunStore.for_settings(settings).save(parent, CLI_SESSION)
    step = step_of(parent, "retrieve")

    server = Server(data, tmp_path / "streamlit.log")
    ARTIFACTS.mkdir(exist_ok=True)
    context, page, errors = new_page(browser, timeout_ms=90_000)
    try:
        open_page(page, server.url, "trace", "Trace")
        page.get_by_test_id("stCheckbox").get_by_text("All sessions").click()  # made on the command line
        idle(page)
        page.get_by_text("Made by another session: read-only.").wait_for()
        # the replay's slider, from the last step back to the step to re-run from
        thumb = page.locator('[data-testid="stSlider"] input[type=range]').first
        thumb.focus()
        thumb.press("Home")
        for _ in range(step):
            thumb.press("ArrowRight")
        idle(page)
        page.get_by_text(f"Step {step} of {len(parent.events)} · ").first.wait_for()
        page.get_by_role("button", name="Re-run from here").first.click()
        body = page.locator("[data-testid=stPopoverBody]")
        body.get_by_text(f"Steps 1 to {step - 1} are reused from this run").wait_for()
        top_k = body.get_by_role("spinbutton", name="top_k")
        top_k.fill("9")
        top_k.press("Enter")
        idle(page)
        body.get_by_role("button", name="Re-run from here").click()

        page.get_by_role("heading", name="Compare", exact=True).first.wait_for()
        page.get_by_text("The re-run beside its run").wait_for()
        page.get_by_text(f"The first step where they differ is step {step}.").wait_for()
        idle(page)
        page.screenshot(path=str(ARTIFACTS / "browser-rerun-compare.png"), full_page=True)
        children = [r for r in RunStore.for_settings(settings).list() if r.id != parent.id]
        assert len(children) == 1
        child = RunStore.for_settings(settings).get(children[0].id)
        assert child is not None and child.parent_run_id == parent.id and child.options.top_k == 9
        assert not errors, errors
    finally:
        context.close()
        server.stop()
