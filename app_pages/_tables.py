"""Tables, downloads and labels the pages share (cells are plain text, never Markdown)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import streamlit as st
from streamlit.elements.lib.column_types import ColumnConfig

from rag.config import preset_label
from rag.trace import formats

_COL = st.column_config


def count_column(label: str, **kw) -> ColumnConfig:
    """A table column of counts (``12,345``), :func:`rag.trace.formats.count`'s format."""
    return _COL.NumberColumn(label, format=formats.COUNT_FORMAT, **kw)


def ms_column(label: str, **kw) -> ColumnConfig:
    """A table column of durations in ms (``1,234 ms``), :func:`rag.trace.formats.ms`'s format."""
    return _COL.NumberColumn(label, format=formats.MS_FORMAT, **kw)


def mean_column(label: str, **kw) -> ColumnConfig:
    """A table column of means of counts (``1.5``), :func:`rag.trace.formats.mean`'s format."""
    return _COL.NumberColumn(label, format=formats.MEAN_FORMAT, **kw)


def shares(rows: list[dict], *keys: str, missing: str = formats.NONE) -> list[dict]:
    """``rows`` with the shares under ``keys`` as text (``80 %``); a share with no data is ``missing``."""
    return [{**r, **{k: missing if r[k] is None else formats.share(r[k]) for k in keys}} for r in rows]


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
        "duration_ms": ms_column("Time", width="small"),
        "summary": _COL.TextColumn("Summary", width="large"),
        "next": _COL.TextColumn("Next"),
        "why": _COL.TextColumn("Why", width="medium")})


def node_totals_table(rows: list[dict]) -> None:
    """Visits, time, LLM calls, tokens and cost per node (:func:`rag.trace.pricing.node_totals`)."""
    st.dataframe(rows, hide_index=True, width="stretch", column_config={
        "node": _COL.TextColumn("Node"),
        "visits": count_column("Visits"),
        "duration_ms": ms_column("Time"),
        "llm_calls": count_column("LLM calls"),
        "tokens": count_column("Tokens"),
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



def when(ts: float) -> datetime:
    """A UNIX time in seconds as a local datetime (for tables)."""
    return datetime.fromtimestamp(ts)


def run_label(created_at: float, preset: str, question: str) -> str:
    """``14:03:22 · Full · What is …`` for pickers (selectbox options are plain text)."""
    question = question if len(question) <= 80 else question[:79] + "…"
    stamp = when(created_at)
    clock = f"{stamp:%H:%M:%S}" if stamp.date() == date.today() else f"{stamp:%Y-%m-%d %H:%M}"
    return f"{clock} · {preset_label(preset)} · {question}"



def by_pipeline_table(rows: list[dict]) -> None:
    """Insights per pipeline (rows of :func:`rag.trace.insights.by_pipeline`)."""
    # A share no run could have (no grounding check ran) is said, not shown as a literal "None".
    rows = shares(shares(rows, "rewrite_rate"), "hallucination_rate", missing="not checked")
    st.dataframe(rows, hide_index=True, width="stretch", column_config={
        "pipeline": _COL.TextColumn("Pipeline"),
        "runs": count_column("Runs"),
        "answered": count_column("Answered"),
        "rewrite_rate": _COL.TextColumn("Rewrite rate"),
        "hallucination_rate": _COL.TextColumn("Failed grounding checks"),
        "llm_calls": mean_column("LLM calls / question"),
        "tokens": mean_column("Tokens / question"),
        "p50_ms": ms_column("Latency p50")})


def feedback_table(rows: list[dict]) -> None:
    """Thumbs per pipeline (rows of :func:`rag.trace.insights.feedback_by_pipeline`); no rating is ``—``."""
    st.dataframe(shares(rows, "up_rate"), hide_index=True, width="stretch", column_config={
        "pipeline": _COL.TextColumn("Pipeline"),
        "runs": count_column("Runs"),
        "rated": count_column("Rated"),
        "up": count_column("Thumbs up"),
        "down": count_column("Thumbs down"),
        "up_rate": _COL.TextColumn("Share up")})
