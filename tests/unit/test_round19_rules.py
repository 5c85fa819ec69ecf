"""Round 19's rules: a sentence a chunk's end cuts is read to its end, and results tables read more headers.

Chunking cuts sentences, so the figure a sentence is there for can sit in the next chunk; a results table's
header may name a column "Top-100", a row's label may carry a citation ("T5-11B+SSM[52]"), and a question may
spell a column otherwise ("MS-MARCO", "CuratedTREC") or a row ("multiple" for "Multi").

The rules were chosen on the odd-numbered retrace-dev sets and reported on the even-numbered ones (README,
"Self-correction on conversations").
"""

from __future__ import annotations

import pytest

from rag.engines.benchmarks import benchmark_cells, names_column
from rag.graph.evidence import cut_at_end, sentence_rest, with_sentence_ends
from rag.models import Chunk
from rag.store.records import chunk_id

GEICO = ("According to the A.M. Best data for 2023 published in 2024, the five largest automobile insurers "
         "had a combined market share of approximately 62.3% based on written premiums, with GEICO’s market")
GEICO_NEXT = ("insurers had a combined market share of approximately 62.3% based on written premiums, with "
              "GEICO’s market\nshare being the third largest at approximately 12.3%.\nSeasonal variations in "
              "GEICO’s insurance business are not significant.")


@pytest.mark.parametrize(("text", "cut"), [
    (GEICO, True),
    ("BHE GT&S operates three interstate pipeline systems that consist of approximately 5,400", True),
    ("The rate of decline in policies-in-force slowed in 2024.", False),  # a sentence ends
    ("Net deferred income tax liability $ 83,563 $ 92,344", False),  # a table row's cells
    ("Effective income tax rate (81.6 )% (215.1 )%", False),
    ("RAG-Seq. 83.5% 53.8%", False),
    ("further actions could take several years.\nOther legal matters", False),  # a heading
    ("see Note 12", False),  # too few words to be prose
])
def test_a_chunk_that_ends_inside_a_sentence_of_prose_is_told_apart(text, cut):
    assert cut_at_end(text) is cut


def test_the_rest_of_a_cut_sentence_comes_from_the_next_chunk_past_the_overlap():
    assert sentence_rest(GEICO, GEICO_NEXT) == " share being the third largest at approximately 12.3%."
    # the next chunk does not go on from this one (no overlap found): nothing is added
    assert sentence_rest(GEICO, "Seasonal variations in GEICO’s business are not significant.") == ""
    # no sentence ends within the limit: the sentence stays cut
    assert sentence_rest(GEICO, GEICO_NEXT.split("\n")[0] + " and" * 200) == ""


class _Store:
    def __init__(self, chunks):
        self.chunks = {c.id: c for c in chunks}
        self.asked: list[list[str]] = []

    def get_chunks(self, ids):
        self.asked.append(list(ids))
        return [self.chunks[i] for i in ids if i in self.chunks]


def _chunk(index, text, origin="kb"):
    return Chunk(id=chunk_id("a" * 64, index), text=text, source="brk.pdf", page=5, index=index,
                 doc_sha="a" * 64, origin=origin)


def test_with_sentence_ends_completes_only_the_chunks_that_cut_a_sentence():
    first, second = _chunk(3, GEICO), _chunk(4, GEICO_NEXT)
    whole = _chunk(7, "Seasonal variations in GEICO’s insurance business are not significant.")
    store = _Store([first, second, whole, _chunk(8, "Next chunk.")])
    out = with_sentence_ends(store, [first, whole])
    assert out[0].text == GEICO + " share being the third largest at approximately 12.3%."
    assert out[0].id == first.id and out[0].page == first.page
    assert out[1] is whole
    assert store.asked == [[second.id]]  # one read, of the next chunks of those that cut a sentence


def test_with_sentence_ends_leaves_web_results_and_a_failing_store_alone():
    web = _chunk(3, GEICO, origin="web")
    assert with_sentence_ends(_Store([]), [web]) == [web]

    class Broken:
        def get_chunks(self, ids):
            raise OSError("store unreachable")

    kb = _chunk(3, GEICO)
    assert with_sentence_ends(Broken(), [kb]) == [kb]


DPR_SCHEMES = "Type #N IB Top-5 Top-20 Top-100\nRandom 7 ✗ 47.0 64.3 77.8\nBM25 7 ✗ 50.0 63.3 74.8\n"
DPR_RETRIEVAL = ("Training Retriever Top-20 Top-100\n"
                 "NQ TriviaQA WQ TREC SQuAD NQ TriviaQA WQ TREC SQuAD\n"
                 "None BM25 59.1 66.9 55.0 70.9 68.8 73.7 76.7 71.1 84.1 80.0\n"
                 "Single DPR 78.4 79.4 73.2 79.8 63.2 85.4 85.0 81.4 89.1 77.2\n"
                 "Multi DPR 79.4 78.8 75.0 89.1 51.6 86.0 84.7 82.9 93.9 67.6\n")
RAG_OPEN_QA = ("Model NQ TQA WQ CT\nClosed\nBook\nT5-11B [52] 34.5 - /50.1 37.4 -\n"
               "T5-11B+SSM[52] 36.6 - /60.5 44.7 -\nOpen\nBook\nREALM [20] 40.4 - / - 40.7 46.8\n")


def _first(text, question):
    cells = benchmark_cells(text, question)
    return cells[0][0] if cells else None


def test_a_header_may_name_a_column_with_a_number_of_three_digits():
    # "Top-100" is a name, not a figure; the header is read and its last three names are the row's cells
    assert _first(DPR_SCHEMES, "In the DPR paper's comparison of training schemes, what top-20 accuracy does "
                               "the setup with seven random negatives reach?") == "Random 7 ✗, top-20: 64.3"
    # the group over the datasets: "top-100" picks the second five columns
    assert _first(DPR_RETRIEVAL, "In the retrieval results table, what top-100 accuracy does BM25 reach on "
                                 "SQuAD?") == "None BM25, SQuAD (Top-100): 80.0"
    assert _first(DPR_RETRIEVAL, "What top-20 accuracy does DPR trained on a single dataset reach on "
                                 "TriviaQA?") == "Single DPR, TriviaQA (Top-20): 79.4"


def test_a_rows_citation_is_no_part_of_its_label():
    assert _first(RAG_OPEN_QA, "What exact match does T5-11B+SSM get on Natural Questions in their table?") \
        == "T5-11B+SSM, Natural Questions (NQ): 36.6"
    # "T5-11B" is another row than "T5-11B+SSM"
    assert _first(RAG_OPEN_QA, "What exact match does T5-11B get on Natural Questions?") \
        == "T5-11B, Natural Questions (NQ): 34.5"


@pytest.mark.parametrize(("column", "name", "same"), [
    ("MSMARCO", "MS-MARCO", True),  # hyphens aside
    ("TREC", "CuratedTREC", True),  # its last part in camel case
    ("QA", "TriviaQA", False),  # two letters are too few
    ("REC", "CuratedTrec", False),  # not a camel-case part
    ("NQ", "Natural Questions", True),  # unchanged: initials
    ("WQ", "MS-MARCO", False),
])
def test_a_column_spelled_otherwise_by_the_question(column, name, same):
    assert names_column(column, name) is same


def test_a_row_named_by_the_start_of_a_question_word():
    # "multiple datasets" names the "Multi DPR" row; the CuratedTREC column is the table's "TREC"
    assert _first(DPR_RETRIEVAL, "In the retrieval accuracy table, what top-100 accuracy does DPR trained on "
                                 "multiple datasets reach on CuratedTREC?") \
        == "Multi DPR, CuratedTREC (TREC, Top-100): 93.9"


def test_rows_whose_labels_differ_only_in_marks_are_no_answer():
    # "Gold 7 ✗" and "Gold 7 ✓" (without and with in-batch training): the question's words tell them apart
    # only by the mark, so neither is read as its answer
    text = DPR_SCHEMES + "Gold 7 ✗ 42.6 63.1 78.3\nGold 7 ✓ 51.1 69.1 80.8\n"
    assert _first(text, "What top-20 accuracy does in-batch training with 7 gold negatives reach?") is None
    assert _first(text, "What top-20 accuracy does the setup with 7 random negatives reach?") \
        == "Random 7 ✗, top-20: 64.3"
