"""Round 20 (issue 19): Full's last resort for a figure quotes the row the question names most, and a results
table's column group goes with its cell."""

from __future__ import annotations

from rag.engines.benchmarks import benchmark_cells
from rag.engines.local import LocalEngine
from rag.engines.lexical import constraints
from rag.models import Chunk
from rag.store.bm25 import LexicalStats

FILLER = "The group reported its results for the year in the tables that follow, with notes on each segment. "


def _row(question: str, *texts: str) -> str | None:
    engine = LocalEngine(LexicalStats.from_texts([*texts, *[FILLER] * 30]))
    chunks = [Chunk(id=f"c{i}", text=t, source="10k.pdf", page=i + 1) for i, t in enumerate(texts)]
    cons = constraints(question)
    row = engine._figure_row(question, chunks, lambda p: p.held_share(cons))
    return row.text if row is not None else None


def test_the_row_whose_label_holds_most_of_the_question_wins_over_the_better_ranked_chunk():
    q = ("What was the fair value of Berkshire's equity securities in banks, insurance and finance "
         "companies at December 31, 2024, in millions?")
    first = "Berkshire's equity securities at December 31, 2024 by industry\nFair value 10,107 4,267 718 133\nCost basis 9,000 3,100 600 120"
    second = "Berkshire's holdings at December 31, 2024\nBanks, insurance and finance 15,707 75,936 91,643\nConsumer products 1 2 3"
    assert _row(q, first, second) == "Banks, insurance and finance 15,707 75,936 91,643"
    # with only the first chunk, its row is still quoted (the check then caveats which column)
    assert _row(q, first) == "Fair value 10,107 4,267 718 133"


def test_a_date_in_a_rows_label_is_the_column_asked_for_not_the_measure():
    q = ("What was the gross carrying amount of aircraft in its equipment held for lease at December 31, "
         "2024, in millions?")
    dated = "Summary\nDecember 31, 2024 5,843 5,996 7.5"
    aircraft = "Equipment held for lease at December 31, 2024 (in millions) follows.\nAircraft 14,201 12,537\nRailcars 10,137 10,031"
    assert _row(q, dated, aircraft) == "Aircraft 14,201 12,537"


DPR = """Training Retriever Top-20 Top-100
NQ TriviaQA WQ TREC SQuAD NQ TriviaQA WQ TREC SQuAD
None BM25 59.1 66.9 55.0 70.9 68.8 73.7 76.7 71.1 84.1 80.0
Single DPR 78.4 79.4 73.2 79.8 63.2 85.4 85.0 81.4 89.1 77.2"""


def test_a_cell_under_a_column_group_names_the_group_and_holds_its_terms():
    cells = benchmark_cells(DPR, "What top-100 accuracy does DPR trained on a single dataset reach on TriviaQA?")
    assert cells[0][0] == "Single DPR, TriviaQA (Top-100): 85.0"
    assert {"top", "100", "triviaqa"} <= cells[0][1]
    # the question's "top-20" is a constraint the cell now holds, so the answer check can accept it
    twenty = "What top-20 accuracy does DPR trained on a single dataset reach on TriviaQA?"
    assert benchmark_cells(DPR, twenty)[0][0] == "Single DPR, TriviaQA (Top-20): 79.4"
