"""The passages an extractive answer quotes, and the cited answer they make (for :mod:`.extraction`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag.engines.base import Answer, AnswerCitation
from rag.models import Chunk

EXTRACTIVE_LABEL = "Extractive answer from the offline engine (quoted passages, not generated):"
"""The first line of every offline answer: nobody should take it for a generated one."""
KEY_PASSAGES = "Key passages:"
_PRINTED_CELLS = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?\s*\)?\s+\$?\s*\(?\s*-?\d")
"""Two figures side by side, as a table's line prints its cells ("1,628 578 (253 )", "$ 85,870 $ 93,009"):
no column says which one is which."""


PRINTED_LEAD = "its lead is a table's line as printed, whose figures no column tells apart"
"""Why an answer that leads with a printed table line (:func:`printed_lead`) ends with a caveat."""


def extractive_lead(answer: str) -> str:
    """The lead line of the offline engine's ``answer``, without its citation marks; "" for another answer."""
    lines = [line for line in answer.split("\n") if line.strip()]
    if len(lines) < 2 or lines[0] != EXTRACTIVE_LABEL:
        return ""
    return re.sub(r"\s*(?:\[\d+\])+\s*$", "", lines[1])


def printed_lead(answer: str) -> bool:
    """Whether the offline engine's ``answer`` leads with a table's line as printed (:data:`_PRINTED_CELLS`).

    "Revenues $ 46,891 $ 51,739 $ 56,756" may well lead with the year asked for, but nothing it quotes says
    so: such an answer is given with a caveat, never clean. An assembled row ("Revenues (Pilot), 2024:
    $46,891 (2023: …)") and a sentence ("… $469 million in 2024, $513 million in 2023") are no printed line.
    """
    lead = extractive_lead(answer)
    return ": " not in lead and _PRINTED_CELLS.search(lead) is not None


@dataclass(frozen=True)
class Passage:
    """An answer candidate.

    A sentence (``quote`` is its text) or a table row read with its header (``quote`` None: assembled, not
    verbatim).
    """

    rank: int
    """The rank of its chunk among the evidence (0-based)."""
    pos: int
    text: str
    stems: frozenset[str]
    bonus: float
    length: int
    quote: str | None
    context: frozenset[str] = frozenset()
    """Names the passage's table gives it (held, not matched)."""
    about: frozenset[str] = frozenset()
    """The terms of its chunk's source and title: what the passage is about, often left implied
    ("She served as Chief of Protocol" in the passage titled "Shirley Temple")."""
    head: frozenset[str] = frozenset()
    """The question's name terms its chunk's document head holds (:meth:`LexicalCore.head_names`)."""
    fragment: bool = False
    """A piece of a sentence (cut by a chunk's edge or a line break), quoted with "…": only a lead of last
    resort, when no whole sentence the answer check would accept holds the answer."""

    def held_share(self, cons: Sequence[Any]) -> float:
        """The share of the Constraints ``cons`` it holds (own stems or table context); 1.0 without any."""
        return (sum(c.held_by(self.stems | self.context) for c in cons) / len(cons)) if cons else 1.0


def cited_answer(lead: Passage, rest: Sequence[Passage], chunks: Sequence[Chunk]) -> Answer:
    """EXTRACTIVE_LABEL, ``lead``, then ``rest`` as key passages, each cited ``[n]`` (1-based, first use)."""
    numbers: dict[str, int] = {}

    def cite(p: Passage) -> str:
        cid = chunks[p.rank].id
        return f"{p.text} [{numbers.setdefault(cid, len(numbers) + 1)}]"

    lines = [EXTRACTIVE_LABEL, cite(lead)]
    if rest:
        lines += ["", KEY_PASSAGES] + [f"- {cite(p)}" for p in rest]
    return Answer(text="\n".join(lines),
                  citations=[AnswerCitation(n=n, chunk_id=cid) for cid, n in numbers.items()])
