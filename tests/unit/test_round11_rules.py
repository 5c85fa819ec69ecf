"""Round 11's rules, each about grammar or layout, not a topic.

Written after retrace-dev10 was measured once on arrival (its turns are the examples).
"""

from __future__ import annotations

import pytest

from rag.answer_spans import holds
from rag.answer_types import expected_type
from rag.engines.local import LocalEngine
from rag.store.bm25 import LexicalStats
from tests.unit.conversation import ask

TEXTS = [
    "Ragas computes the answer relevance score from questions generated for the answer.",
    "BNSF issued $1.0 billion of debentures in 2024 that mature in 2055.",
    "The estimated fair value of Pilot was $20.3 billion and its carrying value was $18.3 billion.",
    "Shareholders' equity increased $88.1 billion in 2024 to $649.4 billion.",
    "FLARE uses a confidence threshold of 0.4 on StrategyQA; the LMs generate a tentative next sentence.",
    "The survey lists Flowise AI for its low-code, drag-and-drop approach to RAG applications.",
] + [f"Berkshire Hathaway filler text number {i} about retrieval and language models: how an answer "
     "relevance score is computed" for i in range(30)]


@pytest.fixture(scope="module")
def engine():
    return LocalEngine(LexicalStats.from_texts(TEXTS))


@pytest.mark.parametrize(("question", "kind"), [
    ("What range of interest rates do those borrowings carry?", "number"),  # a plural quantity
    ("What average score over all seven datasets did Davinci003 get?", "number"),  # head before "over"
    ("What values of k did they test?", "number"),
    ("What method did they use to score passages?", "organisation"),  # unchanged: a named method
    ("Which datasets do the authors use?", "organisation"),
    ("What kind of model did they use?", None),
])
def test_the_head_of_the_asked_noun_phrase_says_whether_a_figure_is_asked(question: str, kind) -> None:
    assert expected_type(question) == kind


def test_a_figure_after_a_number_sign_is_an_identifier() -> None:
    question = "What were Berkshire Hathaway's total assets at December 31, 2024?"
    contents = "Report of Independent Registered Public Accounting Firm (PCAOB ID No. 34) K-64 Balance Sheets"
    assert holds(contents, "number", question) is None
    assert holds("Total assets were $ 1,153,881 million.", "number", question) == "$ 1,153,881 million"


def test_a_statement_before_the_question_is_its_nearest_antecedent(engine) -> None:
    got = ask(engine, "What were BHFC's senior note borrowings at December 31, 2024?",
              "BNSF also issued debentures in 2024. In what year do they mature?")
    assert got[1] == "BNSF also issued debentures in 2024. In what year do the debentures mature?"
    got = ask(engine, "How many reporting units had fair values close to their carrying values?",
              "Of the units acquired in 2022 and 2023, the largest was Pilot. "
              "What was its estimated fair value?",
              "And its carrying value?")
    # "its" means the statement's Pilot (the turn stands alone), and the ellipsis keeps that statement: years
    # ("2022 and 2023") are never the name it replaces
    assert got[1].endswith("What was its estimated fair value?")
    assert got[2] == ("Of the units acquired in 2022 and 2023, the largest was Pilot. "
                      "What was its carrying value?")


def test_a_question_with_no_topic_of_its_own_is_framed_by_the_conversation_s_paper(engine) -> None:
    got = ask(engine, "In the Ragas paper, what agreement with human annotators did the GPT Ranking "
                      "baseline reach?",
              "When extracting sentences for context relevance, what phrase should the LLM return?",
              "How is the answer relevance score computed?")
    assert got[2] == "In the Ragas paper, how is the answer relevance score computed?"


def test_an_ellipsis_with_named_modifiers_replaces_the_phrase_with_the_same_head(engine) -> None:
    got = ask(engine, "In the Ragas paper, what agreement with human annotators did the GPT Ranking "
                      "baseline reach?",
              "And the GPT Score baseline?")
    assert got[1] == ("In the Ragas paper, what agreement with human annotators did the GPT Score baseline "
                      "reach?")


def test_it_before_a_verb_of_change_is_the_measure_asked_before(engine) -> None:
    got = ask(engine, "What was Berkshire Hathaway's shareholders' equity at the end of 2024?",
              "By how much did it grow over the year?")
    assert got[1] == "By how much did Berkshire Hathaway's shareholders' equity grow over the year?"
    got = ask(engine, "What is Self-RAG?", "How is it trained?")
    assert got[1] == "How is Self-RAG trained?"  # not a verb of change: the name, as before


def test_they_who_use_something_are_the_paper_s_authors(engine) -> None:
    got = ask(engine, "In the FLARE paper, which model do the authors prompt to generate questions?",
              "What exact match does single-time retrieval get on 2WikiMultihopQA?",
              "Which confidence threshold did they use on StrategyQA?")
    assert got[2] == "Which confidence threshold did the authors of the FLARE paper use on StrategyQA?"


def test_the_paper_is_a_survey_named_earlier_not_a_name_of_the_last_turn(engine) -> None:
    got = ask(engine, "According to the RAG survey by Gao et al., how many datasets does MTEB cover?",
              "How many citations does the survey have on Google Scholar right now?",
              "Which tool does the paper single out for its low-code, drag-and-drop approach?")
    assert got[2] == "Which tool does the RAG survey single out for its low-code, drag-and-drop approach?"


def test_them_never_means_one_work(engine) -> None:
    got = ask(engine, "In the hallucination mitigation survey, which model was best at spotting "
                      "high-entropy words?",
              "And which one was better at replacing them?")
    assert "survey" not in got[1]


def test_a_document_head_holds_a_name_of_several_words_only_with_most_of_them() -> None:
    from rag.graph.scope import _held_names, _named_terms
    from rag.text import terms

    names = _named_terms("Which Berkshire subsidiary sells pontoon boats under the South Bay and Trifecta "
                         "brands?")
    survey = tuple(terms("A Survey of Hallucination Mitigation S.M Tonmoy, University of South Carolina"))
    filing = tuple(terms("FORM 10-K Berkshire Hathaway Inc. Omaha, Nebraska"))
    assert _held_names(survey, names) == []  # "South" alone is not "South Bay"
    assert [t for _, t in _held_names(filing, names)] == terms("Berkshire")
    title = tuple(terms("Retrieval meets Long Context Large Language Models"))
    assert _held_names(title, _named_terms("Which retrievers does the Long Context LLMs paper compare?"))


def test_a_question_cut_at_an_abbreviation_has_no_statement_before_it(engine) -> None:
    got = ask(engine, "What exact match score does RAG-Sequence get on Natural Questions in the Lewis et al. "
                      "RAG paper?", "And RAG-Token?")
    assert got[1] == ("What exact match score does RAG-Token get on Natural Questions in the Lewis et al. "
                      "RAG paper?")
    got = ask(engine, "What is REALM?", "It was written by Guu et al. Which corpus does it retrieve from?")
    assert got[1] == "REALM was written by Guu et al. Which corpus does REALM retrieve from?"  # one sentence


def test_a_bare_quantity_word_is_not_a_word_the_passage_must_hold() -> None:
    from rag.answer_types import cue_words

    assert "value" in cue_words("What value of k1 did the authors of DPR use for BM25?")
    assert "value" not in cue_words("What was the fair value of Berkshire's equity securities?")


def test_named_scores_in_a_counted_list_are_a_list_not_a_figure() -> None:
    assert expected_type("What are the three quality scores BEQUE lists for evaluating RAG?") == "list"


@pytest.mark.parametrize("question", [
    "What weight λ did the authors use when linearly combining BM25 and DPR scores?",
    "Which confidence threshold θ did they use on StrategyQA?",
])
def test_a_symbol_after_its_noun_leaves_the_noun_the_head(question: str) -> None:
    assert expected_type(question) == "number"


def test_a_figure_after_a_verb_of_change_is_no_level() -> None:
    text = ("Revenues of the industrial products group in 2024 increased $949 million (2.7%) and pre-tax "
            "earnings increased $331 million (5.8%) compared to 2023.")
    assert holds(text, "number", "What were the 2024 pre-tax earnings of the industrial products group?") \
        is None
    assert holds(text, "number", "By how much did the group's pre-tax earnings increase in 2024?") is not None


def test_the_authors_wrote_the_paper_not_the_model_asked_about(engine) -> None:
    got = ask(engine, "In the 'Lost in the Middle' paper, which method does MPT-30B-Instruct use?",
              "What closed-book accuracy did LongChat-13B (16K) get on the multi-document QA task?",
              "What do the authors call the tendency to use information at the very beginning?")
    assert got[2] == ("What do the authors of the Lost in the Middle paper call the tendency to use "
                      "information at the very beginning?")


def test_ellipsis_phrases_with_years_and_quantifiers(engine) -> None:
    got = ask(engine, "How many inference queries does the MultiHop-RAG benchmark contain?",
              "And temporal queries?")
    assert got[1] == "How many temporal queries does the MultiHop-RAG benchmark contain?"  # "many" is kept
    got = ask(engine, "What share of the world leaders did RAG answer correctly using the 2016 index?",
              "And with the 2018 index?")
    # the phrase with the same head takes the new year; a year never replaces a name
    assert got[1] == "What share of the world leaders did RAG answer correctly using the 2018 index?"


def test_a_lower_case_phrase_defines_its_acronym_for_a_question_that_spells_it_out() -> None:
    from rag.engines.aliases import definitions

    found = definitions(["The accumulated benefit obligation (“ABO”) is the actuarial present value. "
                         "Suppliers include original equipment manufacturers (OEMs)."])
    assert found == {"abo": ("accumul", "benefit", "oblig"), "oem": ("origin", "equip", "manufactur")}
    engine = LocalEngine(LexicalStats.from_texts(TEXTS))
    question = "What was the accumulated benefit obligation at year-end 2024?"
    assert engine.aliases(question, ["The accumulated benefit obligation (“ABO”) is defined below."]) == {
        "abo": ("accumul", "benefit", "oblig")}
    weights = engine.weighted_terms(question)
    # "December 31" covers "year-end", and "ABO" the obligation spelled out
    present = {"abo", "accumul", "benefit", "oblig", "decemb", "31", "2024"}
    cov, _, missing = engine.coverage(weights, present)
    assert cov == 1.0 and missing == []


def test_a_time_phrase_the_previous_question_lacks_is_added(engine) -> None:
    got = ask(engine, "What share of Berkshire's equity securities did its five largest holdings account "
                      "for?", "And at the end of 2023?")
    assert got[1] == ("What share of Berkshire's equity securities did its five largest holdings account for "
                      "at the end of 2023?")


def test_an_expansion_gives_each_word_its_initial_first() -> None:
    from rag.acronyms import expansion

    text = "Inference-Time Intervention (ITI) shifts model activations during inference."
    assert expansion(text, "ITI") == "Inference-Time Intervention"
    assert expansion("REALM: Retrieval-Augmented Language Model Pre-Training", "REALM") == \
        "Retrieval-Augmented Language Model"


@pytest.mark.parametrize(("question", "kind"), [
    ("Of the units acquired in 2022 and 2023, the largest was Pilot. What was its carrying value?", "number"),
    ("The same NVIDIA group also wrote 'Retrieval meets Long Context Large Language Models'. At which "
     "conference was it published?", "organisation"),
    ("In the REALM paper, what learning rate?", "number"),  # no verb
    ("What total debt principal repayments does Berkshire expect in 2026, in millions?", "number"),
    ("What average improvement does InstructRetro show over its GPT counterpart?", "number"),
])
def test_the_type_is_read_from_the_question_after_a_statement_and_without_a_verb(question: str, kind) -> None:
    assert expected_type(question) == kind


def test_a_date_s_comma_does_not_end_the_phrase_an_ellipsis_replaces(engine) -> None:
    got = ask(engine, "What were Berkshire Hathaway's total assets at December 31, 2024, in millions?",
              "And at December 31, 2023?")
    assert got[1] == "What were Berkshire Hathaway's total assets at December 31, 2023, in millions?"


def test_a_long_question_without_a_verb_after_its_noun_phrase_is_not_a_bare_what_x() -> None:
    assert expected_type("Which environment variable changes the upload size limit?") is None


def test_a_figure_in_scientific_notation_is_a_figure() -> None:
    question = "In the REALM paper, what learning rate?"
    text = "We pre-train with a learning rate of 3e-5."
    assert holds(text, "number", question) == "3e-5"


def test_a_figure_given_for_another_quantity_is_no_answer() -> None:
    question = "In the REALM paper, what learning rate?"
    assert holds("Cloud TPUs, with a batch size of 512 and a learning rate", "number", question) is None
    text = "We train with a batch size of 512 and a learning rate of 3e-5."
    assert holds(text, "number", question) == "3e-5"
    assert holds("The model reaches an accuracy of 0.56.", "number", "What accuracy did it reach?") == "0.56"


def test_a_filing_only_says_where_to_look(engine) -> None:
    got = ask(engine, "According to Berkshire Hathaway's 2024 10-K, how many route miles of trackage rights "
                      "does BNSF operate?", "What were its railroad operating earnings in 2024, in millions?",
              "And its interest expense that year?")
    assert got[1] == "What were BNSF's railroad operating earnings in 2024, in millions?"
    assert got[2] == "What were BNSF's interest expense in 2024, in millions?"  # the year once
    got = ask(engine, "In the 10-K's table of BHE's generating facilities, what is the net owned capacity of "
                      "wind?",
              "How much battery storage capacity do its subsidiaries have under construction?")
    assert got[1] == "How much battery storage capacity do BHE's subsidiaries have under construction?"


def test_and_before_a_framed_whole_question_is_dropped(engine) -> None:
    got = ask(engine, "What pre-tax underwriting earnings did the reinsurance group generate in 2024?",
              "And according to the same summary table, what was the underwriting loss that year?")
    assert got[1] == "According to the same summary table, what was the underwriting loss in 2024?"
