"""The offline contextualize_question: a follow-up becomes a standalone question, and only a follow-up.

Four cases, tried in this order (each rule is about the question's grammar, not about any one corpus):

1. a **courtesy prefix** ("Thanks!", "Great, and …") is stripped;
2. **ellipsis** ("And in 2023?", "How about GEICO?", "What about its revenue?") becomes the previous
   standalone question with that slot replaced: the phrase with the same preposition, the year, the
   subject's name, or the possessed noun phrase;
3. **references** ("it", "its", "they", "them", "the company", "that paper", "these models") are replaced
   by the noun phrase they refer to in the latest turn that has one, keeping the sentence grammatical
   ("its subsidiaries" -> "Berkshire's subsidiaries", "many of them" -> "many of BNSF's employees");
4. anything else is **self-contained** and passes unchanged: no name or year is carried over.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer_spans import PLURAL_ACRONYM
from rag.answer_types import PREAMBLE, main_clause, question_part
from rag.engines.answered import AnsweredMixin, _replacement
from rag.engines.antecedents import (
    _DOCUMENT_NP,
    _OBJECT_PLURAL,
    _PAPER,
    _PLACED_PLURAL,
    _WORK,
    _authors,
    _besides_filing,
    _changed_measure,
    _contrasted,
    _head_noun_refs,
    _latest_paper,
    _latest_work,
    _part_of_previous,
    _part_refs,
    _plural_focus,
    _same_year,
    _such_refs,
    _users_paper,
    _with_topic,
    acts,
)
from rag.engines.base import StandaloneQuestion
from rag.engines.coreference import asked_phrase, refers_inside
from rag.engines.item_slots import without_anaphora
from rag.engines.measure_slots import measure_slot
from rag.engines.phrases import (
    _CLAUSE_START,
    _ELLIPSIS,
    _WHOLE_CLAUSE,
    YEARS_ONLY,
    _is_fragment,
    owners,
    strip_courtesy,
    topics,
)
from rag.engines.slots import fill_slot, subject_slot
from rag.models import Turn
from rag.quantities import QUANTITY_WORDS

_SINGULAR_REF = re.compile(
    r"\b(?:(?:[Tt]he|[Tt]his|[Tt]hat|said)\s+(?:company|firm|business|group|corporation|paper|article|method|model|"
    r"approach|work|system|framework|technique|study|benchmark|dataset|retriever|report|filing)\b"
    r"|[Ii]t['’]s|[Ii]ts|[Ii]t)\b")
_FRAMING = re.compile(r"\b(?:in|from|of|according\s+to)\s+$")
"""The words before a paper that only says where to look: "… in the Lost in the Middle paper"."""
_IT_ONLY = re.compile(r"\b(?:[Ii]t|[Ii]ts)\b")
"""A bare "it"/"its", which a paper that only says where to look ("in the X paper") does not take."""
_PLURAL_REF = re.compile(
    r"\b(?:(?:[Tt]hese|[Tt]hose|[Tt]he)\s+(?:models|methods|papers|approaches|systems|companies|authors)\b"
    r"|[Tt]hey|[Tt]hem|[Tt]heir|[Tt]heirs)\b")
_COMMON_QUESTION_AT = 3.0
"""A question with no name of its own whose every content word has a BM25 idf below this (a word in
more than about 5 % of the chunks, like "results" or "limitations") says nothing about what it is
about, so it is read as asking about the latest topic."""
_ANY_REF = re.compile(
    r"\b(?:he|she|him|her|his|hers|it|its|they|them|their|theirs|this|that|these|those|former|latter|same|"
    r"there|then|also|the (?:company|firm|paper|model|method|role|position|business|group|authors?))\b", re.I)


_ONES_THEN = re.compile(r"^(?:and\s+)?(?:which|what)\s+ones\b.*?\b((?:in|for|during)\s+(?:19|20)\d\d)$", re.I)
""""Which ones made that list in 2022?": the previous question's answers at another time (its year
replaced)."""


def self_contained(question: str, standalone: str) -> bool:
    """Whether ``question`` surely stands alone.

    The rules left it unchanged (``standalone``), it holds no word that could point back at all ("he",
    "that", "the company", "also"), and it is no ellipsis.
    """
    bare = question.strip()
    return (standalone == question and not _ANY_REF.search(bare) and not _ELLIPSIS.match(bare.rstrip("?.! "))
            and not _is_fragment(bare.rstrip("?.! ")))


_OWN_MEASURE = re.compile(r"[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){0,3}['’]s?\s+(?:[a-z][\w-]*\s+){0,2}("
                          + "|".join(sorted(QUANTITY_WORDS)) + r")\b")
"""A fragment that names an owner and a measure of its own ("Occidental's total assets …")."""
_FILING_LEAD = re.compile(r"^(?:In|According to|Per)\s+[A-Z][^,:]{2,60}\b10-[KQ]\s*[,:]\s*")
"""The filing a question is asked in ("In Berkshire Hathaway's 2024 10-K, "), which a follow-up keeps."""
_OWNED = re.compile(r"(?:the\s+(?:[a-z][\w-]*\s+){0,2}|[a-z][\w]*-[\w-]+\s+)?[A-Z][\w&.+-]*"
                    r"(?:\s+(?:[A-Z]|\d)[\w&.+-]*){0,3}(?:\s+[a-z][\w-]*)?['’]s\s+[a-z]")
"""A fragment that opens with a name's possessive: "single-dataset DPR's top-20 accuracy on SQuAD", "Self-RAG
7B's citation precision on ASQA", "the ORQA baseline's exact match"."""
_FRAME_LEAD = re.compile(r"^(?:In|According to|Per)\s+[^,?]{3,80},\s*")
"""Where the previous question said to look: "In the retrieval accuracy table, ", "Per the 10-K, "."""
_STATED_SUBJECT = re.compile(r"([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){0,3})\s+(?:is|was|also|has|had|reported|"
                             r"booked|owns|operates|makes|sells|acquired|bought)\b")
"""The named subject a statement before a question opens with ("Garan is another apparel business …")."""
_SUBORDINATE = re.compile(r"^(when|if|while|once)\s+(?!(?:is|are|was|were|do|does|did|will|can|could|would|"
                          r"should|has|have|had)\b)", re.I)
"""A clause that follows a question ("when it's trained on gold passages"), not a "when" question."""
_TRAINED_IT = re.compile(r"\b(?:it(?:['’]s|\s+is|\s+was)|(?:is|was)\s+it)\s+"
                         r"(?:trained|fine-tuned|pre-?trained|initiali[sz]ed|distilled)\b", re.I)
""""it" as a model that is trained: a paper named for its model ("the DPR paper") then means the model."""
_INTRODUCED = re.compile(r"\b(?!(?:is|was|has|does|as|its|this|thus|us|yes|less|unless|always|plus|across|"
                         r"perhaps|versus|whereas)\b)[a-z]{3,}(?:s|ed)\s+(a|an|another|the)\s+"
                         r"((?:(?!(?:that|which|who|with|in|on|for|to|from|and|by|as|at|when)\b)[\w-]+\s+){0,3}?"
                         r"(?!(?:that|which|who|with|in|on|for|to|from|and|by|as|at|when)\b)[\w-]+"
                         r"(?:\s+of\s+(?:[a-z][\w-]*\s+)?[a-z][\w-]*)?)(?=\s+(?:that|which|who|with|in|on|for|to|"
                         r"from|and|by|as|at|when)\b|[.,;:!]|$)")
"""The thing a statement's verb brings in ("mentions a regular polygon that …", "proposed another way of
splitting documents", "discusses the Paris Agreement"): what "it" in the question after it means."""
_SAME_YEAR_TWICE = re.compile(r"\b((?:in|during|for)\s+(?:19|20)\d\d)\s+\1\b")
"""A year phrase said twice in a row ("in 2024 in 2024"): "that year" where the question had its year."""



def _trained_model(name: str, asked: str) -> str:
    """``name``, or the model a paper is named for ("DPR" for "the DPR paper") when ``asked`` trains "it"."""
    model = re.fullmatch(r"the (\S+) paper", name)
    return model.group(1) if model and _TRAINED_IT.search(asked) else name


class ContextualizeMixin(AnsweredMixin):
    """The offline engine's contextualize_question judgment."""

    def _antecedent(self, history: Sequence[Turn], question: str) -> tuple[str | None, int | None]:
        """(the main name of the latest earlier turn that has names ``question`` lacks, its 1-based turn).

        Of that turn's names, the one most earlier turns mention, then a possessor, then not a corpus word.
        """
        asked = [history[k].understood().lower() for k in range(len(history))]
        # agreement in number: "its" never means "PBOs" ("How much do its subsidiaries …")
        singular = bool(_SINGULAR_REF.search(question)) and not _PLURAL_REF.search(question)
        for n in range(len(history), 0, -1):
            text = history[n - 1].understood()
            head = asked_phrase(text)  # "Which API did …": the API is what was asked, not the topic
            names = list(dict.fromkeys(t for t in owners(text) + topics(text)
                                       if t.lower() not in question.lower() and t not in head
                                       and not (singular and PLURAL_ACRONYM.fullmatch(t))
                                       and not YEARS_ONLY.fullmatch(t)))
            names = _besides_filing(names, text)
            paper = _PAPER.search(text)
            # "… of MPT-30B-Instruct in the Lost in the Middle paper": the paper only says where to look, and
            # "it" is the model
            others = self._besides_paper(names, paper) if paper and _IT_ONLY.search(question) and \
                not _PLURAL_REF.search(question) and _FRAMING.search(text, 0, paper.start()) else []
            where = bool(others)
            if where:
                names = others
            elif paper and paper.group(1).lower() not in question.lower():
                return f"the {paper.group(1)} paper", n  # the turn asked about a paper: it is the topic
            work = None if where else _DOCUMENT_NP.search(text)
            if work and work.group(0).lower() not in question.lower():
                return work.group(0), n  # "the hallucination mitigation survey", "the RAG survey": a work
            if names:
                # the conversation's topic: the name most turns ask about, then the possessor, then a name
                # rather than a word the corpus uses everywhere ("LLM", "Wikipedia"), then the first one
                best = max(names, key=lambda t: (sum(t.lower() in a for a in asked), t in owners(text),
                                                 not all(self.common_word(w) for w in t.split()),
                                                 -names.index(t)))
                if re.search(rf"\b{re.escape(best)}\s+et\s+al\.", text):
                    best += " et al."  # "Lewis et al.": the authors, whom "they" means
                return best, n
        return None, None

    def _besides_paper(self, names: list[str], paper: re.Match) -> list[str]:
        """``names`` without the paper's title (cut at "in the …" of it), leaving out corpus words."""
        cut = dict.fromkeys(re.split(r"\s+(?:in|of|from)\s+the\s+", t)[0] for t in names
                            if t.lower() not in paper.group(0).lower())
        return [t for t in cut if not paper.group(1).lower().startswith(t.lower())
                and not all(self.common_word(w) for w in t.split())]

    def _vague(self, question: str) -> bool:
        """No name and only common content words: the question leaves its topic implied."""
        weights = self.weighted_terms(question)
        return bool(weights) and not topics(question) and \
            all(w < _COMMON_QUESTION_AT for _, w in weights.values())

    def contextualize(self, question: str, history: Sequence[Turn]) -> StandaloneQuestion:
        """``question`` as a standalone question, given the thread's earlier turns (oldest first).

        A courtesy prefix is stripped; an ellipsis is filled in from the previous question; references are
        resolved to the latest name (or counted noun phrase) they can mean; a self-contained question is
        returned unchanged. The reasoning says what was done and from which 1-based turn.
        """
        asked, courtesy = strip_courtesy(question, short=bool(history))
        done = [f"dropped the courtesy “{courtesy}”"] if courtesy else []
        previous = history[-1].understood() if history else ""
        bare = asked.strip().rstrip("?.! ")
        if previous and (ones := _ONES_THEN.match(bare)):  # "Which ones made that list in 2022?"
            return self._fill_ellipsis(ones.group(1), previous, len(history), history, done)
        m = _ELLIPSIS.match(bare)
        fragment = (m.group(1) or m.group(2) or m.group(3) or "").strip() if m else \
            (bare if _is_fragment(bare) else "")
        if fragment and previous and (clause := _SUBORDINATE.match(fragment)) and \
                (cut := re.search(rf",?\s+{clause.group(1)}\s", previous.rstrip("?.! "), re.I)):
            # "And when it's trained on gold passages?": the previous question with its "when" clause replaced
            standalone = f"{previous[:cut.start()]} {fragment}?"
            done.append(f"filled the ellipsis from turn {len(history)} (“{previous}”), replacing its "
                        f"“{clause.group(1).lower()}” clause")
            return StandaloneQuestion(question=standalone, reasoning="; ".join(done)[:1].upper()
                                      + "; ".join(done)[1:] + ".").with_carry([], len(history))
        if fragment and previous:
            # "And according to the same table, what was …": a framing phrase, then a whole question
            framed = main_clause(fragment)
            if _CLAUSE_START.match(fragment) or _WHOLE_CLAUSE.match(fragment) or (
                    framed != fragment[:1].upper() + fragment[1:] and _CLAUSE_START.match(framed)):
                asked = fragment[:1].upper() + fragment[1:] + "?"  # "And how is it trained?"
                done.append("dropped the leading conjunction")
            elif fragment:
                return self._fill_ellipsis(fragment, previous, len(history), history, done,
                                           as_subject=bool(m and m.group(3)))
        if previous:  # "such events", "that table": the last turn's phrase with that head
            asked, read = _such_refs(asked, previous)
            asked, parts = _part_refs(asked, previous)
            done += [f"read “{said}” as “{meant}” from turn {len(history)}" for said, meant in read + parts]
        standalone, carried, turn = self._resolve(asked, history)
        standalone = standalone[:1].upper() + standalone[1:]
        if carried:
            done.append(f"resolved “{carried[1]}” to “{carried[0]}” from turn {turn}")
        elif history and standalone != asked[:1].upper() + asked[1:]:  # "that year", "the hospital"
            what = "the year" if re.search(r"\b(?:that|the same)\s+year\b", asked, re.I) else "a name"
            done.append(f"read {what} from turn {len(history)}")
        elif history and self._vague(asked) and not _SINGULAR_REF.search(asked):
            paper = _latest_paper(history)
            # the conversation's paper, when one of the last two turns names it, rather than a word of the
            # last turn ("the LLM" in "what phrase should the LLM return")
            name, turn = paper if paper and paper[1] >= len(history) - 1 else self._antecedent(history, asked)
            if name:
                standalone = _with_topic(asked, name)
                carried = (name, "")
                done.append(f"names no topic of its own, so it asks about “{name}” from turn {turn}")
        if not done:
            return StandaloneQuestion(question=question, reasoning=(
                "Stands alone: it refers to no earlier turn"
                + (f" and names its own topic ({', '.join(topics(question)[:3])})." if topics(question)
                   else ".")))
        return StandaloneQuestion(question=standalone, reasoning="; ".join(done)[:1].upper()
                                  + "; ".join(done)[1:] + ".").with_carry(
            [carried[0]] if carried else [], turn if carried else None)

    def _resolve(self, asked: str, history: Sequence[Turn]
                 ) -> tuple[str, tuple[str, str] | None, int | None]:
        """Replace the references of ``asked``; returns (text, (name, reference) or None, turn or None).

        A statement before the question in the same turn is its nearest antecedent: "BNSF also issued
        debentures in 2024. In what year do they mature?" asks about the debentures (turn len(history) + 1).
        """
        refs = [r for r in list(_SINGULAR_REF.finditer(asked)) + list(_PLURAL_REF.finditer(asked))
                if not refers_inside(asked, r.start())]
        if refs and (stated := PREAMBLE.match(asked)) is not None:
            return self._resolve_after(stated.group(1), stated.group(2), history)
        if not history:
            return asked, None, None
        asked = _same_year(_head_noun_refs(asked, history[-1].understood()), history[-1].understood())
        if (resolved := self._from_previous(asked, history)) is not None:
            return resolved
        if not refs:
            return asked, None, None
        found, turn = self._meant(asked, history, refs)
        if found is None or turn is None:
            return asked, None, None
        name = _trained_model(found, asked)
        before = history[turn - 1].understood()
        plural = _plural_focus(before, name) or name
        named = f"the {name}" if re.search(rf"\bthe\s+{re.escape(name)}\b(?!['’]|\s+[a-z])", before) else name

        authors = _authors(name, named)

        def swap(m: re.Match) -> str:
            if refers_inside(asked, m.start()):
                return m.group(0)
            ref = m.group(0).lower()
            if ref == "they" and authors and "authors" not in plural and acts(asked, m):
                return authors  # "Which dump do they use?" after a question about a paper
            if ref in ("they", "them", "their", "theirs") and plural == name and _WORK.search(name):
                return m.group(0)  # agreement in number: "replacing them" never means "the survey"
            return _replacement(ref, name, named, plural)

        text = _PLURAL_REF.sub(swap, _SINGULAR_REF.sub(swap, asked))
        if text == asked:
            return asked, None, None
        text = _same_year(text, before)
        said = refs[0].group(0)
        meant = plural if _PLURAL_REF.fullmatch(said) and said.lower() in ("they", "them") else name
        if said.lower() == "they" and authors and authors in text and authors not in asked:
            meant = authors  # the reasoning names what "they" became
        return text, (meant, said), turn

    def _from_previous(self, asked: str, history: Sequence[Turn]
                       ) -> tuple[str, tuple[str, str] | None, int | None] | None:
        """``asked`` with a phrase of the previous turn in place of its reference, or None.

        The measure "it" means before a verb of change, a name a definite description points to ("the
        company"), the thing "how much of that" is part of.
        """
        if (part := _changed_measure(asked, question_part(history[-1].understood()))) is not None:
            return part[0], part[1], len(history)
        if (resolved := self._to_named(asked, history)) is not None:
            return resolved
        if (part := _part_of_previous(asked, history[-1].understood())) is not None:
            return part[0], part[1], len(history)
        return None

    def _meant(self, asked: str, history: Sequence[Turn], refs: list[re.Match]
               ) -> tuple[str | None, int | None]:
        """(the name ``refs`` of ``asked`` mean, its 1-based turn); (None, None) when there is none."""
        name, turn = _users_paper(history, asked, refs) or self._antecedent(history, asked)
        if any(re.fullmatch(r"(?:the|this|that)\s+paper|the\s+authors", r.group(0), re.I) for r in refs):
            # "the paper" is a paper, not its author, nor a name of the latest turn ("Google Scholar"); "the
            # authors" wrote one (not "LongChat-13B", a model the last turn asked about)
            name, turn = _latest_paper(history) or _latest_work(history) or (name, turn)
        return name, turn

    def _resolve_after(self, statement: str, query: str, history: Sequence[Turn]
                       ) -> tuple[str, tuple[str, str] | None, int | None]:
        """:meth:`_resolve` for a turn that states ``statement`` before it asks ``query``."""
        thing = _OBJECT_PLURAL.search(statement)
        if re.match(r"\s*where\b", query, re.I):  # "Where are they?": the places named, not the object
            thing = _PLACED_PLURAL.search(statement) or thing
        they = re.search(r"\b(?:they|them)\b", query, re.I)
        if thing and they and not refers_inside(query, they.start()):
            # agreement in number: "they" is the plural noun the statement is about ("debentures")
            noun = f"the {thing.group(1)}"
            return (f"{statement} {query[:they.start()]}{noun}{query[they.end():]}",
                    (noun, they.group(0)), len(history) + 1)
        said, said_carried, said_turn = self._resolve(statement, history)  # "Two of its authors are …"
        it = re.search(r"\b(?:it|its)\b", query, re.I)
        subject = _STATED_SUBJECT.match(statement)
        introduced = _INTRODUCED.search(statement)
        name = None
        if it and not they and not refers_inside(query, it.start()):
            if subject:  # "Garan is another apparel business in that group. Under which trademarks does it
                name = subject.group(1)  # sell?": the statement's subject, the nearest name
            elif introduced:  # "… the document mentions a regular polygon that …. How many sides does it
                # have?": the thing the statement brings in ("another way" is "the other way")
                article = "the other" if introduced.group(1).lower() == "another" else "the"
                name = f"{article} {introduced.group(2)}"
        if it and name:
            text = query[:it.start()] + _replacement(it.group(0).lower(), name, name, name) + query[it.end():]
            return f"{said} {text}", said_carried or (name, it.group(0)), said_turn if said_carried \
                else len(history) + 1
        text, carried, turn = self._resolve(query, [*history, Turn(question=said)])
        return f"{said} {text}", said_carried or carried, said_turn if said_carried else turn

    def _fill_ellipsis(self, fragment: str, previous: str, turn: int, history: Sequence[Turn],
                       done: list[str], as_subject: bool = False) -> StandaloneQuestion:
        """The previous question with the slot ``fragment`` names replaced (see the module docstring).

        ``as_subject``: the fragment is the subject ("How does BART do there?"), so it fills that slot first.
        """
        prev = previous.strip().rstrip("?.! ")
        owner = _contrasted(prev, [t.understood() for t in history[:-1]])
        resolved, _, _ = self._resolve(fragment, history)
        frag = without_anaphora(re.sub(r"^back\s+(?=(?:in|during)\s)", "", resolved.strip().rstrip("?.! "),
                                       flags=re.I))
        named = re.fullmatch(r"([A-Z][\w.+-]*)['’]s", frag)  # "And RAG-Token's?": the name's slot
        out, how = (subject_slot(frag, prev) if as_subject else None) or measure_slot(fragment, prev) or \
            fill_slot(frag, prev, owner) or (named and fill_slot(named.group(1), prev, owner)) or (None, "")
        own = _OWN_MEASURE.match(frag) if out is None else None
        if out is None and (own or _OWNED.match(frag)):
            # a question of its own, under the previous question's filing or frame: "How about Occidental's
            # total assets as of September 30, 2024?" ("In Berkshire Hathaway's 2024 10-K, "), "And
            # single-dataset DPR's top-20 accuracy on SQuAD?" ("In the retrieval accuracy table, ", asked in
            # the previous question's tense)
            lead = (_FILING_LEAD if own else _FRAME_LEAD).match(prev)
            verb = ("were" if own.group(1).endswith("s") else "was") if own else \
                "is" if re.search(r"\b(?:is|are|does|do|has|have)\b", prev, re.I) else "was"
            out, how = f"{lead.group(0) if lead else ''}what {verb} {frag}", f"asked about “{frag}” alone"
        if out is None:  # a noun phrase the previous question has no slot for
            paper = _PAPER.search(prev)
            topic = f"the {paper.group(1)} paper" if paper else owner  # "the second model" of that paper
            subject = f" of {topic}" if topic and topic.lower() not in frag.lower() else ""
            out = f"What about {frag}{subject}"
            how = f"asked about “{frag}”" + (f" of “{topic}”" if subject else "")
        out = _SAME_YEAR_TWICE.sub(r"\1", out)  # "its … that year" in a question that has its year already
        standalone = out[:1].upper() + out[1:] + "?"
        done.append(f"filled the ellipsis from turn {turn} (“{previous}”), replacing {how}"
                    if not how.startswith("asked") else f"read the ellipsis against turn {turn}: {how}")
        text = "; ".join(done)
        reasoning = text[:1].upper() + text[1:] + "."
        return StandaloneQuestion(question=standalone, reasoning=reasoning).with_carry(
            [owner] if owner else [], turn)
