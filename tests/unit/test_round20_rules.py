"""Round 20 (issue 19): a results table's column group goes with its cell.

Chosen on the odd-numbered retrace-dev sets, reported on the even-numbered ones (README, "Round 20").
"""

from __future__ import annotations

from rag.engines.benchmarks import benchmark_cells

DPR = """Training Retriever Top-20 Top-100
NQ TriviaQA WQ TREC SQuAD NQ TriviaQA WQ TREC SQuAD
None BM25 59.1 66.9 55.0 70.9 68.8 73.7 76.7 71.1 84.1 80.0
Single DPR 78.4 79.4 73.2 79.8 63.2 85.4 85.0 81.4 89.1 77.2"""


def test_a_cell_under_a_column_group_names_the_group_and_holds_its_terms():
    question = "What top-100 accuracy does DPR trained on a single dataset reach on TriviaQA?"
    cells = benchmark_cells(DPR, question)
    assert cells[0][0] == "Single DPR, TriviaQA (Top-100): 85.0"
    assert {"top", "100", "triviaqa"} <= cells[0][1]
    # the question's "top-20" is a constraint the cell now holds, so the answer check can accept it
    twenty = "What top-20 accuracy does DPR trained on a single dataset reach on TriviaQA?"
    assert benchmark_cells(DPR, twenty)[0][0] == "Single DPR, TriviaQA (Top-20): 79.4"
