"""Checks whose "yes" is right (issue 19).

The lead passage must answer, counted lists must list, Full's generation picks the lead the answer check
accepts, and partly relevant chunks are CRAG's "ambiguous".
"""

from __future__ import annotations

import pytest

from rag.answer_lists import enumeration, list_count
from rag.answer_types import expected_type
from rag.config import preset_options
from rag.engines.base import Answer, AnswerCitation
from rag.engines.local import EXTRACTIVE_LABEL, LocalEngine
from rag.graph import routing
from rag.models import FALLBACK, FINALIZE_WITH_CAVEAT, GENERATE, Chunk
from rag.store.bm25 import LexicalStats

FILLER = ("The group reported its results for the year in the tables that follow, with comparisons to "
          "the prior year and notes on each segment. ")
TEXTS = {
    # the first sentence shares the question's words but holds a figure about something else; the
    # second holds the answer
    "bhe": ("Berkshire Hathaway Energy has operations in several states and 4 business platforms. "
            "Berkshire Hathaway Energy employed approximately 24,000 people at the end of 2024."),
    "noise": "The company owns railroads, utilities and many manufacturing and retailing businesses.",
    "types": ("We categorize queries into four types: Inference query, Comparison query, Temporal query, "
              "and Null query. The four types of queries are distributed evenly."),
}


def chunk(key: str) -> Chunk:
    return Chunk(id=key, text=TEXTS[key], source=f"{key}.pdf", page=1)


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine(LexicalStats.from_texts(list(TEXTS.values()) + [FILLER] * 30))


def _answer(lead: str) -> Answer:
    return Answer(text=f"{EXTRACTIVE_LABEL}\n{lead} [1]", citations=[AnswerCitation(n=1, chunk_id="x")])


def test_a_counted_list_question_asks_for_that_many_items():
    assert expected_type("What are MultiHop-RAG's four query types?") == "list"
    assert list_count("What are the three quality aspects RAGAS measures?") == 3
    assert list_count("What are its 2 model variants?") == 2
    assert list_count("What is Self-RAG?") is None
    assert enumeration("four types: Inference query, Comparison query, Temporal query, and Null query.", 4) \
        == "Inference query, Comparison query, Temporal query, and Null query"
    two = enumeration("We propose two variants, RAG-Sequence and RAG-Token.", 2)
    assert two == "RAG-Sequence and RAG-Token"
    assert enumeration("(1) industrial products, (2) building products and (3) consumer products", 3)
    # commas between clauses are no list: the items are longer than four words
    assert enumeration("For the first method, shown as GPT Score, we ask ChatGPT to assign a score between 0 "
                       "and 10 for the three quality dimensions.", 3) is None
    assert enumeration("Inference and Comparison queries.", 4) is None


def test_the_answer_check_says_no_to_a_list_question_answered_without_a_list(engine):
    q = "What are the four query types?"
    bad = engine.grade_answer(q, _answer("The four types of queries are distributed evenly."))
    assert not bad.useful and bad.missing_type == "list"
    good = engine.grade_answer(q, _answer("We categorize queries into four types: Inference query, "
                                          "Comparison query, Temporal query, and Null query."))
    assert good.useful, good.reasoning


def test_the_lead_passage_must_cover_the_question_not_only_the_key_passages(engine):
    q = "How many people did Berkshire Hathaway Energy employ at the end of 2024?"
    # a figure, and the question's words in the key passages, but a lead about something else
    text = (f"{EXTRACTIVE_LABEL}\nThe group has 4 business platforms. [1]\n\nKey passages:\n"
            f"- Berkshire Hathaway Energy employed people at the end of 2024. [1]")
    weak = engine.grade_answer(q, Answer(text=text, citations=[AnswerCitation(n=1, chunk_id="x")]))
    assert not weak.useful and "lead passage covers only" in weak.reasoning
    strong = engine.grade_answer(q, _answer(TEXTS["bhe"].split(". ")[1]))
    assert strong.useful and strong.answer_span == "24,000", strong.reasoning


def test_with_critique_a_rejected_lead_gives_way_to_the_passage_the_check_accepts(engine):
    q = "How many people did Berkshire Hathaway Energy employ at the end of 2024?"
    chunks = [chunk("bhe"), chunk("noise")]
    candidates = engine._candidates(q, chunks)
    bad = next(p for p in candidates if "4 business platforms" in p.text)  # a figure, but not the answer
    assert not engine.acceptable(q, bad.text, "number")

    def fits(p):
        return any(ch.isdigit() for ch in p.text)

    lead, chosen = engine._critiqued(q, bad, [bad], candidates, fits, lambda p: 1.0)
    assert "24,000" in lead.text and chosen[0] is lead and bad in chosen
    assert engine.acceptable(q, lead.text, "number")
    # an accepted lead stays
    assert engine._critiqued(q, lead, [lead], candidates, fits, lambda p: 1.0)[0] is lead
    # generate with critique never leads with a passage the check rejects when one it accepts is there
    critiqued = engine.generate(q, chunks, critique=True)
    assert "24,000" in critiqued.text.splitlines()[1] and engine.grade_answer(q, critiqued).useful


def test_partly_relevant_chunks_are_graded_medium_and_kept_as_the_last_resort(engine):
    # the question's name and year are there, but not what it asks about them ("sell"): partly relevant
    q = "What did Berkshire Hathaway Energy sell in 2024?"
    partly, off = engine.grade(q, [chunk("bhe"), chunk("noise")])
    assert not partly.relevant and partly.score == "medium" and "ambiguous" in partly.reasoning
    assert not off.relevant and off.score == "low"  # no constraint held: not even partly relevant


def test_with_no_relevant_chunk_full_answers_from_partly_relevant_ones_with_a_caveat():
    o = preset_options("full")
    part = [Chunk(id="p", text="partly", source="a.pdf", page=1)]
    spent = {"retrieved": part, "documents": [], "rewrites": o.max_rewrites, "web_searches": 1}
    assert routing.decide_after_grading({**spent, "ambiguous": []}, o).to == FALLBACK
    ambiguous = {**spent, "ambiguous": part}
    decision = routing.decide_after_grading(ambiguous, o)
    assert decision.to == GENERATE and "ambiguous" in decision.why
    # once answered from them, not again; and the answer always carries a caveat
    assert routing.decide_after_grading({**ambiguous, "answered_with": ["p"]}, o).to == FALLBACK
    assert routing.decide_after_web_search({"documents": [], "ambiguous": part}, o).to == GENERATE
    done = routing._finish({"ambiguous_evidence": True, "useful": True, "answer_span": "x"}, o, "checks")
    assert done.to == FINALIZE_WITH_CAVEAT
    # grading off (Naive): no partly relevant chunks to fall back on
    assert routing.partly_relevant(ambiguous, preset_options("naive")) is None


def test_a_short_form_a_document_defines_reads_as_the_full_name():
    from rag.engines.aliases import definitions, expand, for_question
    from rag.text import terms

    texts = ["Precision Castparts Corp. (“PCC”), based in Lake Oswego, Oregon, manufactures parts.",
             "Berkshire Hathaway Energy Company (“BHE”) is a holding company.",
             "We propose the Dense Passage Retriever (DPR) for open-domain QA.",
             "The results (TBD) are pending."]  # initials that do not spell the name are no short form
    found = definitions(texts)
    assert found == {"pcc": tuple(terms("Precision Castparts")),
                     "bhe": tuple(terms("Berkshire Hathaway Energy")),
                     "dpr": tuple(terms("Dense Passage Retriever"))}
    asked = for_question(found, [tuple(terms("Precision Castparts"))])
    assert list(asked) == ["pcc"]
    assert expand(terms("PCC’s revenues"), asked)[:3] == ["pcc", *terms("Precision Castparts")]


def test_grading_generation_and_the_check_read_a_short_form_as_its_name():
    texts = {"def": "Precision Castparts Corp. (“PCC”), based in Lake Oswego, Oregon, manufactures complex "
                    "metal components and products.",
             "use": "PCC’s revenues were $10.4 billion in 2024, an increase of 12.0% compared to 2023."}
    engine = LocalEngine(LexicalStats.from_texts(list(texts.values()) + [FILLER] * 30))
    q = "What were Precision Castparts' revenues in 2024?"
    chunks = [Chunk(id=k, text=v, source="10k.pdf", page=i + 1) for i, (k, v) in enumerate(texts.items())]
    grades = engine.grade(q, chunks)
    assert grades[1].relevant, grades[1].reasoning  # the chunk that says only "PCC"
    answer = engine.generate(q, chunks, critique=True)
    assert "10.4 billion" in answer.text.splitlines()[1]
    check = engine.grade_answer(q, answer)
    assert check.useful and check.answer_span and "10.4" in check.answer_span, check.reasoning
    # without the defining chunk, nothing says what PCC is
    alone = LocalEngine(LexicalStats.from_texts(list(texts.values()) + [FILLER] * 30))
    assert not alone.grade(q, chunks[1:])[0].relevant
