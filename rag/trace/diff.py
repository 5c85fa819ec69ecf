"""What self-correction changed: a comparison's pipelines set against Naive RAG.

The steps each pipeline added over the baseline, the verdicts that differ between pipelines, and
where the answers differ, as a word diff. Pure functions over a :class:`rag.models.Comparison`
(no plotly, no UI): the Compare page and the export only render what these return.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from rag.config import preset_of
from rag.models import WEB_SEARCH, Comparison, GradeDetail, Run
from rag.trace.pricing import Price, format_cost, run_cost
from rag.trace.story import STOP_KINDS, grounded_verdict, stop_kind, useful_verdict

SAME = "same"
ADDED = "added"
REMOVED = "removed"
_TOKEN = re.compile(r"\S+\s*")


@dataclass(frozen=True)
class Token:
    """One run of words of a word diff, with the whitespace that follows each word."""

    text: str
    kind: str
    """``same`` (in both answers), ``added`` (only the pipeline's) or ``removed`` (only the baseline's)."""


@dataclass(frozen=True)
class Change:
    """What one pipeline changed over the baseline."""

    label: str
    added_steps: list[str]
    """Node visits beyond the baseline's, in path order; ``rewrite_query ×2`` for repeats."""
    same_answer: bool
    diff: list[Token]
    """The word diff from the baseline's answer to this pipeline's (empty when the answers are the same)."""


def word_diff(old: str, new: str) -> list[Token]:
    """The words of ``new`` set against those of ``old`` (:mod:`difflib`, word by word).

    Consecutive words of one kind are merged into one token; a replaced run of words yields its
    ``removed`` token before its ``added`` one. Whitespace is kept with the word before it, so
    joining every non-removed token's text gives ``new`` back (less leading whitespace).
    """
    a, b = _TOKEN.findall(old or ""), _TOKEN.findall(new or "")
    out: list[Token] = []

    def put(words: list[str], kind: str) -> None:
        if not words:
            return
        if out and out[-1].kind == kind:
            out[-1] = Token(out[-1].text + "".join(words), kind)
        else:
            out.append(Token("".join(words), kind))

    matcher = difflib.SequenceMatcher(a=[w.strip() for w in a], b=[w.strip() for w in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            put(b[j1:j2], SAME)
        else:
            put(a[i1:i2], REMOVED)
            put(b[j1:j2], ADDED)
    return out


ISLAND_WORDS = 2
"""A run of at most this many words in both answers, between two changes, is read as part of the change."""
DIFF_STYLES = {
    "p": "white-space:pre-wrap;line-height:1.7;margin:0 0 0.5rem",
    "del": "background:#fde2e1;color:#991b1b;text-decoration:line-through;border-radius:3px;padding:0 2px",
    "ins": "background:#dcfce7;color:#166534;text-decoration:none;border-radius:3px;padding:0 2px",
}
"""Our own constant inline styles of :func:`diff_html`'s elements (no data in them)."""


def readable(tokens: list[Token]) -> list[Token]:
    """``tokens`` regrouped for reading: each changed stretch as one deletion, then one insertion.

    A word diff alternates removed and added words around the few words both answers share (``the``,
    ``of``), which reads as interleaved fragments. A run of at most :data:`ISLAND_WORDS` shared words between
    two changes, and no longer than either of them, joins both sides of the change (the semantic cleanup of
    diff-match-patch, Fraser 2006), so each stretch reads as the old words struck out, then the new ones.
    Joining every non-removed token still gives the new answer back.
    """
    out: list[Token] = []
    removed: list[str] = []
    added: list[str] = []

    def flush() -> None:
        if removed:
            out.append(Token("".join(removed), REMOVED))
        if added:
            out.append(Token("".join(added), ADDED))
        removed.clear()
        added.clear()

    def words(run: list[Token]) -> int:
        return max((len(t.text.split()) for t in run), default=0)

    for i, t in enumerate(tokens):
        if t.kind == REMOVED:
            removed.append(t.text)
        elif t.kind == ADDED:
            added.append(t.text)
        elif i and tokens[i - 1].kind != SAME and _island(t, words(_changes(tokens[i - 1::-1])),
                                                           words(_changes(tokens[i + 1:]))):
            removed.append(t.text)
            added.append(t.text)
        else:
            flush()
            out.append(t)
    flush()
    return out


def _changes(tokens: list[Token]) -> list[Token]:
    """The changed tokens at the start of ``tokens``, up to the first shared one."""
    out = []
    for t in tokens:
        if t.kind == SAME:
            break
        out.append(t)
    return out


def _island(t: Token, before: int, after: int) -> bool:
    """Whether the shared run ``t`` is short enough, beside the changes around it, to read as part of them."""
    n = len(t.text.split())
    return n <= ISLAND_WORDS and n <= min(before, after)


def diff_html(tokens: list[Token]) -> str:
    """A word diff as one paragraph of HTML: removed words in ``<del>``, added ones in ``<ins>``, on one line.

    Every token's text is HTML-escaped, so the only markup is ours; whitespace and line breaks of the
    answers are kept (``white-space: pre-wrap``; the styles are :data:`DIFF_STYLES`).
    """
    tags = {REMOVED: "del", ADDED: "ins"}
    parts = []
    for t in tokens:
        text = html.escape(t.text, quote=True)
        tag = tags.get(t.kind)
        if tag:  # the whitespace after a change stays outside its mark
            word = t.text.rstrip()
            parts.append(f'<{tag} style="{DIFF_STYLES[tag]}">{html.escape(word, quote=True)}</{tag}>'
                         + html.escape(t.text[len(word):]))
        else:
            parts.append(text)
    return f'<p class="retrace-diff" style="{DIFF_STYLES["p"]}">{"".join(parts)}</p>'


def added_steps(base: Run, run: Run) -> list[str]:
    """The node visits of ``run`` beyond those of ``base``, in ``run``'s path order.

    A node visited more often than in ``base`` appears once, as ``node ×extra`` when the extra visits are more
    than one. ``["grade_documents", "rewrite_query ×2"]``; ``[]`` when ``run`` did nothing more.
    """
    extra = Counter(run.path) - Counter(base.path)
    return [node if extra[node] == 1 else f"{node} ×{extra[node]}"
            for node in dict.fromkeys(run.path) if extra[node]]


def baseline(cmp: Comparison) -> int:
    """The index of the comparison's Naive RAG run (the first run when there is none)."""
    return next((i for i, r in enumerate(cmp.runs) if preset_of(r.options) == "naive"), 0)


def _relevant(run: Run) -> str:
    graded = [e.detail for e in run.events if isinstance(e.detail, GradeDetail)]
    if not graded:
        return "not graded"
    last = graded[-1]
    return f"{sum(v.relevant for v in last.verdicts)} of {len(last.verdicts)}"


VERDICTS = {
    "ending": lambda r: STOP_KINDS[stop_kind(r)],
    "relevant chunks (last grading)": _relevant,
    "grounding check": grounded_verdict,
    "answer check": useful_verdict,
    "rewrites": lambda r: str(r.rewrites),
    "web search": lambda r: "used" if WEB_SEARCH in r.path else "not used",
}
"""Verdict name -> how a run reads on it, in words."""


def verdict_differences(cmp: Comparison) -> list[dict]:
    """The verdicts on which the comparison's pipelines disagree, one row each (a table).

    Keys: ``verdict`` (a name of :data:`VERDICTS`), then one key per pipeline label with that pipeline's
    verdict in words. Verdicts every pipeline shares are left out; ``[]`` when all agree.
    """
    rows = []
    for name, read in VERDICTS.items():
        values = [read(r) for r in cmp.runs]
        if len(set(values)) > 1:
            rows.append({"verdict": name, **dict(zip(cmp.labels, values, strict=True))})
    return rows


def changes(cmp: Comparison) -> list[Change]:
    """What each pipeline other than the baseline (:func:`baseline`) changed, in the comparison's order."""
    i = baseline(cmp)
    base = cmp.runs[i]
    out = []
    for label, run in zip(cmp.labels, cmp.runs, strict=True):
        if run is base:
            continue
        same = " ".join(run.answer.split()) == " ".join(base.answer.split())
        out.append(Change(label=label, added_steps=added_steps(base, run), same_answer=same,
                          diff=[] if same else readable(word_diff(base.answer, run.answer))))
    return out


def metric_rows(cmp: Comparison, prices: Mapping[str, Price] | None = None) -> list[dict]:
    """One row per pipeline, in the comparison's order (a table).

    Keys: ``pipeline`` (label), ``steps``, ``llm_calls``, ``tokens`` (prompt + completion), ``cost`` (text:
    ``$0.0012``, ``$0`` or ``n/a``) and ``latency_ms`` (wall time, ms).
    """
    return [{"pipeline": label, "steps": len(run.events), "llm_calls": run.llm_calls,
             "tokens": run.prompt_tokens + run.completion_tokens,
             "cost": format_cost(run_cost(run, prices)),
             "latency_ms": round(run.duration_ms)}
            for label, run in zip(cmp.labels, cmp.runs, strict=True)]
