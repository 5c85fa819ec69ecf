"""Figures, counted nouns, acronyms, cue words and affiliations: the spans a typed answer is read from."""

import pytest

from rag.acronyms import acronym_of, expansion
from rag.answer_spans import _spans, holds, institutions
from rag.answer_types import affiliation, counted_noun, cue_words, expected_type

HOW_MANY = "How many parameters does the model have?"


@pytest.mark.parametrize(("text", "figure"), [
    ("The model was trained for 150k steps.", "150k"),
    ("Our largest model has 7.5B parameters.", "7.5B"),
    ("The small variant has 400M parameters.", "400M"),
])
def test_a_figure_keeps_its_scale_letter(text, figure):
    assert _spans(text, "number", HOW_MANY, None) == [figure]


@pytest.mark.parametrize("text", [
    "Table 1 compares the retrievers.",
    "Section 5 describes the setup.",
    "see Table 12 for the full results",
])
def test_a_number_that_labels_a_part_of_the_document_is_no_figure(text):
    assert _spans(text, "number", HOW_MANY, None) == []


def test_a_heading_number_at_the_start_is_no_figure():
    assert _spans("5 Experiments: We evaluate on our tasks.", "number", HOW_MANY, None) == []
    assert _spans("3.2 Training Details", "number", HOW_MANY, None) == []
    # the same number inside running text is a figure
    assert _spans("We evaluate on 5 tasks.", "number", HOW_MANY, None) == ["5"]


def test_a_percentage_answers_what_share_but_not_how_many():
    text = "Berkshire owned 27% of the outstanding shares."
    assert _spans(text, "number", "How many shares did Berkshire own?", None) == []
    assert _spans(text, "number", "What share of the stock did Berkshire own?", None) == ["27%"]


def test_counted_noun_is_the_plural_a_how_many_question_counts():
    assert counted_noun("About how many miles of natural gas pipelines does Northern Natural's system "
                        "consist of?") == "mile"
    assert counted_noun("How many coal cars/units does BNSF operate?") is None
    assert counted_noun("How many instruction-output pairs do Self-RAG's authors train on?") == "pair"
    assert counted_noun("What were Berkshire's net earnings?") is None


def test_a_how_many_figure_must_count_the_noun_asked_about():
    q = "About how many miles of natural gas pipelines does Northern Natural's system consist of?"
    text = "Northern Natural operates five pipeline systems, with 14,200 miles of natural gas pipelines."
    assert holds(text, "number", q, None, {}) == "14,200"
    # without a predicate (an assembled table row) the counted noun is not asked for: the first figure
    assert holds(text, "number", q, None, None) == "five"
    assert holds("Northern Natural operates five pipeline systems.", "number", q, None, {}) is None


@pytest.mark.parametrize(("question", "kind"), [
    ("What is Berkshire Hathaway's telephone number?", "number"),
    ("What was BNSF's effective income tax rate in 2024?", "number"),
    ("What is the default chunk overlap, in characters?", None),
    ("In how many countries does Jazwares sell its products?", "number"),
])
def test_expected_type_of_figures_and_defaults(question, kind):
    assert expected_type(question) == kind


def test_which_option_limits_how_many_asks_for_no_figure():
    kind = expected_type("Which option limits how many query rewrites one run may make?")
    assert kind != "number"
    assert kind is None


def test_acronym_of_reads_the_capitalised_or_quoted_word():
    assert acronym_of("What does Self-RAG stand for?") == "Self-RAG"
    assert acronym_of("What does ip stand for?") == "ip"
    assert acronym_of("How is the retriever trained?") is None


def test_expansion_follows_a_lower_case_acronym_in_parentheses():
    assert expansion("The metric is one of `l2`, `cosine` and `ip` (inner product).", "ip") == "inner product"
    assert expansion("The metric is `ip` (see below).", "ip") is None


def test_expansion_of_a_hyphenated_acronym():
    text = "We introduce Self-Reflective Retrieval-Augmented Generation (SELF-RAG), a new framework."
    assert expansion(text, "Self-RAG") == "Self-Reflective Retrieval-Augmented Generation"


def test_cue_words_name_only_the_answer_type():
    assert cue_words("How many people do Berkshire's subsidiaries employ?") == {"many"}
    pairs = "How many instruction-output pairs do Self-RAG's authors train on?"
    assert cue_words(pairs) == {"many", "authors"}
    counted = cue_words("How many authors does the paper have?")
    assert "authors" not in counted and "many" in counted


@pytest.mark.parametrize(("question", "where"), [
    ("Which company are the authors of In-Context RALM from?", "organisation"),
    ("Which university are most of the FLARE authors from?", "university"),
    ("Which lab are they affiliated with?", "organisation"),
    ("Which company audits Berkshire?", None),
    ("Who are the FLARE authors?", None),
])
def test_affiliation_questions_ask_where_authors_work(question, where):
    assert affiliation(question) == where


def test_an_affiliation_question_names_its_type_in_its_cue_words():
    assert "university" in cue_words("Which university are most of the FLARE authors from?")
    assert "company" not in cue_words("Which company audits Berkshire?")


FLARE = ("Zhengbao Jiang1∗ Graham Neubig1 1Language Technologies Institute, Carnegie Mellon University "
         "2Sea AI Lab 3FAIR, Meta")


def test_institutions_of_a_front_matter():
    assert "Carnegie Mellon University" in institutions(FLARE)
    universities = institutions(FLARE, university=True)
    assert universities and "University" in universities[0]
    assert institutions("1Google Research") == ["Google Research"]


def test_a_university_question_lists_universities_before_institutes():
    text = "1Shanghai Research Institute for Intelligent Autonomous Systems, 2Tongji University"
    found = institutions(text, university=True)
    assert found[0] == "Tongji University"
    assert any("Institute" in name for name in found[1:])
    # without ``university`` they keep the order of the text
    assert institutions(text).index("Tongji University") > 0


def test_an_affiliation_question_reads_the_institution_not_a_name():
    q = "Which university are most of the FLARE authors from?"
    assert holds(FLARE, "organisation", q, None, {"flare": 1.0}) == "Carnegie Mellon University"


def test_a_figure_followed_by_its_own_plural_noun_counts_that_noun():
    q = "How many travel centers does Pilot operate?"
    wrong = ("Pilot operates travel centers and fuel-only retail locations across the U.S. and in five "
             "Canadian provinces, primarily under the names Pilot or Flying J.")
    assert holds(wrong, "number", q, None, {}) is None
    right = "Pilot operates 677 travel center and 77 fuel-only retail locations across the U.S."
    assert holds(right, "number", q, None, {}) == "677"
    # a figure after the noun, with no noun of its own, still counts it
    after = "The number of travel centers Pilot operates was 677 in 2024."
    assert holds(after, "number", q, None, {}) == "677"
