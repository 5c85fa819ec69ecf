"""The lead answers for the question's names; follow-ups that name share classes, cited authors and works."""

import pytest

from rag.answer_types import expected_type
from rag.engines.local import LocalEngine
from rag.engines.passages import _boilerplate, _dangling
from rag.models import Chunk, Turn
from rag.store.bm25 import LexicalStats

BNSF = ("A summary of BNSF’s earnings follows (dollars in millions). "
        "BNSF operates one of the largest railroads.")
TABLE = ("Consolidated Statements of Earnings (dollars in millions)\n"
         "2024 2023 2022\n"
         "Net earnings attributable to Berkshire shareholders 88,995 96,223 (22,759)\n")


@pytest.fixture(scope="module")
def engine():
    texts = [BNSF, TABLE, "BNSF’s net earnings were $5,031 million in 2024.", "Other text about insurance.",
             "How many shares of Class A common stock were outstanding as of February 10, 2025?"]
    return LocalEngine(LexicalStats.from_texts(texts))


def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(id=cid, text=text, source="10k.pdf", page=3, index=7, doc_sha="d")


def test_a_lead_that_is_not_about_the_questions_name_fails_the_answer_check(engine):
    question = "What were BNSF's net earnings in 2024?"
    chunks = [_chunk("t", TABLE), _chunk("b", BNSF)]
    answer = engine.generate(question, chunks)
    lead = answer.text.splitlines()[1]
    assert "Berkshire shareholders" in lead and "BNSF" not in lead  # the table row leads
    grade = engine.grade_answer(question, answer)
    assert not grade.useful
    assert "lead passage is not about the question's name 'BNSF" in grade.reasoning
    right = engine.generate(question, [_chunk("r", "BNSF’s net earnings were $5,031 million in 2024.")])
    assert engine.grade_answer(question, right).useful


def test_lines_cut_out_of_sentences_and_running_heads_are_never_answers():
    assert _dangling("restaurants. McLane’s major customers during 2024 included Walmart")
    assert _dangling("pre-trained sequence-to-sequence transformer with a dense vector index")
    assert not _dangling("Marc D. Hamburg 75 Senior Vice President")
    assert _boilerplate("Published as a conference paper at ICLR 2024 RETRIEVAL MEETS LONG CONTEXT")
    assert not _boilerplate("The paper was published at ICLR 2024.")


def test_a_share_asked_of_a_name_is_a_figure():
    question = "What was GEICO's share of the U.S. private passenger auto insurance market?"
    assert expected_type(question) == "number"


@pytest.mark.parametrize(("history", "question", "standalone"), [
    (["How many shares of Class A common stock were outstanding as of February 10, 2025?"], "And Class B?",
     "How many shares of Class B common stock were outstanding as of February 10, 2025?"),
    (["Which toolkit did Lewis et al. use to train their RAG models?"],
     "On which GPUs did they distribute training?", "On which GPUs did Lewis et al. distribute training?"),
    (["Besides NVIDIA, which institution is one of the InstructRetro authors from?"],
     "At which conference was the paper published?",
     "At which conference was the InstructRetro paper published?"),
    (["How much CPU memory does the document index need for all of Wikipedia?"], "And after compression?",
     "How much CPU memory does the document index need for all of Wikipedia after compression?"),
    (["Now about the RAG survey: what framework is Naive RAG also characterized as?"],
     "What are the three quality scores it lists?",
     "What are the three quality scores the RAG survey lists?"),
    (["How many tokens was GPT-43B trained on in the Retrieval meets Long Context LLMs paper?"],
     "How about the second model?",  # the named subject is the slot of a noun phrase (round 7)
     "How many tokens was the second model trained on in the Retrieval meets Long Context LLMs paper?"),
])
def test_follow_ups_name_what_the_conversation_named(engine, history, question, standalone):
    turns = [Turn(question=q) for q in history]
    assert engine.contextualize(question, turns).question == standalone


def test_a_sentence_opener_is_no_part_of_a_name():
    from rag.engines.lexical import entities
    assert entities("Besides NVIDIA, which institution is one of the authors from?") == ["NVIDIA"]
    assert "Switching" not in " ".join(entities("Switching topics: who wrote REALM?"))


def test_a_long_name_is_held_only_with_every_word_together():
    from rag.engines.lexical import constraints
    from rag.text import terms
    (name,) = [c for c in constraints("What were Berkshire Hathaway Energy's total revenues in 2024?")
               if c.kind == "entity"]
    apart = terms("BERKSHIRE HATHAWAY INC. and Subsidiaries CONSOLIDATED STATEMENTS OF EARNINGS Revenues "
                  "Insurance premiums earned Sales and service revenues Leasing revenues Interest dividend "
                  "income Railroad Utilities and Energy")
    assert name.held_in(apart)  # the slack a long name gets when grading
    assert not name.held_whole(apart)  # not enough for the lead to be about it
    assert name.held_whole(terms("Berkshire Hathaway Energy Company's revenues rose"))


def test_a_reference_list_entry_is_boilerplate():
    assert _boilerplate("Johnson, J., Douze, M., and Jégou, H. Billion-scale similarity search with GPUs.")
    assert not _boilerplate("Smith, the CEO, said revenue grew.")


def test_the_authors_of_a_paper_are_one_hop_away():
    from rag.engines.decomposition import _bridge_signal, multi_hop
    assert _bridge_signal("Which company are the authors of In-Context RALM from?") is None
    assert _bridge_signal("Who are the authors of the REALM paper?") is None
    assert _bridge_signal("Who is the director of the film that won Best Picture in 1998?") is not None
    assert multi_hop("Were Scott Derrickson and Ed Wood of the same nationality?")


def test_a_table_row_must_name_the_question_itself(engine):
    question = "What were BNSF's net earnings in 2024?"
    segments = ("Net earnings by segment (dollars in millions)\n2024 2023 2022\n"
                "Insurance – underwriting 9,020 5,428 (30)\nBNSF 5,031 5,087 5,946\n"
                "Net earnings attributable to Berkshire shareholders 88,995 96,223 (22,759)\n")
    answer = engine.generate(question, [_chunk("s", segments)])
    lead = answer.text.splitlines()[1]
    grade = engine.grade_answer(question, answer)
    assert ("BNSF" in lead) == grade.useful, (lead, grade.reasoning)


def test_it_is_not_a_name_the_question_already_gave(engine):
    audited = Turn(question="Which company audits Berkshire's financial statements?",
                   answer="Extractive answer from the offline engine (quoted passages, not generated):\n"
                          "We have audited the consolidated financial statements of Berkshire Hathaway Inc. "
                          "and subsidiaries [1]")
    out = engine.contextualize("Since what year has it audited them?", [audited]).question
    assert "Berkshire Hathaway Inc" not in out, out
    named = Turn(question="Which company audits Berkshire's financial statements?",
                 answer="Extractive answer from the offline engine (quoted passages, not generated):\n"
                        "Deloitte & Touche LLP has audited the financial statements since 1985. [1]")
    assert "Deloitte" in engine.contextualize("Since what year has it audited them?", [named]).question
