"""The evaluation data of tests/data and docs/eval: well formed, each gold answer in its sources."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache

import pytest

from rag.bench.data import normalize_answer
from rag.eval import load_items
from rag.ingest.loaders import load_document
from rag.samples import SAMPLES_DIR
from tests.conftest import DATA, PAPERS, ROOT, TRICKY

CONVERSATIONS = ROOT / "tests" / "data" / "conversations" / "retrace-dev.jsonl"
# held out: the pipeline is never tuned on it, so it asks no fact of the dev sets
REPORT = ROOT / "tests" / "data" / "conversations" / "retrace-report.jsonl"
MIXED_DEV = DATA / "conversations" / "mixed-dev.jsonl"
# conversation set -> (least conversations, least turns)
SIZES = {CONVERSATIONS: (14, 40), REPORT: (12, 36)}
CASES = ROOT / "tests" / "data" / "contextualize-cases.jsonl"
SAMPLE_SET = SAMPLES_DIR / "eval" / "sample-questions.jsonl"
KINDS = {"self-contained", "ellipsis", "reference", "courtesy"}
COURTESY = re.compile(r"^(thanks|thank you|great|perfect|cool|ok|hello|hi)\b", re.IGNORECASE)


@cache
def _text(name: str) -> str:
    """A source's whole text, SQuAD-normalised: a PDF of the shared data or a file of docs/."""
    path = SAMPLES_DIR / name if name.endswith(".md") else next(
        p for p in (PAPERS / name, TRICKY / name) if p.is_file())
    doc = load_document(name, path.read_bytes(), ocr=False)
    return normalize_answer(" ".join(p.text for p in doc.pages))


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", list(SIZES), ids=lambda p: p.stem)
def test_conversations_are_a_question_set_with_sources_that_exist(path):
    rows = _rows(path)
    items = load_items(path)
    turns = [t for r in rows for t in r["turns"]]
    least_rows, least_turns = SIZES[path]
    assert len(rows) >= least_rows and len(turns) >= least_turns and len(items) == len(turns)
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(t["sources"] and all((PAPERS / s).is_file() or (TRICKY / s).is_file() for s in t["sources"])
               for t in turns)
    # short facts have gold answers, definitions have none
    assert sum("answers" in t for t in turns) >= 0.8 * len(turns) and any("answers" not in t for t in turns)


@pytest.mark.parametrize("row", [r for p in SIZES for r in _rows(p)], ids=lambda r: r["id"])
def test_every_gold_answer_is_in_a_source(row):
    missing = [(n, a) for n, t in enumerate(row["turns"], 1) for a in t.get("answers", [])
               if not any(normalize_answer(a) in _text(s) for s in t["sources"])]
    assert not missing, missing


def test_report_set_asks_no_fact_of_the_dev_sets():
    def facts(rows: list[dict]) -> set[tuple[str, str]]:
        return {(s, normalize_answer(a)) for r in rows for t in r["turns"] for s in t["sources"]
                for a in t.get("answers", [])}

    dev = _rows(CONVERSATIONS) + _rows(MIXED_DEV)
    report = _rows(REPORT)
    assert not {r["id"] for r in report} & {r["id"] for r in dev}
    assert not facts(report) & facts(dev)


def test_sample_questions_answers_are_in_the_docs():
    items = load_items(SAMPLE_SET)
    assert 12 <= len(items) <= 16 and 3 <= sum(i.answerable is False for i in items) <= 4
    for item in items:
        if item.answerable is False:
            assert not item.answers and not item.sources, item.id
            continue
        assert item.sources and all((SAMPLES_DIR / s).is_file() for s in item.sources), item.id
        for gold in item.answers or []:
            assert any(normalize_answer(gold) in _text(s) for s in item.sources), (item.id, gold)


def test_contextualize_cases_follow_the_rules():
    cases = _rows(CASES)
    kinds = Counter(c["kind"] for c in cases)
    assert len(cases) >= 40 and set(kinds) == KINDS and min(kinds.values()) >= 8, kinds
    for c in cases:
        assert set(c) == {"history", "question", "standalone", "kind"}, c
        assert all(isinstance(h, str) and h.endswith("?") for h in c["history"]), c
        standalone = c["standalone"]
        assert standalone.endswith("?") and standalone[0].isupper(), c
        assert "'s's" not in standalone and "'s'" not in standalone, c
        if c["kind"] == "self-contained":
            assert standalone == c["question"], c
        else:
            assert standalone != c["question"] and not COURTESY.match(standalone), c
        if c["kind"] in ("ellipsis", "reference"):
            assert c["history"], c
        if c["kind"] == "courtesy":
            assert COURTESY.match(c["question"]), c


LATER_DEV = [ROOT / "tests" / "data" / "conversations" / f"retrace-dev{n}.jsonl"
             for n in range(3, 35)]


@pytest.mark.parametrize("path", LATER_DEV, ids=lambda p: p.stem)
def test_every_gold_answer_of_the_later_dev_sets_is_in_a_source(path):
    rows = _rows(path)
    # retrace-dev12 (10 conversations over the 10-K and the four classic papers) is the smallest
    assert len(rows) >= 10 and len({r["id"] for r in rows}) == len(rows)
    turns = [t for r in rows for t in r["turns"]]
    # a turn with a gold answer has a source; an out-of-scope turn has neither; a turn that asks for an
    # explanation (retrace-dev9 and later) has a source and no gold answer
    assert all(t["sources"] for t in turns if t.get("answers"))
    assert sum(bool(t.get("answers")) for t in turns) >= 36
    missing = [(r["id"], n, a) for r in rows for n, t in enumerate(r["turns"], 1)
               for a in t.get("answers", [])
               if not any(normalize_answer(a) in _text(s) for s in t["sources"])]
    assert missing == []
