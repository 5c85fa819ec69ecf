"""Round 24 (issue 19): the chunks that hold an answer first, ellipses of line items, rows told by group.

An ellipsis fills a line item or a name, a results table's rows are told apart by their group captions, and a
figure that counts something else or names a model's size is no score.

Chosen on the odd-numbered retrace-dev sets and five new sets (27, 29-32), reported on the even-numbered ones,
dev33 and dev34 (README, "Round 24").
"""

from __future__ import annotations

from rag.answer_spans import holds
from rag.answer_types import expected_type
from rag.counted import counts_other
from rag.engines.base import RelevanceGrade
from rag.engines.benchmarks import benchmark_cells
from rag.engines.item_slots import without_anaphora
from rag.engines.rows import group_fit, row_match
from rag.graph.corrections import seek_order
from rag.models import Chunk
from tests.unit.conversation import ask, engine_over

E2E_TABLE = ("Training Model NQ TriviaQA WQ TREC SQuAD\n"
             "Single ORQA (Lee et al., 2019) 33.3 45.0 36.4 30.1 20.2\n"
             "Single\nBM25 32.6 52.4 29.9 24.9 38.1\nDPR 41.5 56.8 34.6 25.9 29.8\n"
             "BM25+DPR 39.0 57.0 35.2 28.0 36.7\n"
             "Multi DPR 41.5 56.8 42.4 49.4 24.1\nBM25+DPR 38.8 57.9 41.1 50.6 35.8\n"
             "Table 4: End-to-end QA (Exact Match) Accuracy.")
"""A results table in the layout of DPR's Table 4 (figures changed): a group's name opens its first row, or
stands on a line of its own."""
GROUPED = ("PopQA TQA Pub ARC\nLM (acc) (acc) (acc) (acc)\nLMs with proprietary data\n"
           "ChatGPT 29.3 74.3 70.1 75.3\nBaselines without retrieval\n"
           "Llama27B 14.7 30.5 34.2 21.8\nAlpaca13B 24.4 61.3 55.5 54.9\n"
           "Baselines with retrieval\nLlama27B 38.2 42.5 30.0 48.0\nAlpaca13B 46.1 66.9 51.1 57.6\n"
           "Our SELF-RAG 7B 54.9 66.4 72.4 67.3")
"""A results table in Self-RAG's layout: group captions on lines of their own, a model's size glued to its
name."""
PROSE = ("BM25+DPR ranks by a linear combination of the BM25 and the DPR scores; we compare BM25+DPR "
         "trained on a single dataset with the other retrievers on SQuAD by exact match.")


def _chunk(index: int, text: str) -> Chunk:
    return Chunk(id=f"c{index}", text=text, source="dpr.pdf", page=8, index=index, doc_sha="0" * 64)


def test_the_chunk_that_holds_the_answer_is_the_next_candidate():
    engine = engine_over(E2E_TABLE, PROSE)
    question = "What end-to-end exact match does BM25+DPR trained on a single dataset reach on SQuAD?"
    prose, table = _chunk(0, PROSE), _chunk(1, E2E_TABLE)
    assert not engine.holds_answer(question, prose)  # the question's words, but no figure of it
    assert engine.holds_answer(question, table)
    assert not engine.holds_answer("Who wrote the DPR paper?", table)  # no name in it
    graded = {"c0": RelevanceGrade(relevant=True, score="high", reasoning=""),
              "c1": RelevanceGrade(relevant=True, score="medium", reasoning="")}
    # before: the prose first, for it graded "high"; the table that names its columns by short forms second
    assert [c.id for c in seek_order(engine, question, [prose, table], graded)] == ["c1", "c0"]
    # no chunk holds an answer: those graded "high" first, otherwise in retrieval order
    assert [c.id for c in seek_order(engine, "Who wrote it?", [table, prose], graded)] == ["c0", "c1"]


def test_a_row_is_told_apart_by_the_group_its_block_opens_with():
    asked = "What end-to-end exact match does BM25+DPR trained on a single dataset reach on SQuAD?"
    assert benchmark_cells(E2E_TABLE, asked)[0][0] == "BM25+DPR (under Single), SQuAD: 36.7"
    asked = "What exact match does BM25+DPR trained on multiple datasets reach on TREC?"
    assert benchmark_cells(E2E_TABLE, asked)[0][0] == "BM25+DPR (under Multi), TREC: 50.6"
    # two rows of the same name and no group named: no cell, rather than the first
    assert benchmark_cells(E2E_TABLE, "What exact match does BM25+DPR reach on TREC?") == []


def test_a_group_caption_on_a_line_of_its_own_and_a_glued_size():
    without = "What PopQA accuracy does Alpaca 13B get without retrieval?"
    assert [c for c, _ in benchmark_cells(GROUPED, without)] == [
        "Alpaca13B (under Baselines without retrieval), PopQA (acc): 24.4"]
    with_ = "What PopQA accuracy does Alpaca 13B get with retrieval?"
    assert [c for c, _ in benchmark_cells(GROUPED, with_)] == [
        "Alpaca13B (under Baselines with retrieval), PopQA (acc): 46.1"]
    # "Alpaca13B" is "Alpaca 13B"; "with" is no "without"
    assert row_match("Alpaca13B", without) == (1, True)
    assert group_fit("Baselines without retrieval", without) > 0
    assert group_fit("Baselines with retrieval", without) == 0


def test_a_figure_that_counts_other_things_is_no_score():
    question = "What citation precision does Self-RAG 7B reach on ASQA?"
    text = "We train on 150k training instances; Self-RAG reaches a citation precision of 66.9 on ASQA."
    assert counts_other(text, "150k", question)
    assert not counts_other(text, "66.9", question)
    # a "how many" question counts things: the noun is checked elsewhere
    assert not counts_other(text, "150k", "How many training instances reach a citation precision?")
    # a question about no score or rate
    assert not counts_other(text, "150k", "What data does Self-RAG train on?")


def test_a_models_size_is_no_figure_unless_its_size_is_asked():
    question = "What PopQA accuracy does Alpaca 13B get?"
    assert holds("Alpaca 13B is one of the baselines.", "number", question, None, None, None) is None
    assert holds("Alpaca 13B reaches 24.4 accuracy on PopQA.", "number", question, None, None, None) == "24.4"
    asked = "How many parameters does the large model have?"
    assert holds("The large model has 13B parameters.", "number", asked, None, None, None) == "13B"


def test_how_does_a_model_do_asks_for_a_figure():
    assert expected_type("How does T5-11B+SSM do on WebQuestions?") == "number"
    assert expected_type("How does RAG-Token fare there?") == "number"
    assert expected_type("What exact match does T5-11B+SSM reach on NQ?") == "number"
    assert expected_type("How does BM25 work?") is None  # a how-question, no figure


def test_an_ellipsis_fills_the_previous_questions_line_item():
    engine = engine_over("Trademarks and trade names 2,061", "Long-duration insurance contracts (1,210)")
    first = ("Per Berkshire Hathaway's 2024 10-K, what was the net carrying value of the insurance and other "
             "businesses' trademarks and trade names at year-end 2024, in millions?")
    # before: "What about patents and technology of …?"
    assert ask(engine, first, "And patents and technology?")[1] == (
        "Per Berkshire Hathaway's 2024 10-K, what was the net carrying value of the insurance and other "
        "businesses' patents and technology at year-end 2024, in millions?")
    first = ("In the accumulated other comprehensive income table, what after-tax balance did defined "
             "benefit pension plans carry at the end of 2024, in millions?")
    assert ask(engine, first, "And long-duration insurance contracts?")[1] == (
        "In the accumulated other comprehensive income table, what after-tax balance did long-duration "
        "insurance contracts carry at the end of 2024, in millions?")
    first = "In the inventories note, how much were raw materials worth at year-end 2024, in millions?"
    assert ask(engine, first, "And finished manufactured goods?")[1] == (
        "In the inventories note, how much were finished manufactured goods worth at year-end 2024, in "
        "millions?")
    first = ("Looking at the Self-RAG paper's overall results across the six tasks, how accurate is the 7B "
             "model on PopQA?")
    assert ask(engine, first, "And the retrieval-augmented Alpaca 7B baseline?")[1] == (
        "Looking at the Self-RAG paper's overall results across the six tasks, how accurate is the "
        "retrieval-augmented Alpaca 7B baseline on PopQA?")


def test_an_ellipsis_fills_the_name_a_question_ends_on_or_its_opposite():
    engine = engine_over("FactScore Ret-Llama2-c13B 78.6 ChatGPT 71.8")
    first = "Self-RAG paper, Table 2: which FactScore on biographies is reported for Ret-Llama2-c13B?"
    assert ask(engine, first, "And ChatGPT without retrieval?")[1] == (
        "Self-RAG paper, Table 2: which FactScore on biographies is reported for ChatGPT without retrieval?")
    first = "Switching to the Self-RAG paper: what PopQA accuracy does Alpaca 13B get without retrieval?"
    assert ask(engine, first, "And with retrieval?")[1] == (
        "Switching to the Self-RAG paper: what PopQA accuracy does Alpaca 13B get with retrieval?")


def test_words_that_point_back_at_the_frame_go():
    assert without_anaphora("the ORQA baseline's exact match there") == "the ORQA baseline's exact match"
    assert without_anaphora("BM25 in the same table") == "BM25"
    assert without_anaphora("there") == "there"  # nothing would be left
    engine = engine_over("REALM 38.2 ORQA 33.3")
    first = ("In the REALM paper's ablation on the NaturalQuestions development set, what exact match does "
             "the full REALM model reach?")
    assert ask(engine, first, "How about the ORQA baseline's exact match there?")[1] == (
        "In the REALM paper's ablation on the NaturalQuestions development set, what is the ORQA baseline's "
        "exact match?")


def test_a_margin_of_points_a_section_sign_and_a_section_number_are_no_score():
    question = "What Rouge-L does RAG-Token get on MS-MARCO?"
    margin = "RAG-Sequence outperforms BART on Open MS-MARCO NLG by 2.6 Bleu points and 2.6 Rouge-L points."
    assert holds(margin, "number", question, None, None, None) is None
    plain = "RAG-Token reaches 40.1 Rouge-L on MS-MARCO."
    assert holds(plain, "number", question, None, None, None) == "40.1"
    # a question about points takes them
    asked = "How many points does the model score on NQ?"
    assert holds("The model scores 44.5 points on NQ.", "number", asked, None, None, None) == "44.5"
    headed = ("BART generations (see §4.5). 4.3 Jeopardy Question Generation Table 2 shows that RAG-Token "
              "performs better than RAG-Sequence on Jeopardy question generation.")
    assert holds(headed, "number", "What Q-BLEU-1 does RAG-Sequence get on Jeopardy question generation?",
                 None, None, None) is None


def test_how_does_a_name_do_there_asks_the_previous_question_of_that_name():
    engine = engine_over("FEVER-2 label accuracy BART 81.1 RAG-Token 89.5")
    first = ("In the Lewis et al. RAG paper's generation and classification table, what FEVER-2 label "
             "accuracy does the state of the art reach?")
    assert ask(engine, first, "How does BART on its own do there?")[1] == (
        "In the Lewis et al. RAG paper's generation and classification table, what FEVER-2 label accuracy "
        "does BART on its own reach?")
    assert ask(engine, "What exact match does REALM reach on NQ?", "How does ORQA do there?")[1] == \
        "What exact match does ORQA reach on NQ?"
    # "how does X work" asks something else: it stands alone
    assert ask(engine, "What exact match does REALM reach on NQ?", "How does ORQA work?")[1] == \
        "How does ORQA work?"


def test_the_noun_after_when_is_the_questions_own():
    engine = engine_over("RAG-Token frozen retriever 37.8 T5-11B+SSM 36.6")
    asked = "In the dev-set ablations, what NQ exact match does RAG-Token get when the retriever is frozen?"
    got = ask(engine, "In the Lewis et al. RAG paper, what TriviaQA exact match is listed for DPR?",
              "And what does T5-11B+SSM score on WebQuestions?", asked)
    assert got[2] == asked  # before: "… when the T5-11B+SSM retriever is frozen?"


def test_a_row_the_question_names_more_of_wins_over_the_part_of_it():
    asked = "What end-to-end exact match does DPR trained on multiple datasets reach on TREC?"
    assert [c for c, _ in benchmark_cells(E2E_TABLE, asked)] == ["Multi DPR, TREC: 49.4"]
    # the plain name: both rows, the table does not say which is meant
    assert len(benchmark_cells(E2E_TABLE, "What end-to-end exact match does DPR reach on TREC?")) == 2
