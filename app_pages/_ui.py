"""Rendering a run on the pages: its answer, stop reason, citations and their passages, steps and checks.

Strings from data go through :func:`app_pages._safe.safe` (or ``st.text``/``st.html`` with escaping).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Literal

import streamlit as st

from app_pages import _session
from app_pages._safe import link, safe
from rag.config import preset_label, preset_of
from rag.ingest.pageview import PageView, PassageUnavailable, TextView, open_passage
from rag.models import (
    CHECK_GROUNDING,
    GRADE_ANSWER,
    Citation,
    GenerateDetail,
    GradeDetail,
    Run,
    TraceEvent,
    node,
)
from rag.trace import caveats, formats, story, views
from rag.trace.pricing import event_cost, format_cost, run_cost, unpriced_models


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
    """The run's answer (an error in red); ``empty`` as a caption when there is none.

    Its caveats come first, one short line each (:func:`rag.trace.caveats.split`), then its text.
    """
    if run.error:
        st.error(safe(run.answer, multiline=True))
    elif run.answer or empty is None:
        reasons, text = caveats.split(run.answer)
        for reason in reasons:
            st.caption(f":orange[:material/warning:] Caveat: {safe(reason)}")
        st.markdown(safe(text, multiline=True))
    else:
        st.caption(empty)


def stop_status(run: Run) -> tuple[str, Literal["complete", "error"]]:
    """(label, state) for the ``st.status`` of a finished run: ``No answer (abstained) · 8 steps``.

    ``error`` for a run that did not answer (no green tick on "No answer"), else ``complete``. The stop reason
    itself is said once, under the answer.
    """
    kind = story.stop_kind(run)
    state: Literal["complete", "error"] = "error" if kind in (story.ABSTAINED, story.ERROR) else "complete"
    return f"{story.STOP_KINDS[kind]} · {formats.plural(len(run.events), 'step')}", state


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
    if s.step <= run.reused_steps:
        st.caption(f"Reused from run {e(run.parent_run_id)}: not executed again in this run.")
    d = event.detail
    if isinstance(d, GradeDetail):
        lines = []
        for v in d.verdicts:
            fb = f" :orange-badge[fallback: {e(v.fallback)}]" if v.fallback else ""
            lines.append(f"- {badge(v.relevant, 'relevant', 'not relevant')} "
                         f":gray-badge[{e(v.grade)}] **{e(v.label())}** — {e(v.reasoning)}{fb}")
        st.markdown("\n".join(lines) or "No chunk to grade.")
    elif (check := node(s.node).check) is not None:
        passed = bool(getattr(d, check.flag, False))
        confidence = getattr(d, "confidence", None)
        st.markdown(badge(passed, check.passed, check.failed)
                    + (f" confidence {formats.score(confidence)}" if confidence is not None else ""))
    items = views.view(s.node).items(d)
    if isinstance(d, GenerateDetail):
        st.markdown("Cites " + e(", ".join(items)) if items else "Cites nothing.")
    elif items:
        st.markdown("\n".join(f"- {e(item)}" for item in items))
    if s.reasoning:
        st.caption(f"Reasoning: {e(s.reasoning)}")
    for f in s.fallbacks:
        st.markdown(f":orange-badge[fallback] {e(f)}")
    if event.llm_calls:
        st.caption(f"{formats.plural(event.llm_calls, 'LLM call')} · {formats.count(event.prompt_tokens)} + "
                   f"{formats.plural(event.completion_tokens, 'token')} · "
                   f"{e(format_cost(event_cost(event, run, prices)))} · {formats.ms(event.duration_ms)}")


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



def checks(run: Run) -> None:
    """Each grounding and answer check: its verdict, fallback, reasoning and ungrounded claims."""
    for chk in story.checks(run):
        grounding = chk.kind == "grounding"
        words = node(CHECK_GROUNDING if grounding else GRADE_ANSWER).check
        assert words is not None
        ok = badge(chk.passed, words.passed, words.failed)
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

