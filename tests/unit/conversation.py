"""Asking a conversation of the offline engine's contextualize_question, turn by turn (a test helper)."""

from __future__ import annotations

from rag.models import Turn


def ask(engine, *questions: str) -> list[str]:
    """The standalone form of each question, asked after the earlier ones (their standalone forms too)."""
    history: list[Turn] = []
    out = []
    for q in questions:
        got = engine.contextualize(q, history).question
        out.append(got)
        history.append(Turn(question=q, answer="", standalone_question=got))
    return out
