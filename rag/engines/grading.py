"""grade_documents for the offline engine: IDF-weighted coverage in a proximity window, plus constraints."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer_spans import holds
from rag.answer_types import describe, expected_type
from rag.engines.aliases import expand
from rag.engines.base import RelevanceGrade
from rag.engines.lexical import (
    Constraint,
    LexicalCore,
    _best_window,
    _constraint_words,
    _pct,
    _quote,
    constraints,
)
from rag.engines.passages import without_marks
from rag.models import Chunk
from rag.text import terms

RELEVANT_AT = 0.5
"""A chunk is relevant when it covers at least this share of the question's IDF weight."""
PARTIAL_RELEVANT_AT = 0.3
"""The same for one hop of a decomposed multi-hop question, where each supporting passage
covers only its part. Calibrated on HotpotQA (Full preset, k=6): 0.5 gave recall_all 0.37,
0.4 gave 0.52, 0.3 gave 0.645."""
HIGH_AT = 0.75
AMBIGUOUS_AT = 0.35
"""A chunk not relevant that holds the question's constraints and covers at least this share of its IDF
weight is partly relevant (CRAG's "ambiguous" action, Yan et al. 2024; score "medium"): when no chunk is
relevant, Full answers from such chunks with a caveat instead of abstaining."""
TYPED_RELEVANCE = frozenset({"person", "organisation", "place", "number", "date", "acronym"})
"""Answer types for which a chunk that holds an answer of the type near the question's terms (and its
constraints) is relevant even below the coverage threshold: "Who are its authors?" is answered by an
author line that holds none of the question's words."""


def relevance_threshold(n_terms: int, partial: bool = False) -> float:
    """The coverage a chunk needs to be relevant.

    RELEVANT_AT for questions of up to 4 content terms, 5 points less per further term, never below
    PARTIAL_RELEVANT_AT, which also holds for every hop of a decomposed question. A long question is rarely
    covered by one passage (verbose queries need partial matching), a short one should be.
    """
    if partial:
        return PARTIAL_RELEVANT_AT
    return max(PARTIAL_RELEVANT_AT, RELEVANT_AT - 0.05 * max(0, n_terms - 4))



PROXIMITY_WINDOW = 40
"""Index terms (stop words left out) in the window a chunk's question terms must fall in
together: relevance is the best coverage of any such window, so terms scattered over a long
chunk do not add up."""
CONSTRAINT_WINDOW = 80
"""Index terms within which all of a question's constraints must occur together."""
HOP_PREDICATE_AT = 0.3
"""One hop's chunk without any of the hop's constraints is relevant when its window holds
this share of the hop's other IDF-weighted terms (chosen on HotpotQA dev, questions 1-100)."""
SHORT_QUESTION_TERMS = 5
"""In a question of at most this many content words, a relevant chunk must also hold one of
its words besides the constraints (the predicate: 'founded' in "When was OpenAI founded?");
in longer questions the coverage threshold already asks for more than the constraints."""


def _constraint_note(held: Sequence[Constraint], lacking: Sequence[Constraint], cons_ok: bool, hop_ok: bool,
                     partial: bool, seq: Sequence[str], hop_cov: float) -> str:
    """The sentence of a grade's reasoning about the question's constraints."""
    if lacking and not cons_ok:
        return (f"Lacks the question's {_constraint_words(lacking)}"
                + (" close together." if held and len(held) + len(lacking) > 1
                   and all(c.held_in(seq) for c in lacking) else "."))
    if hop_ok:
        return (f"Lacks the question's {_constraint_words(lacking)}, but as one "
                f"hop holds {_pct(hop_cov)} of the rest of the question.")
    if partial and lacking:
        return f"Holds this hop's {_constraint_words(held)}."
    return f"Holds the question's {_constraint_words(held)}."


def dated_name(text: str, question: str, cons, common, short) -> str | None:
    """A date in ``text`` near the question's names (``cons``, its constraints), a year it gives excepted.

    For a text that says none of what a date question asks of its names: "On what date did PacifiCorp's
    2022 Wildfire start?" is answered by "a wildfire began on July 29, 2022 … (the “2022 Wildfire”)", whose
    verb is another. ``common`` tells corpus words from names; ``short`` maps short forms to names.
    """
    names = {t: 1.0 for c in cons if c.kind != "number" for t in c.terms}
    span = holds(text, "date", question, common, names, short) if names else None
    return span if span and not re.fullmatch(r"(?:19|20)\d\d", span.strip()) else None


class GradingMixin(LexicalCore):
    """Relevance grading of chunks against a question (see :meth:`grade`)."""

    def window_coverage(self, weights: dict[str, tuple[str, float]], seq: Sequence[str],
                        held: frozenset[str] = frozenset()) -> tuple[float, list[str], list[str]]:
        """Like :meth:`coverage`.

        Over the best window of PROXIMITY_WINDOW consecutive index terms of ``seq`` (a chunk's terms in
        order); the terms in ``held`` (the question's names its document's head holds) count in every window.
        """
        total = sum(w for _, w in weights.values())
        if total <= 0:
            return 0.0, [], []
        got, found = _best_window(seq, {s: w for s, (_, w) in weights.items() if s not in held},
                                  PROXIMITY_WINDOW)
        given = held & weights.keys()
        got += sum(weights[s][1] for s in given)
        found |= given
        missing = sorted((v for s, v in weights.items() if s not in found), key=lambda v: -v[1])
        return got / total, [w for s, (w, _) in weights.items() if s in found], [v[0] for v in missing]

    @staticmethod
    def constraints_held(cons: Sequence[Constraint], seq: Sequence[str], given: frozenset[str] = frozenset()
                         ) -> tuple[list[Constraint], list[Constraint]]:
        """(held, lacking) constraints.

        Held when all of them occur within one window of CONSTRAINT_WINDOW terms of ``seq``; otherwise those
        held anywhere are reported held. A name whose terms are all ``given`` (its document's head holds it)
        is held wherever the others are.
        """
        if not cons:
            return [], []
        by_head = [c for c in cons if given and set(c.terms) <= given]
        if by_head:
            held, lacking = GradingMixin.constraints_held([c for c in cons if c not in by_head], seq)
            return [c for c in cons if c in held or c in by_head], lacking
        held = [c for c in cons if c.held_in(seq)]
        if len(held) > 1 and len(seq) > CONSTRAINT_WINDOW:
            # held somewhere; they must also be close together
            best: list[Constraint] = []
            for start in range(0, len(seq) - CONSTRAINT_WINDOW // 2, CONSTRAINT_WINDOW // 2):
                part = seq[start:start + CONSTRAINT_WINDOW]
                together = [c for c in held if c.held_in(part)]
                if len(together) > len(best):
                    best = together
                if len(best) == len(held):
                    break
            held = best
        return held, [c for c in cons if c not in held]

    @staticmethod
    def constraints_ok(cons: Sequence[Constraint], held: Sequence[Constraint],
                       partial: bool) -> bool:
        """Enough constraints held.

        For one hop of a multi-hop question, any one of its names or quoted phrases (a year alone
        makes no topic: "Sensational Feeling 9 2014" is not about "2014 Birthday Honours"), or of its
        numbers when it names nothing; for a question, every number and quoted phrase,
        and at least half of its names (all of them when it has one): two names usually mean two passages (a
        bridge).
        """
        if not cons:
            return True
        if partial:  # one of the hop's names when it has any: a year alone is no topic
            names = [c for c in cons if c.kind != "number"]
            return any(c in held for c in names) if names else bool(held)
        names = [c for c in cons if c.kind == "entity"]
        if any(c not in held for c in cons if c.kind != "entity"):
            return False
        return sum(c in held for c in names) >= (len(names) + 1) // 2

    def grade(self, question: str, chunks: Sequence[Chunk], *,
              partial: bool = False) -> list[RelevanceGrade]:
        """A chunk is relevant when.

        (1) its best window of PROXIMITY_WINDOW terms covers :func:`relevance_threshold` of the question's
        IDF-weighted terms (50% for short questions, down to 30% for long ones or when ``partial``), and (2)
        it holds the question's constraints (:func:`constraints`: numbers and years, named entities, quoted
        phrases) close together. ``partial`` (one hop of a decomposed multi-hop question, whose passages each
        answer a part) needs only one of the hop's own names (see :meth:`constraints_ok`), or most of the rest
        of the hop close together (HOP_PREDICATE_AT).
        """
        weights = self.weighted_terms(question)
        cons = constraints(question)
        kind = expected_type(question)
        asks = self.predicate(question) if kind in TYPED_RELEVANCE and not partial else None
        con_stems = {t for c in cons for t in c.terms}
        threshold = relevance_threshold(len(weights), partial)
        short = self.aliases(question, (c.text for c in chunks), (c.doc_sha for c in chunks))
        # a name no passage of the knowledge base mentions at all: nothing here is about what is asked
        unknown = [c for c in cons if c.kind != "number" and not partial
                   and all(not self.stats.df.get(t) for t in c.terms)]
        grades = []
        for chunk in chunks:
            if not weights:
                grades.append(RelevanceGrade(relevant=False, score="low", reasoning=(
                    "The question has no content words to match (only stop words).")))
                continue
            if unknown:
                grades.append(RelevanceGrade(relevant=False, score="low", reasoning=(
                    f"The knowledge base never mentions the question's {_constraint_words(unknown)}: no "
                    f"passage of it is about what the question asks.")))
                continue
            text = without_marks(chunk.text)  # an author line's "Lin2" is the name "Lin"
            seq = expand(terms(text), short)  # "PCC's revenues" reads as Precision Castparts'
            by_head = self.head_names(question, chunk) if not partial else frozenset()
            cov, matched, missing = self.window_coverage(weights, seq, by_head)
            held, lacking = self.constraints_held(cons, seq, by_head)
            cons_ok = self.constraints_ok(cons, held, partial)
            hop_ok = False
            if partial and not cons_ok:
                # A hop's passage may be about the bridge, not the question's names: it then
                # needs most of what the question asks besides them, close together.
                rest = {st: v for st, v in weights.items() if st not in con_stems}
                hop_cov = self.window_coverage(rest, seq)[0] if rest else 0.0
                hop_ok = cons_ok = hop_cov >= HOP_PREDICATE_AT
            # The window must also hold something the question asks besides its constraints
            # (the predicate: 'founded' in "When was OpenAI founded?").
            predicate = [w for st, (w, _) in weights.items() if st not in con_stems]
            said = (not predicate or partial or len(weights) > SHORT_QUESTION_TERMS
                    or any(w in matched for w in predicate))
            relevant = cov >= threshold and cons_ok and said
            typed = None
            if not relevant and cons_ok and asks is not None:
                # a date near the names where the text uses another verb ("began" for "start")
                typed = holds(text, kind, question, self.common_word, asks, short) or (
                    dated_name(text, question, cons, self.common_word, short) if kind == "date" and not said
                    else None)
                relevant = typed is not None
            ambiguous = not relevant and cons_ok and not partial and cov >= AMBIGUOUS_AT
            score = ("high" if relevant and cov >= HIGH_AT else "medium" if relevant or ambiguous else "low")
            parts = [f"Covers {_pct(cov)} of the question's IDF-weighted terms within "
                     f"{PROXIMITY_WINDOW} words (relevant at {_pct(threshold)}"
                     f"{', one hop of a multi-hop question' if partial else ''})."]
            parts.append(f"Matched {_quote(matched)}." if matched else "Matched no question term.")
            if missing:
                parts.append(f"Missing {_quote(missing)}.")
            if cons:
                parts.append(_constraint_note(held, lacking, cons_ok, hop_ok, partial, seq,
                                              hop_cov if hop_ok else 0.0))
            if not said and cons_ok:
                parts.append(f"Holds none of {_quote(predicate)}, what the question asks "
                             f"about its constraints.")
            if typed is not None:
                parts.append(f"Relevant all the same: it holds {describe(kind)} near the question's terms "
                             f"(“{typed}”), the kind of answer asked for.")
            elif ambiguous:
                parts.append(f"Partly relevant (ambiguous): it holds the question's constraints and "
                             f"{_pct(cov)} of its terms, less than a relevant chunk needs.")
            elif not relevant and cons_ok and said and cov < threshold:
                parts.append("Not relevant: too little of the question, close together.")
            grades.append(RelevanceGrade(relevant=relevant, score=score,
                                         reasoning=" ".join(parts)))
        return grades

