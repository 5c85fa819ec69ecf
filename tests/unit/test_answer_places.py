"""Place answers and a form's value above its caption (issue 19: answers of the type asked for)."""

from rag.answer_spans import holds
from rag.answer_types import expected_type
from rag.engines.passages import _labelled
from rag.places import asks_region, place_names

STATE_Q = "In which state is Berkshire Hathaway incorporated?"
COVER = ("Delaware 47-0813844 State or other jurisdiction of incorporation or organization "
         "(I.R.S. Employer Identification No.)")


def test_a_state_is_a_place_without_a_preposition():
    assert expected_type(STATE_Q) == "place"
    assert holds(COVER, "place", STATE_Q, None, None) == "Delaware"


def test_a_filing_name_after_in_is_no_place():
    text = "We consent to the incorporation by reference in Registration Statement No. 333-284622 on Form S-3"
    assert holds(text, "place", STATE_Q, None, None) is None
    assert holds(text, "place", "Where is the consent filed?", None, None) is None


def test_a_state_inside_a_longer_name_is_no_place():
    assert place_names("The Bank of New York Mellon Trust Company, as trustee") == []
    assert place_names("The Washington Post reported it") == []
    assert place_names("3555 Farnam Street, Omaha, Nebraska 68131") == ["Nebraska"]


def test_which_state_takes_only_a_region():
    assert asks_region(STATE_Q) and asks_region("Which country is it based in?")
    assert not asks_region("Which city hosts it?")
    # a city after "in" answers "where", but not "which state"
    where = "Where is BNSF headquartered?"
    assert holds("Its headquarters is in Omaha.", "place", where, None, None) == "Omaha"
    assert holds("Its headquarters is in Omaha.", "place", "In which state is BNSF headquartered?",
                 None, None) is None


def test_a_value_line_is_read_with_its_parenthesised_caption():
    lines = ["BERKSHIRE HATHAWAY INC.", "(Exact name of Registrant as specified in its charter)",
             "Delaware 47-0813844", "State or other jurisdiction of", "incorporation or organization",
             "(I.R.S. Employer", "Identification No.)", "3555 Farnam Street, Omaha, Nebraska 68131"]
    assert _labelled(lines, 2)[-1] == COVER
    # prose lines under a heading have no parenthesised caption: nothing is glued
    prose = ["2.1 Experimental Setup", "In the multi-document question answering task, the model",
             "inputs are a question to answer and k documents", "where exactly one holds the answer"]
    assert _labelled(prose, 0) == []


def test_a_figure_with_its_own_plural_noun_counts_that_noun():
    q = "How many queries does the MultiHop-RAG benchmark contain?"
    assert holds("MultiHopRAG contains four types of multi-hop queries.", "number", q, None, {}) is None
    assert holds("The MultiHop-RAG benchmark contains 2,556 queries.", "number", q, None, {}) == "2,556"
    miles = "About how many miles of natural gas pipelines does its system consist of?"
    assert holds("a system of approximately 14,200 miles of natural gas pipelines", "number", miles, None,
                 {}) == "14,200"


def test_an_author_lines_affiliation_marks_become_commas():
    from rag.engines.passages import _quotable, without_marks
    line = "Nelson F. Liu1∗ Kevin Lin2 John Hewitt1 Ashwin Paranjape3"
    assert without_marks(line) == "Nelson F. Liu, Kevin Lin, John Hewitt, Ashwin Paranjape"
    assert _quotable(f"Lost in the Middle {line}").endswith("Kevin Lin, John Hewitt, Ashwin Paranjape")
    assert without_marks("We fine-tune Llama2 on it.") == "We fine-tune Llama2 on it."


def test_the_grader_reads_a_marked_name_as_the_name():
    from rag.engines.local import LocalEngine
    from rag.models import Chunk
    from rag.store.bm25 import LexicalStats
    front = Chunk(id="a-00000", text="Lost in the Middle\nNelson F. Liu1∗ Kevin Lin2 John Hewitt1\n"
                  "1Stanford University 2University of California, Berkeley", source="p.pdf", page=1)
    other = "Retrieval helps language models answer questions about long documents."
    engine = LocalEngine(LexicalStats.from_texts([front.text, other, other]))
    grade = engine.grade("Which university is Kevin Lin at?", [front])[0]
    assert grade.relevant, grade.reasoning


def test_a_table_with_change_columns_is_read_with_its_captions_owner():
    from rag.engines.tables import table_rows
    text = ("Burlington Northern Santa Fe, LLC (“BNSF”) operates a large railroad system. A summary\n"
            "of BNSF’s earnings follows (dollars in millions).\nPercentage Change\n"
            "2024 2023 2022 2024 vs 2023 2023 vs 2022\n"
            "Railroad operating revenues $ 23,355 $ 23,474 $ 25,203 (0.5 )% (6.9 )%\n"
            "Net earnings $ 5,031 $ 5,087 $ 5,946 (1.1 ) (14.4 )")
    rows = [r for r, _ in table_rows(text, "What were BNSF's net earnings in 2022?")]
    assert rows[1] == "BNSF’s net earnings, 2022: $5,946 million (2024: $5,031 million; 2023: $5,087 million)"
    assert all("%" not in r for r in rows)  # the change columns are no year's figure
