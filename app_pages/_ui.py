"""Rendering helpers shared by the pages.

The one safe way to show a string from data, the stop alert, citations and links, a replay step card, tables,
downloads and the pipeline picker.

Every string that comes from data (file names, titles, URLs, chunk text, answers, questions,
sub-questions, reasons, error texts) reaches a Markdown-rendering element (``st.markdown``,
``st.caption``, alerts, labels, progress text, pill options, ``st.table`` cells) only through
:func:`safe`. Links are made only by :func:`link`, for http(s) URLs, with ``st.link_button``.
"""

from __future__ import annotations

import html
import re
import string
from collections.abc import Callable, Iterable
from datetime import date, datetime
from urllib.parse import urlsplit

import streamlit as st

from rag.config import PRESETS, PRESETS_HELP, TOGGLE_LABELS, Options, preset_label, preset_of
from rag.ingest.pageview import PageView, PassageUnavailable, TextView, open_passage
from rag.ingest.pipeline import FileReport
from rag.models import Citation, GradeDetail, Run, TraceEvent
from rag.trace import diff, story, views
from rag.trace import replay as replays
from rag.trace.pricing import event_cost, format_cost, run_cost, unpriced_models

WORD_JOINER = "\u2060"
"""Invisible; put before ``http:``/``www.``/``@`` so GFM does not turn a bare URL into a link."""
_PUNCTUATION = frozenset(string.punctuation)  # CommonMark: any ASCII punctuation may be escaped
_AUTOLINK = re.compile(r"(?i)(?:https?|ftp|mailto|xmpp)(?=:)|www(?=\.)|@")
NUMBERS = {
    "top_k": ("top_k", 1, 50, "Chunks retrieved per query."),
    "min_relevant": ("min_relevant", 1, 50, "Relevant chunks needed to answer without a caveat."),
    "max_rewrites": ("max_rewrites", 0, 5, "Rewrite budget for one run."),
}
"""Option -> (label, min, max, help) of the number inputs."""


def safe(text: object, *, multiline: bool = False) -> str:
    """``text``, a string from data.

    As Markdown that shows it exactly as written and that the browser cannot act on: no image, link, HTML,
    LaTeX, emoji code or Streamlit directive.

    Every ASCII punctuation character is backslash-escaped (so ``![x](url)``, ``<img>``,
    ``[a]: url``, ``$x$`` and ``:red[x]`` stay text), and an invisible word joiner goes before
    ``http:``, ``www.`` and ``@``, which GFM would otherwise autolink. Line breaks become hard
    breaks when ``multiline``, spaces otherwise (labels and captions are one line).
    """
    value = "" if text is None else str(text)
    value = _AUTOLINK.sub(lambda m: WORD_JOINER + m.group(0), value)
    value = "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in value)
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "  \n".join(lines) if multiline else " ".join(lines)


def code(text: object) -> str:
    """``text`` as a Markdown code span (shown verbatim, in monospace).

    Fenced with more backticks than it holds, so data cannot close the span early.
    """
    value = " ".join(str(text).splitlines())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", value)), default=0) + 1)
    return f"{fence} {value} {fence}"


def web_url(url: str) -> str | None:
    """``url`` when it is an absolute http(s) URL with a host and no space or control character.

    (the only kind :func:`link` opens), else None.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return None if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url) else url


def link(url: str, *, key: str | None = None) -> None:
    """A button that opens ``url`` in a new tab, labelled with its host; the URL itself shown as text.

    A URL that is not http(s) gets no link, only the text.
    """
    st.caption(safe(url))
    if target := web_url(url):
        st.link_button(f"Open {safe(urlsplit(target).hostname)}", target,
                       icon=":material/open_in_new:", key=key)


def citation_label(c: Citation) -> str:
    """``[n] file.pdf p.3`` for a document chunk, ``[n] URL (web)`` for a web result.

    (the source as :meth:`rag.models.Citation.label` names it).
    """
    return f"[{c.n}] {c.label()}" + (" (web)" if c.origin == "web" else "")


def citations(items: Iterable[Citation], *, key: str = "", knowledge_base: str | None = None) -> None:
    """One expander per citation with the cited text; web results with a link to the page.

    A document's citation can be opened where it is (:func:`source_view`) in ``knowledge_base`` (the run's;
    default: the current one).
    """
    for c in items:
        with st.expander(safe(citation_label(c))):
            if c.origin == "web":
                link(c.source, key=f"{key}_link_{c.n}" if key else None)
            st.text(c.text or "(no text stored for this chunk)")
            if c.origin == "kb":
                source_view(c, key=f"{key or 'cite'}_src_{c.n}_{c.chunk_id}", knowledge_base=knowledge_base)


@st.cache_data(max_entries=24, show_spinner=False)
def _passage(kb_name: str, data_dir: str, chunk_id: str, _kb) -> PageView | TextView:
    """:func:`rag.ingest.pageview.open_passage`, cached per knowledge base and chunk (ids name content)."""
    return open_passage(_kb, chunk_id)


def source_view(c: Citation, *, key: str, knowledge_base: str | None = None) -> None:
    """A switch, keyed ``key``, that shows the cited chunk where it is.

    A PDF's page as an image with the chunk's text highlighted, or a text's chunk highlighted in its
    surrounding text (escaped: only the highlight is markup). Unavailable passages say why in one line.
    """
    pdf = c.source.lower().endswith(".pdf")
    if not st.toggle("Show on its page" if pdf else "Show in its text", key=key,
                     help="The cited chunk highlighted where it is in the document."):
        return
    from app_pages import _session  # here, not at the top: _session imports this module

    try:
        kb = _session.knowledge_base(knowledge_base)
        with st.spinner("Opening the page…" if pdf else "Opening the text…"):
            view = _passage(kb.name, str(getattr(kb, "data_dir", "")), c.chunk_id, kb)
    except PassageUnavailable as exc:
        st.info(f"This passage cannot be shown: {safe(exc)}")
        return
    except Exception as exc:  # a store or file error must not take the page down
        st.warning(f"This passage cannot be shown: {safe(type(exc).__name__)}: {safe(exc)}")
        return
    if isinstance(view, PageView):
        where = ("the OCR lines of the passage highlighted" if view.ocr
                 else "the passage highlighted") if view.boxes else "the passage not located"
        st.image(view.png, width="stretch", output_format="PNG")
        st.caption(f"{safe(c.source)}, page {view.page}: {where}")
    else:
        body = (f"{html.escape(view.before)}<mark>{html.escape(view.passage)}</mark>"
                f"{html.escape(view.after)}")
        st.html('<div class="retrace-passage" style="white-space: pre-wrap; max-height: 24rem; '
                f'overflow-y: auto; font-size: 0.9rem; line-height: 1.5">{body}</div>')
    if view.note:
        st.caption(safe(view.note))


def answer(run: Run, *, empty: str | None = None) -> None:
    """The run's answer (an error in red); ``empty`` as a caption when there is none."""
    if run.error:
        st.error(safe(run.answer, multiline=True))
    elif run.answer or empty is None:
        st.markdown(safe(run.answer, multiline=True))
    else:
        st.caption(empty)


def stop_status(run: Run) -> tuple[str, str]:
    """(label, state) for the ``st.status`` of a finished run: ``No answer (abstained) · 8 steps``.

    ``error`` for a run that did not answer (no green tick on "No answer"), else ``complete``. The stop reason
    itself is said once, under the answer.
    """
    kind = story.stop_kind(run)
    state = "error" if kind in (story.ABSTAINED, story.ERROR) else "complete"
    return f"{story.STOP_KINDS[kind]} · {len(run.events)} steps", state


def stop_caption(run: Run) -> None:
    """The stop reason as a caption under the answer, unless the answer already says why."""
    if note := story.stop_note(run):
        st.caption(safe(note))


def stop_alert(run: Run, *, icons: bool = True) -> None:
    """Why the run ended, coloured by how.

    Answered green, caveat orange, abstained or error red, unfinished blue.
    """
    kind = story.stop_kind(run)
    alert, icon = {story.ANSWERED: (st.success, ":material/check_circle:"),
                   story.CAVEAT: (st.warning, ":material/warning:"),
                   story.ABSTAINED: (st.error, ":material/block:"),
                   story.ERROR: (st.error, ":material/block:")}.get(kind, (st.info, None))
    alert(safe(story.headline(run)), icon=icon if icons else None)


DIFF_STYLES = {diff.ADDED: ":green-background[{}]", diff.REMOVED: ":red-background[~~{}~~]"}
"""Word-diff token kind -> its Markdown (words in both answers stay plain)."""


def diff_markdown(tokens: Iterable[diff.Token]) -> str:
    """A word diff (:func:`rag.trace.diff.word_diff`) as Markdown: added words green, removed ones struck red.

    Every token's text goes through :func:`safe`, so the only live Markdown is the colouring.
    """
    out = []
    for t in tokens:
        words = safe(t.text.strip())
        if words:
            out.append(DIFF_STYLES.get(t.kind, "{}").format(words))
    return " ".join(out)


def badge(ok: bool, yes: str, no: str) -> str:
    return f":green-badge[{yes}]" if ok else f":red-badge[{no}]"


def event_line(e: TraceEvent) -> str:
    """One Markdown line for a trace event: ``**2. grade_documents** — summary → next (why)``."""
    line = f"**{e.step}. {safe(e.node)}**"
    if e.attempt > 1:
        line += f" (visit {e.attempt})"
    line += f" — {safe(story.event_summary(e))}"
    if e.route:
        line += f" → {safe(e.route.to)} ({safe(e.route.why)})"
    return line


def step_card(s: story.Step, event: TraceEvent, n: int, run: Run, prices: dict) -> None:
    """One step in full: what it decided, why it went on, and its verdicts with their reasons."""
    e = safe
    st.markdown(f"**Step {s.step} of {n} · {e(s.label)}** — {e(s.decided)}")
    st.markdown(f"→ **{e(s.next)}**: {e(s.why)}" if s.next else f"■ {e(s.why)}")
    d = event.detail
    if isinstance(d, GradeDetail):
        lines = []
        for v in d.verdicts:
            fb = f" :orange-badge[fallback: {e(v.fallback)}]" if v.fallback else ""
            lines.append(f"- {badge(v.relevant, 'relevant', 'not relevant')} "
                         f":gray-badge[{e(v.grade)}] **{e(v.label())}** — {e(v.reasoning)}{fb}")
        st.markdown("\n".join(lines) or "No chunk to grade.")
    elif s.node in ("check_grounding", "grade_answer"):
        grounding = s.node == "check_grounding"
        passed = bool(getattr(d, "grounded" if grounding else "useful", False))
        yes, no = ("grounded", "not grounded") if grounding else ("useful", "not useful")
        confidence = getattr(d, "confidence", None)
        st.markdown(badge(passed, yes, no)
                    + (f" confidence {confidence:.2f}" if confidence is not None else ""))
    items = views.view(s.node).items(d)
    if s.node == "generate":
        st.markdown("Cites " + e(", ".join(items)) if items else "Cites nothing.")
    elif items:
        st.markdown("\n".join(f"- {e(item)}" for item in items))
    if s.reasoning:
        st.caption(f"Reasoning: {e(s.reasoning)}")
    for f in s.fallbacks:
        st.markdown(f":orange-badge[fallback] {e(f)}")
    if event.llm_calls:
        st.caption(f"{event.llm_calls} LLM call(s) · {event.prompt_tokens} + "
                   f"{event.completion_tokens} tokens · "
                   f"{e(format_cost(event_cost(event, run, prices)))} · {event.duration_ms:.0f} ms")


def run_facts(run: Run, prices: dict) -> str:
    """``6 steps · … · Full · engine local (no LLM) · top_k 6, …``.

    (plain text: pass it through :func:`safe`), with the models that have no price.
    """
    missing = unpriced_models(run, prices)
    models = ", ".join(f"{k} {v}" for k, v in sorted(run.models.items())) or "no LLM"
    o = run.options
    return (f"{story.totals_line(run, run_cost(run, prices))} · {preset_label(preset_of(o))} · "
            f"engine {run.engine} ({models}) · top_k {o.top_k}, min_relevant {o.min_relevant}, "
            f"max_rewrites {o.max_rewrites}"
            + (f" · no price for {', '.join(missing)} (set RAG_PRICES_JSON)" if missing else ""))


FLOW_MIN_PX = 720
"""Narrowest width the flow is drawn at (its labels and boxes need it); a narrower screen scrolls it."""
FLOW_CSS = (f"<style>div:has(> [class*='_flowbox'][class*='st-key-']){{overflow-x:auto}}"
            f"[class*='_flowbox'][class*='st-key-']{{min-width:{FLOW_MIN_PX}px}}</style>")
"""Our own constant CSS (no data in it): the flow's container scrolls, the figure keeps FLOW_MIN_PX."""


def replay(run: Run, steps: list[story.Step], prices: dict, *, key: str) -> None:
    """A step slider.

    (``{key}_w_step_{run id}``), the flow replayed up to that step (a click on a box selects it in
    :func:`node_details`), and that step in full below.
    """
    events = {ev.step: ev for ev in run.events}
    n = step = len(steps)
    if n:
        step = st.slider("Step", 0, n, n, key=f"{key}_w_step_{run.id}",
                         help="Shows the run up to this step on the flow, and the step in full "
                              "below.")
    # Each click remounts the chart under a new key: plotly would otherwise keep the clicked
    # point selected and dim everything else.
    clicks = f"{key}_flow_clicks"
    flow_key = f"{key}_flow_{st.session_state.get(clicks, 0)}"

    def on_click() -> None:
        points = (st.session_state.get(flow_key) or {}).get("selection", {}).get("points", [])
        if node := next((p.get("customdata") for p in points if p.get("customdata")), None):
            st.session_state[f"{key}_w_node"] = node
        st.session_state[clicks] = st.session_state.get(clicks, 0) + 1

    # The slider is the one step control: the figure has no Play or slider of its own to disagree with it.
    # On a narrow screen the flow keeps a readable width and scrolls sideways (FLOW_CSS).
    st.html(FLOW_CSS)
    with st.container(key=f"{key}_flowbox"):
        st.plotly_chart(replays.replay_figure(run, step=step, controls=False), width="stretch",
                        key=flow_key, on_select=on_click, selection_mode="points",
                        config={"displaylogo": False})
    st.caption("Boxes are coloured by the verdict of their last visit; blue arrows are the run's "
               "path, numbered by step; orange is the replay so far. Click a box for its visits.")
    with st.container(border=True):
        if step:
            step_card(steps[step - 1], events[steps[step - 1].step], n, run, prices)
        else:
            st.markdown(f"**Step 0 of {n}** — the run has not started. Move the slider to replay it.")


def node_details(run: Run, steps: list[story.Step], prices: dict, *, key: str) -> None:
    """Pills of every node (those visited first), keyed ``key``; the picked node's visits in full."""
    events = {ev.step: ev for ev in run.events}
    visited = list(dict.fromkeys(s.node for s in steps))
    options = visited + [x for x in views.VIEWS if x not in visited]
    if st.session_state.get(key) not in (None, *options):
        st.session_state.pop(key)
    node = st.pills("Node details", options, key=key,
                    format_func=lambda x: safe({"__start__": "start", "__end__": "end"}.get(x, x)),
                    help="Click a box on the flow, or pick a node, to see every visit to it.")
    if node:
        with st.container(border=True):
            visits = [s for s in steps if s.node == node]
            if not visits:
                st.markdown(f"**{safe(node)}** was not visited in this run.")
            for s in visits:
                step_card(s, events[s.step], len(steps), run, prices)


def file_report(report: FileReport) -> None:
    """One line per file: ingested green (with its warnings), already indexed blue, else red."""
    alert = {"ingested": st.success, "already indexed": st.info}.get(report.status, st.error)
    alert(safe(report.line()))
    for w in report.warnings if report.status == "ingested" else ():
        st.caption(safe(f"{report.filename}: {w}"))


def checks(run: Run) -> None:
    """Each grounding and answer check: its verdict, fallback, reasoning and ungrounded claims."""
    for chk in story.checks(run):
        grounding = chk.kind == "grounding"
        ok = (badge(chk.passed, "grounded", "not grounded") if grounding
              else badge(chk.passed, "useful", "not useful"))
        fb = f" :orange-badge[fallback: {safe(chk.fallback)}]" if chk.fallback else ""
        claims = "".join(f"\n- ungrounded: {safe(x)}" for x in chk.claims)
        st.markdown(f"**Step {chk.step} · {'Grounding check' if grounding else 'Answer check'}**"
                    f" {ok}{fb} — {safe(chk.reasoning)}{claims}")


def events(run: Run) -> None:
    """One expander per event: its summary and route, and the whole event as JSON."""
    for ev in run.events:
        visit = f" (visit {ev.attempt})" if ev.attempt > 1 else ""
        with st.expander(f"**{ev.step}. {safe(ev.node)}**{visit} — {safe(story.event_summary(ev))}"):
            if ev.route:
                to, why = ev.route.to, ev.route.why
                st.markdown(f"→ **{safe(to)}**: {safe(why)}")
            st.json(ev.model_dump(mode="json"), expanded=2)


_COL = st.column_config


def verdicts_table(rows: list[dict]) -> None:
    """The grader's verdicts (rows of :func:`rag.trace.story.verdict_rows`)."""
    st.dataframe(rows, hide_index=True, width="stretch", row_height=64,
                 column_order=["step", "attempt", "source", "page", "grade", "relevant",
                               "reasoning", "query"]
                 + (["fallback"] if any(v["fallback"] for v in rows) else []),
                 column_config={
                     "step": _COL.NumberColumn("Step", width="small"),
                     "attempt": _COL.NumberColumn("Attempt", width="small"),
                     "source": _COL.TextColumn("Source"),
                     "page": _COL.NumberColumn("Page", width="small"),
                     "grade": _COL.TextColumn("Grade", width="small"),
                     "relevant": _COL.CheckboxColumn("Relevant", width="small"),
                     "reasoning": _COL.TextColumn("Reasoning", width="large"),
                     "fallback": _COL.TextColumn("Fallback"),
                     "query": _COL.TextColumn("Query", width="medium")})


def steps_table(rows: list[dict]) -> None:
    """Every step of a run (rows of :func:`rag.trace.story.event_rows`)."""
    st.dataframe(rows, hide_index=True, width="stretch", column_config={
        "step": _COL.NumberColumn("Step", width="small"),
        "node": _COL.TextColumn("Node"),
        "attempt": _COL.NumberColumn("Attempt", width="small"),
        "duration_ms": _COL.NumberColumn("ms", format="%.1f", width="small"),
        "summary": _COL.TextColumn("Summary", width="large"),
        "next": _COL.TextColumn("Next"),
        "why": _COL.TextColumn("Why", width="medium")})


def node_totals_table(rows: list[dict]) -> None:
    """Visits, time, LLM calls, tokens and cost per node (:func:`rag.trace.pricing.node_totals`)."""
    st.dataframe(rows, hide_index=True, width="stretch", column_config={
        "node": _COL.TextColumn("Node"),
        "visits": _COL.NumberColumn("Visits"),
        "duration_ms": _COL.NumberColumn("ms", format="%.1f"),
        "llm_calls": _COL.NumberColumn("LLM calls"),
        "tokens": _COL.NumberColumn("Tokens"),
        "cost": _COL.TextColumn("Cost")})


def downloads(key: str, stem: str, html: Callable[[], str], json: Callable[[], str], *,
              columns: tuple, html_help: str) -> None:
    """``Download HTML report`` and ``Download JSON`` buttons in ``columns``.

    The files, named ``stem.html`` and ``stem.json``, are built only when clicked.
    """
    a, b = columns
    a.download_button("Download HTML report", key=f"{key}_dl_html", on_click="ignore",
                      icon=":material/download:", mime="text/html", file_name=f"{stem}.html",
                      data=html, help=html_help)
    b.download_button("Download JSON", key=f"{key}_dl_json", on_click="ignore",
                      icon=":material/data_object:", mime="application/json",
                      file_name=f"{stem}.json", data=json)


def pipeline_picker(chosen: dict, prefix: str) -> None:
    """Preset, switches and budgets in the sidebar, as widgets keyed ``{prefix}{name}``.

    A preset sets the switches. ``chosen`` (a session-state dict, which outlives the widgets on other pages)
    holds ``preset`` and every option, and is updated in place.
    """
    for name, value in chosen.items():
        st.session_state.setdefault(f"{prefix}{name}", value)

    def apply_preset() -> None:
        for name, value in PRESETS[st.session_state[f"{prefix}preset"]][1].items():
            st.session_state[f"{prefix}{name}"] = value

    st.markdown("**Pipeline**")
    st.selectbox("Preset", list(PRESETS), key=f"{prefix}preset", on_change=apply_preset,
                 format_func=preset_label, help=PRESETS_HELP)
    for name, (label, help_text) in TOGGLE_LABELS.items():
        st.toggle(label, key=f"{prefix}{name}", help=help_text)
    for name, (label, low, high, help_text) in NUMBERS.items():
        st.number_input(label, min_value=low, max_value=high, step=1, key=f"{prefix}{name}",
                        help=help_text)
    chosen.update({name: st.session_state[f"{prefix}{name}"] for name in chosen})
    if any(chosen[k] != v for k, v in PRESETS[chosen["preset"]][1].items()):
        st.caption(f"Custom: changed from {preset_label(chosen['preset'])}.")


def default_pipeline(preset: str) -> dict:
    """``preset`` and every option of the picker at that preset's values."""
    defaults = Options()
    return {"preset": preset, **PRESETS[preset][1],
            **{k: getattr(defaults, k) for k in NUMBERS}}


def human_size(n_bytes: int) -> str:
    """``1.2 MB``, ``830 kB`` or ``512 B`` (decimal units, as max_upload_mb uses)."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= factor:
            return f"{n_bytes / factor:.1f} {unit}"
    return f"{n_bytes} B"


def when(ts: float) -> datetime:
    """A UNIX time in seconds as a local datetime (for tables)."""
    return datetime.fromtimestamp(ts)


def run_label(created_at: float, preset: str, question: str) -> str:
    """``14:03:22 · Full · What is …`` for pickers (selectbox options are plain text)."""
    question = question if len(question) <= 80 else question[:79] + "…"
    stamp = when(created_at)
    clock = f"{stamp:%H:%M:%S}" if stamp.date() == date.today() else f"{stamp:%Y-%m-%d %H:%M}"
    return f"{clock} · {preset_label(preset)} · {question}"
