"""Asking a conversation of the offline engine's contextualize_question, turn by turn (a test helper)."""

from __future__ import annotations

from rag.engines.local import LocalEngine
from rag.models import Turn
from rag.store.bm25 import LexicalStats

FILLER = [f"Berkshire Hathaway filler text number {i} about retrieval and language models" for i in range(30)]
"""Passages that give the offline engine's statistics a corpus, so the texts a test adds are rare words."""


def engine_over(*texts: str) -> LocalEngine:
    """The offline engine over ``texts`` and :data:`FILLER`."""
    return LocalEngine(LexicalStats.from_texts([*texts, *FILLER]))


def ask(engine, *questions: str) -> list[str]:
    """The standalone form of each question, asked after the earlier ones (their standalone forms too)."""
    history: list[Turn] = []
    out = []
    for q in questions:
        got = engine.contextualize(q, history).question
        out.append(got)
        history.append(Turn(question=q, answer="", standalone_question=got))
    return out
