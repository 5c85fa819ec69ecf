"""Round 14's rules, each about grammar or a document's layout, not a topic.

Written after retrace-dev17 and retrace-dev18 (the held-out shape: the 10-K and four classic papers) were
measured once on arrival; their turns, and retrace-dev15's GEICO turns, are the examples.
"""

from __future__ import annotations

import pytest

from rag.answer_spans import _named, _spans, holds, nearness
from rag.answer_types import expected_type
from rag.config import preset_options
from rag.engines.base import Answer, AnswerCitation
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.entities import entities, filing_frames
from rag.engines.lexical import _same_text
from rag.graph.endings import _caveat
from rag.graph.evidence import last_heading, with_sections
from rag.models import Chunk
from rag.text import axis_ticks, terms
from tests.unit.conversation import ask, engine_over

GEICO_HEAD = ("K-57\nManagement’s Discussion and Analysis\nCritical Accounting Estimates\n"
              "Property and casualty insurance unpaid losses\nGEICO\nGEICO predominantly writes private "
              "passenger automobile insurance. As of December 31, 2024, GEICO’s gross claim\nliabilities "
              "were $24.8 billion and were $23.9 billion, net of reinsurance. Claim liability estimates for "
              "liability coverages (such as bodily injury (“BI”), uninsured motorists and personal injury\n"
              "protection) are more uncertain due to the longer claim-tails, so we establish additional case "
              "development estimates. As of")
GEICO_MIDDLE = ("protection) are more uncertain due to the longer claim-tails, so we establish additional "
                "case development estimates. As of\nDecember 31, 2024, case development liabilities averaged "
                "approximately 31% of reported reserves. Case development factors\nare selected through "
                "analysis of the overall adequacy of historical case liabilities.")
GEICO_LATER = ("A one percentage point increase or decrease in BI severities could produce a $220 million "
               "increase or decrease in recorded\nliabilities, with a corresponding decrease or increase in "
               "pre-tax earnings.\nBerkshire Hathaway Reinsurance Group\nBHRG’s property and casualty claims "
               "arise from a diverse portfolio of reinsurance contracts.")


class _Store:
    """A knowledge base's ``get_chunks`` over fixed chunks (what with_sections reads)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = {c.id: c for c in chunks}
        self.asked: list[list[str]] = []

    def get_chunks(self, ids):
        self.asked.append(list(ids))
        return [self.chunks[i] for i in ids if i in self.chunks]


def _chunk(index: int, text: str) -> Chunk:
    return Chunk(id=f"a23ec32b25f08fa8-{index:05d}", text=text, source="brk.pdf", page=59, index=index,
                 doc_sha="a23ec32b25f08fa8" + "0" * 48)


def test_a_heading_is_a_short_capitalised_line_after_a_sentence_ends() -> None:
    assert last_heading(GEICO_HEAD) == "GEICO"
    assert last_heading(GEICO_LATER) == "Berkshire Hathaway Reinsurance Group"
    # a page marker, a wrapped line of a paragraph and a table row are no headings
    assert last_heading("K-57\nthe aggregate claim liability estimates recorded\nat the end of 2023") == ""
    assert last_heading("Revenues rose in 2024 because\nFreight volumes grew\nand prices rose.") == ""
    assert last_heading("Insurance $ 16,557 $ 16,563 $ 16,548") == ""
    # a numbered heading keeps its words, not its number; a chunk's last line may be cut mid-sentence
    assert last_heading("Notes.\n(16) Unpaid losses and loss adjustment expenses\nGEICO’s net auto") == \
        "Unpaid losses and loss adjustment expenses"


def test_a_chunk_takes_the_heading_of_the_section_it_opens_in() -> None:
    head, middle, later = _chunk(342, GEICO_HEAD), _chunk(343, GEICO_MIDDLE), _chunk(344, GEICO_LATER)
    store = _Store([head, middle, later])
    got = {c.id: c.section for c in with_sections(store, [middle, later])}
    # two chunks back for the BI chunk: the one before it has no heading
    assert got == {middle.id: "GEICO", later.id: "GEICO"}
    assert len(store.asked) == 1  # one read for every chunk
    # a first chunk, a web result and a chunk with no heading before it are left as they are
    web = Chunk(id="w", text="x", source="https://example.org", origin="web")
    assert with_sections(_Store([]), [head.model_copy(update={"index": 0}), web])[1] is web
    assert with_sections(_Store([]), [middle])[0].section == ""


def test_the_grader_reads_a_chunks_section_as_what_it_is_about() -> None:
    engine = engine_over(GEICO_HEAD, GEICO_MIDDLE, GEICO_LATER)
    question = "At GEICO, what share of reported reserves did case development liabilities average at the " \
               "end of 2024?"
    bare = _chunk(343, GEICO_MIDDLE)
    [without] = engine.grade(question, [bare])
    [within] = engine.grade(question, [bare.model_copy(update={"id": "c2", "section": "GEICO"})])
    assert not without.relevant and "GEICO" in without.reasoning
    assert within.relevant, within.reasoning


def test_a_short_form_near_a_figure_counts_as_its_full_name() -> None:
    question = "How much would a one percentage point change in bodily injury severities move GEICO's " \
               "recorded liabilities?"
    lead = GEICO_LATER.split("\n")[0] + " liabilities, with a corresponding decrease or increase in earnings."
    predicate = {t: 1.0 for t in terms("percentage point change bodily injury severities move recorded "
                                       "liabilities")}
    short = {"bi": ("bodili", "injuri")}
    assert nearness(lead, "$220 million", predicate, short) > nearness(lead, "$220 million", predicate)
    assert nearness(lead, "$220 million", predicate, short) >= 0.5
    # the supposed "one percentage point change" asks for what it would do, not for a percentage
    assert holds(lead, "number", question, None, predicate, short) == "$220 million"
    assert holds(lead, "number", question, None, predicate) is None
    # a share asked for still takes a percentage only
    assert holds("Reserves were $220 million, or 31% of the total.", "number", "What share of reserves?") \
        == "31%"


def test_an_adjective_hyphened_to_a_name_is_not_part_of_it() -> None:
    assert entities("How many GPT-4-labelled examples did they gather?") == ["GPT-4"]
    assert "LIFO" in entities("By how much did costs exceed the LIFO-based inventory costs?")
    # a model's variant is part of its name
    assert entities("What does T5-large score, and BERT-base?") == ["T5-large", "BERT-base"]


def test_a_filing_named_as_where_to_look_is_held_by_its_filers_chunks() -> None:
    question = "According to Berkshire Hathaway's 2024 10-K, by how much did current or replacement costs " \
               "exceed the LIFO-based inventory costs at year-end 2024?"
    [(filer, frame)] = filing_frames(question)
    assert filer == "Berkshire Hathaway"
    assert {"accord", "berkshir", "hathaway"} <= frame and "2024" not in frame
    assert filing_frames("What is BNSF's revenue?") == ()
    engine = engine_over("The excess of current or replacement costs over costs determined under LIFO was "
                         "approximately $2.3 billion.")
    assert not set(engine.predicate(question)) & {"accord", "berkshir", "hathaway"}
    chunk = Chunk(id="c1", source="brk.pdf", head="UNITED STATES FORM 10-K BERKSHIRE HATHAWAY INC.",
                  text="The excess of current or replacement costs over LIFO costs was $2.3 billion.")
    assert {"accord", "berkshir", "hathaway"} <= engine.head_names(question, chunk)
    other = chunk.model_copy(update={"head": "Dense Passage Retrieval for Open-Domain Question Answering"})
    assert not engine.head_names(question, other)


@pytest.mark.parametrize("question", [
    "According to Berkshire Hathaway's 2024 Form 10-K, how many people did BNSF employ?",
    "In Berkshire Hathaway's Form 10-K, how many people did BNSF employ?",
    "In Berkshire Hathaway's fiscal 2024 annual report, how many people did BNSF employ?",
])
def test_the_filer_of_a_filing_is_its_name_without_form_or_year(question: str) -> None:
    assert [filer for filer, _ in filing_frames(question)] == ["Berkshire Hathaway"]


def test_a_form_named_without_a_filer_has_no_filer() -> None:
    assert filing_frames("In the Form 10-K for 2024, how many people did BNSF employ?") == ()


@pytest.mark.parametrize(("question", "kind"), [
    # the noun phrase's verb is "applied", not an auxiliary
    ("What weighted average discount rate applied to Berkshire Hathaway's annuity liabilities at the end of "
     "2024?", "number"),
    # a noun phrase of ten words before its auxiliary
    ("What expected long-term rate of return on pension plan assets did the company assume for 2024?",
     "number"),
    ("What method did they use to score passages?", "organisation"),
])
def test_the_answer_type_of_a_long_noun_phrase(question, kind) -> None:
    assert expected_type(question) == kind


def test_a_preposition_and_a_question_word_start_a_whole_question() -> None:
    engine = engine_over("BHE has invested $35.4 billion in renewable generation.")
    got = ask(engine, "How much has Berkshire Hathaway Energy invested in owned renewable generation and "
                      "storage through the end of 2024?",
              "And by how much has that cut its annual GHG emissions compared with 2005 levels?")
    assert got[1].startswith("By how much has that cut Berkshire Hathaway Energy's annual GHG emissions")


@pytest.mark.parametrize(("first", "follow", "meant"), [
    # "SEC" only modifies a noun: "its" is the filer's
    ("In Berkshire Hathaway's 2024 Form 10-K, what is the company's SEC commission file number?",
     "Which of its exchange-listed senior notes matures last?",
     "Which of Berkshire Hathaway's exchange-listed senior notes matures last?"),
    ("According to Berkshire Hathaway's 2024 10-K, by how much did current or replacement costs exceed the "
     "LIFO-based inventory costs at year-end 2024?",
     "How much in goods acquired for resale did its insurance and other businesses carry?",
     "How much in goods acquired for resale did Berkshire Hathaway's insurance and other businesses carry?"),
    # the filing alone: its filer, never "Berkshire Hathaway's 2024 10-K's"
    ("In Berkshire Hathaway's 2024 10-K, what were gross life and health premiums earned in 2024?",
     "What weighted average discount rate applied to its annuity liabilities?",
     "What weighted average discount rate applied to Berkshire Hathaway's annuity liabilities?"),
    # a name that is the question's subject stays the antecedent
    ("According to Berkshire Hathaway's 2024 10-K, how many route miles does BNSF operate?",
     "What were its revenues in 2024?", "What were BNSF's revenues in 2024?"),
])
def test_its_after_a_question_that_names_a_filing(first, follow, meant) -> None:
    engine = engine_over("BNSF operates 32,500 route miles.", "The SEC file number is 001-14905.")
    assert ask(engine, first, follow)[1] == meant


def test_a_plural_names_bare_apostrophe_is_a_possessive() -> None:
    assert entities("Where are NetJets' European operations based?") == ["NetJets", "European"]


@pytest.mark.parametrize(("question", "kind"), [
    ("What did Kraft Heinz earn for its common shareholders in its 2024 fiscal year?", "number"),
    ("What did Berkshire pay for Alleghany?", "number"),
    ("What did the authors propose?", None),
])
def test_a_verb_of_measuring_after_what_did(question, kind) -> None:
    assert expected_type(question) == kind


def test_the_kind_of_place_asked_for_is_no_word_its_passage_must_hold() -> None:
    question = "According to Berkshire Hathaway's 2024 10-K, in which state is BHE GT&S based?"
    engine = engine_over("BHE GT&S, based in Virginia, operates three interstate natural gas pipelines.")
    # neither "state" (the type) nor the filing's year (said once, as where to look) is asked about
    assert set(engine.predicate(question)) == {"base"}
    lead = "BHE GT&S, based in Virginia, operates three interstate natural gas pipeline systems."
    assert holds(lead, "place", question, engine.common_word, engine.predicate(question)) == "Virginia"


def test_a_cut_copy_of_a_sentence_is_the_same_passage() -> None:
    lead = "As of December 31, 2024, case development liabilities averaged approximately 31% of reported " \
           "reserves."
    cut = "December 31, 2024, case development liabilities averaged approximately 31% of reported " \
          "reserves. Case development factors"
    assert _same_text(lead, cut)
    assert not _same_text(lead, "The aggregate claim liability estimates recorded at the end of 2023 were "
                                "reduced by $550 million during 2024.")


def test_the_caveat_of_a_table_row_says_which_figure_is_unclear() -> None:
    row = f"{EXTRACTIVE_LABEL}\nLife and health 3,830 3,627 135 221 [1]\n\nKey passages:\n- More. [2]"
    sentence = f"{EXTRACTIVE_LABEL}\nThe premiums were earned in 2024. [1]"
    state = {"sought_types": ["number"], "useful": False}
    assert "which one was asked for" in _caveat({**state, "answer": row}, preset_options("full"))
    assert _caveat({**state, "answer": sentence}, preset_options("full")) == \
        "no passage found gives a figure for what was asked"


def test_a_charts_axis_is_no_figure_of_what_is_asked() -> None:
    caption = ("retrieval 0.0 20.0 40.0 60.0 80.0 0.0 25.0 50.0 75.0 100.0 WikiMultihopQA StrategyQA "
               "Figure 5: Performance (EM) of FLARE")
    assert len(axis_ticks(caption)) == 2  # two axes run together
    assert _spans(caption, "number", "What exact match score does FLARE get on StrategyQA?", None) == []
    # a results table's row is not evenly spaced, nor are three years
    assert axis_ticks("Our SELF-RAG 7B 54.9 66.4 72.4 67.3") == []
    assert axis_ticks("10 20 30 45 60") == []


@pytest.mark.parametrize("question", [
    "What did Berkshire Hathaway Energy's other energy businesses contribute to its net earnings in 2024?",
    "In the breakdown of net earnings attributable to BHE, what did real estate brokerage contribute in "
    "2024, in millions?",
])
def test_a_contribution_or_a_scale_asks_for_a_figure(question) -> None:
    assert expected_type(question) == "number"
    assert expected_type("What did the authors contribute to the field?") is None


def test_a_lead_about_another_name_sends_full_looking_for_the_type_asked() -> None:
    engine = engine_over("BNSF operating revenues from agricultural products increased to $5.8 billion.",
                         "Agricultural products 1,251 1,165 1,200 cars/units in thousands.")
    question = "What were BNSF's operating revenues from agricultural products in 2024?"
    # BNSF is named by a key passage, not by the lead
    answer = Answer(text=f"{EXTRACTIVE_LABEL}\nAgricultural products revenues, 2024: 1,251 thousand [1]\n\n"
                         "Key passages:\n- BNSF’s railroad operating revenues were $23,355 million. [2]",
                    citations=[AnswerCitation(n=1, chunk_id="c1"), AnswerCitation(n=2, chunk_id="c2")])
    grade = engine.grade_answer(question, answer)
    assert not grade.useful and "not about the question's name 'BNSF" in grade.reasoning
    # the correction that follows searches more chunks for a figure (seek_answer_type), not a rewrite
    assert grade.missing_type == "number"


def test_a_word_cut_by_a_line_break_is_no_name() -> None:
    assert _named("FLARE is applicable to any existing LMs at inference time. Con-", set(), None) == ["FLARE"]
    assert "Con" not in _named("without additional training. Con-\n", set(), None)


def test_the_year_before_is_the_previous_questions_year_less_one() -> None:
    engine = engine_over("Credit losses were provided for in 2024 and 2023.")
    got = ask(engine, "In Berkshire Hathaway's 2024 10-K, how much did the company provide for credit losses "
                      "on its loans and finance receivables in 2024, in millions?", "And the year before?")
    assert got[1] == ("In Berkshire Hathaway's 2024 10-K, how much did the company provide for credit "
                      "losses on its loans and finance receivables in 2023, in millions?")


def test_a_spelled_count_or_a_percentage_is_no_amount_in_millions() -> None:
    caption = "Reconciliations of the allowance for credit losses for each of the three years ending " \
              "December 31, 2024 follow (in millions). We considered approximately 96% of these loans."
    question = "How much did the company provide for credit losses on its loans in 2024, in millions?"
    assert _spans(caption, "number", question, None) == []
    # a count may be spelled out
    assert _spans("They trained for three epochs.", "number", "How many epochs did they train for?",
                  None) == ["three"]
