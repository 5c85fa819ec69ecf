"""Round 7 rules: framing phrases, "how large", years in chains, cut starts, acronyms, counted nouns."""

import pytest

from rag.acronyms import expansion
from rag.answer_spans import holds
from rag.answer_types import cue_words, expected_type, main_clause
from rag.engines.cited import EXTRACTIVE_LABEL
from rag.engines.decomposition import _bridge_signal
from rag.engines.local import LocalEngine
from rag.models import Chunk
from rag.store.bm25 import LexicalStats


@pytest.mark.parametrize(("question", "clause", "kind"), [
    ("In the Lost in the Middle paper, how many queries are used?", "How many queries are used?", "number"),
    ("In total, how much debt does Berkshire expect to repay in 2025?",
     "How much debt does Berkshire expect to repay in 2025?", "number"),
    ("Different paper: how many instruction-output pairs train Self-RAG?",
     "How many instruction-output pairs train Self-RAG?", "number"),
    ("In the survey, what does CoVe stand for?", "What does CoVe stand for?", "acronym"),
])
def test_a_framing_phrase_does_not_hide_the_kind_of_answer_asked_for(question, clause, kind):
    assert main_clause(question) == clause
    assert expected_type(question) == kind


def test_a_clause_with_a_question_word_is_no_frame():
    # the first clause is the question; "Thanks!" ends with no comma or colon
    assert main_clause("What is X, and how many Y are there?") == "What is X, and how many Y are there?"
    assert expected_type("What is dense passage retrieval, in short?") == "definition"
    assert main_clause("With In-Context RALM, a 6.7B model matches a larger one.") == \
        "With In-Context RALM, a 6.7B model matches a larger one."


def test_the_adjective_of_how_large_is_a_cue_not_a_word_the_passage_must_hold():
    assert "large" in cue_words("How large was Berkshire's insurance float at the end of 2024?")
    assert "old" in cue_words("How old is the company?")
    assert cue_words("What is the large model's accuracy?") == frozenset()  # no "how": a content word


def test_the_end_of_a_year_is_a_time_not_a_chain_of_entities():
    assert _bridge_signal("How large was Berkshire Hathaway's insurance float at the end of 2024?") is None
    assert _bridge_signal("What were the net earnings at the end of 2023 and 2024?") is None
    assert _bridge_signal("Which actor starred in the sequel of 2012 film Argo?") is not None


def test_a_year_is_no_second_constraint_of_a_long_question():
    engine = LocalEngine(LexicalStats.from_texts(["Service group revenues were $20.7 billion in 2024.",
                                                  "Berkshire Hathaway owns many businesses.", "other"]))
    chunk = Chunk(id="b-00003", text="Service group revenues were $20.7 billion in 2024.", source="10k.pdf",
                  page=52, index=3)
    got = engine.decompose("What were the revenues of Berkshire Hathaway's service group in 2024?", [chunk])
    assert got.kind == "single"


CUT = ("The model inputs are a question and k documents. To collect k − 1 distractor documents that do not "
       "contain the answer, we use a retrieval system (Contriever, fine-tuned on MS-MARCO; Izacard et al., "
       "2021) to retrieve the k − 1 Wikipedia chunks that")


def test_the_start_of_a_sentence_cut_by_the_chunk_end_is_quoted_with_an_ellipsis():
    engine = LocalEngine(LexicalStats.from_texts([CUT, "Wikipedia chunks", "retrieval system", "other"]))
    chunk = Chunk(id="l-00004", text=CUT, source="lost.pdf", page=3, index=4)
    lines = engine.generate("Which retrieval system is used to collect the distractor documents?",
                            [chunk]).text.splitlines()
    assert lines[0] == EXTRACTIVE_LABEL
    assert lines[1].startswith("To collect k − 1 distractor documents")
    assert "Wikipedia chunks …" in lines[1] and "chunks that" not in lines[1]  # ends on a word, then "…"


def test_a_short_cut_start_or_a_code_line_is_not_quoted():
    short = "The model inputs are a question and k documents. To collect the distractors we use"
    engine = LocalEngine(LexicalStats.from_texts([short, "other"]))
    chunk = Chunk(id="l-00005", text=short, source="lost.pdf", page=3, index=5)
    found = engine._candidates("How are the distractors collected?", [chunk])
    passages = [p.text for p in found if not p.fragment]
    assert passages and not any(p.startswith("To collect") for p in passages)
    # since round 9 it is kept as a piece of a sentence: Full's lead of last resort only
    assert [p.text for p in found if p.fragment] == ["To collect the distractors …"]
    code = ("Install the client first. Then run chroma run --path /data/chroma --port 8000 and the server "
            "prints the address it listens on before it")
    coder = LocalEngine(LexicalStats.from_texts([code, "other"]))
    passages = [p.text for p in coder._candidates("Which port does the server listen on?",
                                                  [Chunk(id="d-00002", text=code, source="d.md", index=2)])]
    assert not any(p.startswith("Then run chroma") for p in passages)  # not even as a piece


@pytest.mark.parametrize(("text", "acronym", "spelled"), [
    ("Chain-of-Verification (CoVe): (Dhuliawala et al., 2023) develop the CoVe method.", "CoVe",
     "Chain-of-Verification"),
    ("employing sub-queries and hypothetical document embeddings (HyDE) [11] seeks to improve retrieval",
     "HyDE", "hypothetical document embeddings"),
    ("We pre-train Retrieval-Augmented Language Model (REALM) on Wikipedia.", "REALM",
     "Retrieval-Augmented Language Model"),
])
def test_an_expansion_is_found_in_hyphen_pieces_and_in_lower_case_before_the_acronym(text, acronym, spelled):
    assert expansion(text, acronym) == spelled


def test_a_word_that_starts_with_the_acronym_is_no_expansion_of_it():
    assert expansion("We use DPR-based retrievers throughout.", "DPR") is None
    assert expansion("the hypothetical embeddings are HyDE", "HyDE") is None  # no parentheses, no capital


def test_an_acronym_s_expansion_needs_no_words_of_where_the_question_looks():
    text = "Chain-of-Verification (CoVe): (Dhuliawala et al., 2023) develop the CoVe method."
    question = "In the hallucination mitigation survey, what does CoVe stand for?"
    assert holds(text, "acronym", question, None, {"hallucin": 3.0, "mitig": 3.0, "survey": 2.0}) == \
        "Chain-of-Verification"


def test_a_figure_followed_by_the_counted_noun_answers_how_many_without_other_words_near_it():
    text = ("We then split each article into disjoint text blocks of 100 words as passages, following "
            "(Wang et al., 2019), which results in 21,015,324 passages in the end.")
    question = "How many passages are in the Wikipedia corpus used in the DPR paper?"
    predicate = {"wikipedia": 2.0, "corpus": 3.0, "passag": 2.0}
    assert holds(text, "number", question, None, predicate) == "21,015,324"  # not "100" (it counts words)
    assert holds("The corpus has 100 words per block.", "number", question, None, predicate) is None


@pytest.mark.parametrize(("question", "kind"), [
    ("What closed-book accuracy did GPT-3.5-Turbo get on the multi-document QA task?", "number"),
    ("What exact match score does RAG-Sequence get on Natural Questions?", "number"),
    ("What interest rate does the loan carry?", "number"),
    ("What revenue recognition method does Berkshire use?", None),  # the noun phrase ends on "method"
    ("What does the company do?", None),
])
def test_a_noun_phrase_that_ends_on_a_quantity_asks_for_a_figure(question, kind):
    assert expected_type(question) == kind
