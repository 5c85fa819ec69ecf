"""What self-correction changed: a comparison's pipelines set against Naive RAG.

The steps each pipeline added over the baseline, the verdicts that differ between pipelines, and
where the answers differ, as a word diff. Pure functions over a :class:`rag.models.Comparison`
(no plotly, no UI): the Compare page and the export only render what these return.
"""

from __future__ import annotations

import difflib
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
                          diff=[] if same else word_diff(base.answer, run.answer)))
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
