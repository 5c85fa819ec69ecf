"""check_grounding and grade_answer for the offline engine: lexical support and what the answer must hold."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer_spans import holds
from rag.answer_types import MISSING, SPAN_TYPES, AnswerType, describe, expected_type
from rag.engines.aliases import expand
from rag.engines.base import Answer, AnswerGrade, GroundingCheck
from rag.engines.benchmarks import CELL_ROW, names_column
from rag.engines.cited import EXTRACTIVE_LABEL, KEY_PASSAGES
from rag.engines.decomposition import multi_hop
from rag.engines.grading import dated_name
from rag.engines.lexical import (
    LEAD_USEFUL_AT,
    LexicalCore,
    _constraint_words,
    _pct,
    _quote,
    constraints,
)
from rag.engines.passages import _quotable
from rag.engines.tables import COLUMN
from rag.models import Chunk
from rag.text import terms

SUPPORTED_AT = 0.8
"""A claim is grounded when this share of its IDF weight appears in the chunks it cites."""
USEFUL_AT = 0.5
TABLE_ROW = re.compile(rf"^[^\n]{{6,}}?, {COLUMN}: ")
"""An assembled table row ("Net earnings …, 2024: $88,995 million (2023: …)"): its figures are its label's."""
_UNNAMED_PERSON = re.compile(r"\b(?:he|she|him|his|her|hers)\b", re.I)
"""A person the question refers to without a name ("How old is he?" left unresolved)."""
_UNRESOLVED = re.compile(r"\s*(?:(?:what|how)\s+about|and)\b", re.I)
"""A follow-up contextualize_question could not make a full question of ("What about X's fair value?")."""
_NAMED_SHORT = re.compile(r"([A-Za-z][\w.+-]*(?:\s+[A-Za-z][\w.+-]*){0,3}) \(([A-Za-z][\w.+-]*)\)")


def _as_printed(claim: str) -> str:
    """A results-table cell as its chunk prints it: "Multi DPR, WQ: 42.4" for "…, WebQuestions (WQ): 42.4".

    The column's name in words is the question's (:func:`rag.engines.benchmarks.names_column`).
    """
    if not CELL_ROW.match(claim):
        return claim
    return _NAMED_SHORT.sub(lambda m: m.group(2) if names_column(m.group(2), m.group(1)) else m.group(0),
                            claim)


_MARKERS = re.compile(r"((?:\s*\[\d+\])+)")
_NUM = re.compile(r"\[(\d+)\]")


def _unnamed_person(question: str) -> str | None:
    """The answer check's problem with a question about a person it never names ("How old is he?").

    None when the question has no such pronoun or names someone (a name, not a year, among its constraints).
    """
    who = _UNNAMED_PERSON.search(question)
    if who is None or any(c.kind != "number" for c in constraints(question)):
        return None
    return (f"it asks about a person the question does not name (“{who.group(0)}”), so no answer can be "
            f"checked")


def _unchecked(question: str) -> str | None:
    """Why no answer to ``question`` can be checked, or None.

    A person it refers to without a name (:func:`_unnamed_person`), or a follow-up contextualize_question
    could not make a full question of ("What about Berkshire's fair value of Kraft Heinz?"): what it asks
    for is not known, so no answer to it is clean.
    """
    if _UNRESOLVED.match(question):
        return "it answers a follow-up that was not made a full question, so what it asks is not known"
    return _unnamed_person(question)


def _lead_failed(kind: AnswerType | None, problems: list[str], lacking: list,
                 cov: float) -> AnswerType | None:
    """``kind`` when only the answer's lead failed, else None.

    The lead is about another name, is another row, or holds too little of the question, while the answer as
    a whole holds the question's constraints and terms: the correction then looks for that type in more
    chunks (the next candidates), as for a lead without the type.
    """
    return kind if problems and not lacking and cov >= USEFUL_AT else None


def _without_content_words(question: str, answer: Answer) -> AnswerGrade:
    """The answer check of a question with no content words: judged by its citations.

    Never useful for a person the question does not name ("How old is he?").
    """
    if problem := _unnamed_person(question):
        return AnswerGrade(useful=False, reasoning=f"Not useful: {problem}.")
    return AnswerGrade(useful=bool(answer.citations),
                       reasoning="The question has no content words; judged by citations.")


class CheckingMixin(LexicalCore):
    """The grounding check of each claim and the answer check against the question."""

    # -- check_grounding --------------------------------------------------------------------
    @staticmethod
    def claims(text: str) -> list[tuple[str, list[int]]]:
        """Split an answer into (claim, cited numbers).

        Each claim ends at its ``[n]`` markers; trailing text without a marker is a claim citing nothing. The
        offline answer's labels (:data:`EXTRACTIVE_LABEL`, "Key passages:", list bullets) are not claims.
        """
        out = []
        text = "\n".join(line[2:] if line.startswith("- ") else line
                         for line in text.splitlines()
                         if line.strip() not in (EXTRACTIVE_LABEL, KEY_PASSAGES))
        pieces = _MARKERS.split(text)
        for i in range(0, len(pieces), 2):
            claim = pieces[i].strip()
            cites = [int(n) for n in _NUM.findall(pieces[i + 1])] if i + 1 < len(pieces) else []
            if claim:
                out.append((claim, cites))
        return out

    def check_grounding(self, answer: Answer, chunks: Sequence[Chunk]) -> GroundingCheck:
        """Each claim must have >= 80% of its IDF-weighted terms in the chunks it cites.

        The reasoning says how many claims are verbatim quotes of the chunk they cite (an
        extractive sentence is grounded by construction) and how many were assembled (a table
        row read with its header), so a pass is not mistaken for more than it is: whether the
        answer answers the question is the answer check's job.
        """
        by_n = {c.n: c.chunk_id for c in answer.citations}
        by_id = {c.id: c for c in chunks}
        supports, bad, notes = [], [], []
        verbatim = 0
        for claim, cites in self.claims(answer.text):
            weights = self.weighted_terms(_as_printed(claim), question=False)
            if not weights:
                continue
            cited = [by_id[by_n[n]] for n in cites if n in by_n and by_n[n] in by_id]
            if not cited:
                supports.append(0.0)
                bad.append(claim)
                notes.append(f"'{claim[:60]}' cites no known source")
                continue
            present = set().union(*(set(terms(c.text)) for c in cited))
            cov, _, missing = self.coverage(weights, present)
            supports.append(cov)
            flat = " ".join(claim.split()).lower()
            verbatim += any(flat in " ".join(_quotable(c.text).split()).lower() for c in cited)
            if cov < SUPPORTED_AT:
                bad.append(claim)
                notes.append(f"'{claim[:60]}' is {_pct(cov)} supported (missing {_quote(missing, 4)})")
        if not supports:
            return GroundingCheck(grounded=True, ungrounded_claims=[], confidence=1.0,
                                  reasoning="The answer makes no factual claim to check.")
        conf = round(sum(supports) / len(supports), 3)
        if bad:
            reasoning = (f"{len(bad)} of {len(supports)} claims are not supported by the chunks "
                         f"they cite: " + "; ".join(notes) + ".")
        elif verbatim == len(supports):
            reasoning = (f"All {len(supports)} claims are quoted verbatim from the chunks they "
                         f"cite (an extractive answer), so they are grounded by construction; "
                         f"this does not check that they answer the question.")
        else:
            reasoning = (f"All {len(supports)} claims are supported by the chunks they cite "
                         f"(lowest support {_pct(min(supports))}, needs {_pct(SUPPORTED_AT)}); "
                         f"{verbatim} quoted verbatim, {len(supports) - verbatim} assembled from "
                         f"their words (e.g. a table row read with its column header).")
        return GroundingCheck(grounded=not bad, ungrounded_claims=bad, confidence=conf,
                              reasoning=reasoning)

    # -- grade_answer -----------------------------------------------------------------------
    def grade_answer(self, question: str, answer: Answer) -> AnswerGrade:
        """Useful when the answer.

        (1) cites evidence, (2) holds every constraint of the question (:func:`constraints`: numbers and
        years, names, quoted phrases), (3) leads with a passage that holds the type of answer asked for
        (:func:`rag.answer_types.expected_type`: a person's name the question does not give for "who", a
        figure for "how many", the expansion for "what does X stand for", a place for "where", …; when it
        does not, ``missing_type`` names the type, so the graph can look for it), and (4) covers >= 50% of
        the question's IDF-weighted terms, and its lead passage LEAD_USEFUL_AT of them (the answer is its
        lead; the key passages only support it). The reasoning names what failed.
        """
        weights = self.weighted_terms(question)
        text = "\n".join(claim for claim, _ in self.claims(answer.text))
        if not weights:
            return _without_content_words(question, answer)
        short = self.aliases(question, [answer.text])  # and those grading and generation found
        # the names the cited chunks' documents are about (their heads), as grading and generation read them
        by_head = self.cited_head_names(question, [c.chunk_id for c in answer.citations])
        seq = expand(terms(text), short) + sorted(by_head)
        present = set(seq)
        cov, matched, missing = self.coverage(weights, present)
        problems = []
        if not answer.citations:
            problems.append("it cites no evidence")
        lacking = [c for c in constraints(question) if not c.held_in(seq)]
        if lacking:
            problems.append(f"it misses the question's {_constraint_words(lacking)}")
        names = [c for c in constraints(question) if c.kind != "number"]
        if problem := _unchecked(question):
            problems.append(problem)
        kind = expected_type(question)
        claims = self.claims(answer.text)
        lead = claims[0][0] if claims else ""
        cell = bool(CELL_ROW.match(lead))  # a results table's cell at the row and column the question names
        row = cell or bool(TABLE_ROW.match(lead))  # an assembled table row: its figures are its label's
        missing_type = None
        predicate = None if row else self.predicate(question)
        # a date near the names, said with another verb than the question's (see dated_name)
        dated = bool(kind == "date" and predicate and not predicate.keys() & set(terms(lead))
                     and dated_name(lead, question, constraints(question), self.common_word, short))
        if kind is not None and answer.citations and not dated and \
                holds(lead, kind, question, self.common_word, predicate, short) is None:
            missing_type = kind
            problems.append(f"the question {MISSING[kind]}")
        by_ids = {c.n: c.chunk_id for c in answer.citations}
        lead_ids = [by_ids[n] for n in (claims[0][1] if claims else []) if n in by_ids]
        lead_head = self.cited_head_names(question, lead_ids)
        lead_terms = set(expand(terms(lead), short))
        lead_cov = self.coverage(weights, lead_terms | lead_head)[0] if lead else 0.0
        # the lead answers for the question's names, itself or through its passage: a table row of
        # Berkshire's income statement is no answer about BNSF, whatever a key passage says of BNSF
        held_by = self.held_memo.get(question)
        lead_names = lead_terms | lead_head
        lent = {t for cid in lead_ids for t in held_by.get(cid, ())}
        if not row:  # a table row is its label's: other rows of its chunk lend it no name
            lead_names |= lent
        # every word of a name: "Berkshire Hathaway Inc. and Subsidiaries" is not "Berkshire Hathaway Energy"
        # (not for a multi-hop question: its lead holds one hop's name, not every name of the question); a
        # results table's cell may take a name it holds no word of from its table ("Test results on Open-QA
        # benchmarks"), never the rest of a name it holds part of ("T5 (11b)" is no "T5 (large)")
        off_topic = [c for c in names if not set(c.terms) <= lead_names and not (
            cell and not set(c.terms) & lead_names and set(c.terms) <= lent)] \
            if not multi_hop(question) else []
        if lead and not lacking and off_topic:
            problems.append(f"its lead passage is not about the question's {_constraint_words(off_topic)}")
        if row and not cell and not self.row_label_fits(question, lead):
            asked = self.predicate(question)
            problems.append(f"its lead is a table row whose label holds none of "
                            f"{_quote([w for s, (w, _) in weights.items() if s in asked], 4)}")
        # a question of no type has no span to check: its lead must cover the question all the more
        elif not row and (kind in SPAN_TYPES or kind is None) and cov >= USEFUL_AT and lead and \
                not self.acceptable(question, lead, kind, held=lead_head):
            problems.append(f"its lead passage covers only {_pct(lead_cov)} of the question's IDF-weighted "
                            f"terms (the lead must cover {_pct(LEAD_USEFUL_AT)})")
        missing_type = missing_type or _lead_failed(kind, problems, lacking, cov)
        if cov < USEFUL_AT:
            problems.append(f"it covers only {_pct(cov)} of the question's IDF-weighted terms "
                            f"(useful at {_pct(USEFUL_AT)})")
        said = (f"Covers {_pct(cov)} of the question's IDF-weighted terms. "
                + (f"Addresses {_quote(matched)}. " if matched else "")
                + (f"Does not address {_quote(missing)}. " if missing else ""))
        if problems:
            return AnswerGrade(useful=False, missing_type=missing_type, reasoning=(
                "Not useful: " + "; ".join(problems) + ". " + said).strip())
        found = holds(lead, kind, question, self.common_word, predicate, short) \
            if kind in SPAN_TYPES else None
        return AnswerGrade(useful=True, answer_span=found, answer_kind=kind if found else None, reasoning=(
            "Useful: holds the question's constraints"
            + (f" and {describe(kind)}, the kind of answer asked for" if kind else "")
            + (f" (“{found}”)" if found else "") + ". " + said).strip())
