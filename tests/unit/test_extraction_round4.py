"""The offline engine's extraction: pages without sentences, affiliation lines, lines cut out of sentences."""

import pytest

from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.local import LocalEngine
from rag.engines.passages import _dangling
from rag.models import Chunk
from rag.store.bm25 import LexicalStats

JSON_CONFIG = '```json\n{"top_k": 6,\n "chunk_overlap": 120,\n "web_search": false}\n```'
TABLE = "| option | default |\n|---|---|\n| top_k | 6 |\n| chunk_overlap | 120 |\n| web_search | off |"
REALM = ("REALM: Retrieval-Augmented Language Model Pre-Training\nKelvin Guu * 1 Kenton Lee * 1\n"
         "*Equal contribution 1Google Research. Correspondence")


def _lead(text: str) -> str:
    lines = text.splitlines()
    assert lines[0] == EXTRACTIVE_LABEL
    return lines[1]


@pytest.fixture(scope="module")
def engine():
    return LocalEngine(LexicalStats.from_texts([
        JSON_CONFIG, TABLE, REALM, "REALM pretrains a retriever", "Google builds models",
        "the retriever is trained with masked language modelling", "other text about retrieval"]))


@pytest.mark.parametrize(("text", "line"), [
    (JSON_CONFIG, '"chunk_overlap": 120,'),
    (TABLE, "| chunk_overlap | 120 |"),
])
def test_a_page_without_a_sentence_answers_with_its_best_line(engine, text, line):
    chunk = Chunk(id="h16-doc-00001", text=text, source="docs.md", page=1, index=1)
    answer = engine.generate("How do I set chunk_overlap?", [chunk], critique=True)
    lead = _lead(answer.text)
    assert line in lead and lead.endswith("[1]")
    assert [c.chunk_id for c in answer.citations] == ["h16-doc-00001"]
    assert "no readable sentence" not in answer.text


def test_a_page_of_symbols_with_no_question_term_quotes_nothing(engine):
    chunk = Chunk(id="h16-doc-00002", text="```\n{}\n[]\n```", source="docs.md", page=1, index=1)
    answer = engine.generate("How do I set chunk_overlap?", [chunk], critique=True)
    assert answer.citations == []
    assert "no readable sentence" in answer.text


def test_an_affiliation_question_leads_with_the_affiliation_line(engine):
    front = Chunk(id="h16-realm-00000", text=REALM, source="realm.pdf", page=1, index=0)
    answer = engine.generate("Which organisation are the REALM authors from?", [front], critique=True)
    lead = _lead(answer.text)
    assert "Google Research" in lead
    assert "1Google" not in lead
    assert lead.endswith("[1]")


@pytest.mark.parametrize("line", [
    "of predicting factuality using a few-shot",
    "is a retrieval-augmented question answering task, the",
    "We train on a question answering task, a",
])
def test_a_line_cut_out_of_a_sentence_is_dangling(line):
    assert _dangling(line)


@pytest.mark.parametrize("line", [
    "Marc D. Hamburg 75 Senior Vice President",
    "Total revenues 371,433 364,482",
    "Omaha, Nebraska 68131",
])
def test_a_table_row_or_signature_line_is_not_dangling(line):
    assert not _dangling(line)
