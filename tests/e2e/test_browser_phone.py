"""The flow on a 390-pixel-wide phone, in Debian's chromium (issue 11 section 5).

On the Trace page (a real `streamlit run`) and in the HTML export: every node's label is whole inside the
plot, no two labels run into each other, and the legend covers neither the step slider nor Play; on the
page the whole flow is on the screen (scaled to its width, not cropped) and Play steps through the run.
Reads the drawn SVG's boxes, and leaves screenshots in test-artifacts/.
"""

from __future__ import annotations

import pytest

from rag.history import RunStore
from tests.e2e.conftest import ARTIFACTS, Server, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
PHONE = {"width": 390, "height": 844}

# Boxes (client px) of the flow's parts: the plot area, each node label, the legend, plotly's own
# slider and Play buttons (the export has them), and Streamlit's step slider (the page has it).
MEASURE = """() => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
      g => (g._fullData || []).some(t => t.name === 'nodes'));
  const box = e => { const r = e.getBoundingClientRect();
                     return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const at = gd.getBoundingClientRect(), s = gd._fullLayout._size;
  const k = at.width / gd.offsetWidth;  // the page may scale the whole flow down to fit the screen
  const i = gd._fullData.findIndex(t => t.name === 'nodes');
  const layer = gd.querySelectorAll('.scatterlayer .trace')[i];
  const labels = [...layer.querySelectorAll('.textpoint text')].map(
      e => ({text: e.textContent, ...box(e)}));
  const boxes = sel => [...gd.querySelectorAll(sel)].map(box);
  const slider = document.querySelector('[data-testid=stSlider]');
  return {plot: {l: at.left + s.l * k, r: at.left + (s.l + s.w) * k, t: at.top + s.t * k,
                 b: at.top + (s.t + s.h) * k}, figure: box(gd), scale: k, width: window.innerWidth,
          labels, legend: boxes('.legend'), controls: boxes('.slider-container, .updatemenu-container'),
          page_slider: slider ? [box(slider)] : []};
}"""


def overlap(a: dict, b: dict) -> bool:
    return a["l"] < b["r"] - 1 and b["l"] < a["r"] - 1 and a["t"] < b["b"] - 1 and b["t"] < a["b"] - 1


def check_flow(m: dict, where: str) -> None:
    names = {lab["text"] for lab in m["labels"]}
    assert {"start", "end"} <= names and len(m["labels"]) >= 12, (where, names)
    for lab in m["labels"]:  # whole inside the plot: not cut at its edge ("mpose_query")
        assert m["plot"]["l"] - 1 <= lab["l"] and lab["r"] <= m["plot"]["r"] + 1, (where, lab, m["plot"])
    labels = m["labels"]
    clashes = [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
               if overlap(a, b)]
    assert not clashes, (where, clashes)
    assert m["legend"], where
    for legend in m["legend"]:
        for control in m["controls"] + m["page_slider"]:
            assert not overlap(legend, control), (where, legend, control)


def visible(page, text: str) -> None:
    """Wait for ``text`` where it shows (the step card), not in the flow's hidden node labels."""
    page.locator(f"text={text} >> visible=true").first.wait_for()


def test_the_flow_reads_on_a_phone_in_the_app_and_the_export(browser, tmp_path, runs):
    from rag.trace.export import run_html

    ARTIFACTS.mkdir(exist_ok=True)
    run = runs["rewritten"]
    data = tmp_path / "data"
    data.mkdir()
    RunStore(data / "runs.sqlite").save(run, "another-session")
    server = Server(data, tmp_path / "streamlit.log")
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(f"{server.url}/trace")
        page.locator("label").filter(has_text="All sessions").first.click()
        page.locator(".js-plotly-plot").first.wait_for()
        page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some("
                               "g => (g._fullData || []).some(t => t.name === 'nodes'))")
        page.wait_for_timeout(1500)  # plotly's last resize
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        m = page.evaluate(MEASURE)
        page.screenshot(path=str(ARTIFACTS / "phone-trace.png"))
        check_flow(m, "app")
        assert not m["controls"]  # one step control: the page's slider
        assert m["page_slider"]
        # the whole flow on the screen, scaled to its width: nothing cropped at the right
        assert m["scale"] < 1 and m["figure"]["l"] >= 0 and m["figure"]["r"] <= m["width"], m
        for lab in m["labels"]:
            assert lab["l"] >= 0 and lab["r"] <= m["width"], lab

        # Play steps through the run: the step card follows, one step at a time, to the last step
        n = len(run.events)
        page.get_by_role("button", name="Play").click()
        visible(page, f"Step 1 of {n}")
        page.get_by_role("button", name="Play").wait_for(timeout=60_000)  # it stopped by itself
        visible(page, f"Step {n} of {n}")
        page.screenshot(path=str(ARTIFACTS / "phone-trace-flow.png"))

        export = tmp_path / "run.html"
        export.write_text(run_html(run, prices={}), encoding="utf-8")
        page.goto(export.as_uri())
        page.locator(".js-plotly-plot").first.wait_for()
        page.wait_for_timeout(1500)
        m = page.evaluate(MEASURE)
        page.screenshot(path=str(ARTIFACTS / "phone-export.png"), full_page=True)
        check_flow(m, "export")
        assert len(m["controls"]) == 2  # the export's own slider and Play, clear of the legend
    finally:
        context.close()
        server.stop()
