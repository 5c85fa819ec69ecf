"""A sentence cut by a chunk's start is quoted as a tail; "what share" is answered by a percentage."""

import pytest

from rag.answer_spans import _spans, holds
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.local import LocalEngine
from rag.models import Chunk
from rag.store.bm25 import LexicalStats

TAIL = ("automobile insurers had a combined market share of approximately 62.3% based on written premiums, "
        "with GEICO’s market share being the third largest at approximately 12.3%. State insurance "
        "departments stringently regulate private passenger auto insurance policies and rates.")
CODE_TAIL = ("terminal npm install @chroma-core/default-embed and then the rest of the packages follow. "
             "Chroma's default embedding function uses a small model to create embeddings.")
SHARE = "What was GEICO's share of the auto insurance market based on written premiums?"


@pytest.fixture(scope="module")
def engine():
    return LocalEngine(LexicalStats.from_texts([TAIL, CODE_TAIL, "GEICO writes premiums", "other text"]))


def test_the_end_of_a_sentence_cut_by_the_chunk_start_is_quoted_as_a_tail(engine):
    chunk = Chunk(id="g-00005", text=TAIL, source="10k.pdf", page=5, index=5)
    lead = engine.generate(SHARE, [chunk]).text.splitlines()
    assert lead[0] == EXTRACTIVE_LABEL
    assert lead[1].startswith("… automobile insurers") and "12.3%" in lead[1]


def test_a_document_s_first_chunk_or_a_line_of_code_is_no_tail(engine):
    first = Chunk(id="g-00000", text=TAIL, source="10k.pdf", page=1, index=0)
    assert "… automobile" not in engine.generate(SHARE, [first]).text
    code = Chunk(id="c-00003", text=CODE_TAIL, source="docs.md", page=1, index=3)
    assert "… terminal npm" not in engine.generate("Which package installs the default embedding?",
                                                    [code]).text


def test_a_share_is_answered_by_a_percentage_not_an_amount():
    row = "Premiums written, 2024: $ 42,916 (2023: $ 39,837)"
    assert _spans(row, "number", SHARE, None) == []
    assert holds(row, "number", SHARE, None, None) is None
    assert "12.3%" in _spans(TAIL, "number", SHARE, None)
    # a count of shares is not a share of a whole
    assert _spans("Berkshire repurchased 1,200 shares.", "number", "How many shares were repurchased?",
                  None) == ["1,200"]


def test_a_form_s_name_is_no_number_the_answer_must_hold():
    from rag.engines.lexical import constraints

    kinds = [(c.kind, c.text) for c in constraints("Which competitors does the 10-K name for GEICO?")]
    assert kinds == [("entity", "GEICO")]
    routes = constraints("How many of the 10 routes did BNSF run?")
    assert ("number", "10") in [(c.kind, c.text) for c in routes]


def test_an_amount_is_answered_by_money_not_a_percentage_unless_a_change_is_asked():
    q = "What were McLane's revenues?"
    text = ("McLane's customers included Walmart (approximately 17.3% of revenues); "
            "revenues were $51,907 million.")
    assert _spans(text, "number", q, None) == ["$51,907 million"]
    assert _spans("Revenues increased 8.3%.", "number", "By how much did McLane's revenues increase?",
                  None) == ["8.3%"]


def test_the_words_of_a_named_work_are_not_what_the_question_asks_about_it():
    from rag.engines.lexical import work_terms

    q = "How many tokens was GPT-43B trained on in the Retrieval meets Long Context LLMs paper?"
    assert {"meet", "long", "context"} <= work_terms(q)
    engine = LocalEngine(LexicalStats.from_texts(["GPT-43B is trained with 1.1T tokens", "meets long context",
                                                  "other text", "retrieval meets"]))
    assert "meet" not in engine.predicate(q) and "token" in engine.predicate(q)
    text = "GPT-43B is a 43 billion parameter model that is trained with 1.1T tokens with 70% English corpus."
    assert holds(text, "number", q, None, engine.predicate(q)) == "1.1T"


def test_a_tax_rate_is_a_percentage_but_a_learning_rate_is_not():
    q = "What was BNSF's effective income tax rate in 2024?"
    row = "Hypothetical income tax expense at the U.S. federal statutory rate, 2024: $23,179 million"
    assert _spans(row, "number", q, None) == []
    assert _spans("The effective income tax rate was 24.3% in 2024.", "number", q, None) == ["24.3%"]
    # a learning rate is no part of a whole: a plain figure answers it
    lr = "We use a learning rate of 0.5 for the first epochs."
    assert _spans(lr, "number", "What learning rate was used?", None) == ["0.5"]
