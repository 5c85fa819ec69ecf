"""An unresolved "he" cannot be checked; a capitals heading is no answer; "In which city?" is an ellipsis."""

from rag.engines.base import Answer, AnswerCitation
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.local import LocalEngine
from rag.engines.passages import _boilerplate
from rag.engines.phrases import _is_fragment
from rag.engines.slots import fill_slot
from rag.store.bm25 import LexicalStats


def _answer(text: str) -> Answer:
    return Answer(text=f"{EXTRACTIVE_LABEL}\n{text} [1]",
                  citations=[AnswerCitation(n=1, chunk_id="d-00001")])


def test_a_question_about_an_unnamed_person_is_never_a_clean_answer():
    engine = LocalEngine(LexicalStats.from_texts(["Theodor Haecker was 65 years old", "Greg Abel is 62"]))
    grade = engine.grade_answer("How old is he?", _answer("Theodor Haecker was 65 years old."))
    assert not grade.useful and "does not name" in grade.reasoning
    named = engine.grade_answer("How old is Greg Abel?", _answer("Greg Abel is 62 years old."))
    assert "does not name" not in named.reasoning


def test_a_heading_in_capitals_is_boilerplate_but_a_table_row_is_not():
    assert _boilerplate("RETRIEVAL MEETS LONG CONTEXT LARGE LANGUAGE")
    assert not _boilerplate("GEICO 42,916 39,837 NA")
    assert not _boilerplate("Retrieval meets long context large language models.")


def test_a_question_word_phrase_without_a_verb_replaces_the_previous_one():
    assert _is_fragment("In which city")
    assert not _is_fragment("In which state is it based")
    prev = "At which conference was the InstructRetro paper published"
    out, how = fill_slot("in which city", prev, None)
    assert out == "In which city was the InstructRetro paper published"
    assert "At which conference" in how
    assert fill_slot("in which city", "Where is GEICO headquartered", None)[0] == \
        "In which city is GEICO headquartered"


def test_a_document_the_question_names_is_no_hop_of_a_long_question():
    from rag.engines.lexical import constraints, work_terms

    q = "On which GPUs did Lewis et al. distribute training?"
    engine = LocalEngine(LexicalStats.from_texts(["Lewis et al. train on GPUs", "distributed training"]))
    plan = engine.decompose(q, [])
    assert plan.kind == "single" and not plan.sub_questions
    assert plan.reasoning.startswith("Single-hop")  # not "Looks multi-hop (a long question …)"
    # the document's name is not counted among the question's constraints for a hop
    named = "What is the Retrieval meets Long Context paper's output?"
    assert {"meet", "long", "context"} <= work_terms(named)
    assert [c.text for c in constraints(q)] == ["GPUs", "Lewis"]
