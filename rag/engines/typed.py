"""Which chunks hold an answer of the kind asked for: the offline engine's reading of one chunk on its own.

A ``seek_answer_type`` correction (:mod:`rag.graph.corrections`) fetches many more chunks than top_k. Grading
judges a chunk by the question's words it holds, so a results table that names its columns by short forms
("WQ" for WebQuestions) grades no better than prose about the same paper, and the evidence cap (twice top_k)
dropped it. The generator reads such tables cell by cell (:func:`rag.engines.benchmarks.benchmark_cells`):
:meth:`TypedMixin.holds_answer` asks it, one chunk at a time, whether the chunk has a passage the answer check
would accept as the lead.
"""

from __future__ import annotations

from rag.answer_spans import holds
from rag.answer_types import SPAN_TYPES, expected_type
from rag.engines.extraction import LINE_TYPES, ExtractionMixin
from rag.engines.lexical import constraints
from rag.models import Chunk


class TypedMixin(ExtractionMixin):
    """:meth:`holds_answer`, over the generator's candidates (:meth:`ExtractionMixin._candidates`)."""

    def holds_answer(self, question: str, chunk: Chunk) -> bool:
        """Whether ``chunk`` alone holds a passage the answer check would accept as the answer's lead.

        That passage (a sentence, a table row read with its header, a results table's cell) holds the type
        of answer ``question`` asks for (:func:`rag.answer_types.expected_type`: a figure, a name, a place, …)
        near its words, every constraint of the question (names, numbers, years) and LEAD_USEFUL_AT of its
        IDF-weighted terms (:meth:`acceptable`). False for a question of no such type, or a chunk with no
        readable passage. Pure; about 1 ms a chunk.
        """
        kind = expected_type(question)
        if kind not in SPAN_TYPES:
            return False
        cons = constraints(question)
        predicate = self.predicate(question)
        short = self.alias_memo.get(question)
        candidates = [p for p in self._candidates(question, [chunk]) if not p.fragment]
        if kind in LINE_TYPES:
            candidates += self._line_candidates(question, [chunk])
        return any(
            p.held_share(cons) == 1.0
            and holds(p.text, kind, question, self.common_word, None if p.quote is None else predicate,
                      short) is not None
            and self.acceptable(question, p.text, kind, assembled=p.quote is None, held=p.head)
            for p in candidates)
