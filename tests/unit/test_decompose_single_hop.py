"""decompose_query: a long question whose first hop already holds all of it is single-hop (issue 19)."""

from rag.engines.local import LocalEngine
from rag.models import Chunk
from rag.store.bm25 import LexicalStats

SERVICE = ("2024 versus 2023 Berkshire Hathaway service group revenues were $20.7 billion in 2024, a slight "
           "increase compared to 2023, reflecting revenue increases from aviation services businesses.")
RETAIL = ("Retailing group revenues declined 1.2% to $19.2 billion in 2024 compared to 2023. Except for BHA "
          "and Louis, each of the retailing businesses saw lower revenues.")
OTHER = ["Insurance float was about $171 billion at the end of 2024.",
         "BNSF operates one of the largest railroad systems in North America."] * 5


def test_a_first_hop_chunk_holding_the_whole_question_needs_no_bridge():
    engine = LocalEngine(LexicalStats.from_texts([SERVICE, RETAIL, *OTHER]))
    q = "What were the revenues of Berkshire Hathaway's service group in 2024?"
    hop = [Chunk(id="a-1", text=SERVICE, source="10-k.pdf", page=40),
           Chunk(id="a-2", text=RETAIL, source="10-k.pdf", page=41)]
    out = engine.decompose(q, hop)
    assert out.kind == "single", out.reasoning
    assert "holds them all" in out.reasoning
