"""generate for the offline engine: query-focused extraction of sentences and table rows, cited ``[n]``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rag.answer_spans import holds
from rag.answer_types import SPAN_TYPES, affiliation, expected_type, is_authorship, persons
from rag.engines.aliases import expand
from rag.engines.base import Answer
from rag.engines.benchmarks import benchmark_cells
from rag.engines.cited import Passage, cited_answer
from rag.engines.lexical import (
    Constraint,
    LexicalCore,
    _names,
    _same_text,
    constraints,
)
from rag.engines.passages import (
    HEAD_WORDS,
    _boilerplate,
    _dangling,
    _labelled,
    _quotable,
    _tabular,
    cut_head,
    without_marks,
)
from rag.engines.tables import figure_row, table_rows
from rag.models import Chunk, Turn
from rag.text import STOPWORDS, sentences, terms

MAX_ANSWER_SENTENCES = 4
BRIDGE_FOLLOW = 2.0
"""Weight (times its IDF) of a name that an already chosen passage introduced, when a further
passage continues from it (chosen on HotpotQA dev, questions 1-100: Full answer_hit 0.68 at
0.5, 0.69 at 1, 0.70 at 2, 0.66 at 3)."""
LINE_TYPES = frozenset({"person", "organisation", "place", "number", "date", "acronym"})
"""Answer types a single line of a table or signature block can hold (see ``_line_candidates``)."""
FRONT_MATTER_CHARS = 800
"""How much of a document's first chunk is read as its front matter (title and author line)."""
MAX_AUTHORS = 8
STRONG_SENTENCE_AT = 0.5
"""A sentence covering this share of the question is worth quoting even if it adds no new term."""
CONTEXT_SHARE = 0.5
"""The weight of a question's name only a typed candidate's chunk holds (set by reasoning, not tuned)."""


_CODE = re.compile(r"[@{}`=<>|#/\\]")
"""Characters of a line of code, never quoted as a sentence cut by its chunk's edge."""
TAIL_WORDS = 10
"""Words the end of a sentence cut by a chunk's start must have to be quoted (with a leading "…")."""


class ExtractionMixin(LexicalCore):
    """Extractive, query-focused answers (see :meth:`generate`)."""

    @staticmethod
    def _readable(sentence: str) -> bool:
        if not 30 <= len(sentence) <= 500:
            return False
        letters = sum(ch.isalpha() for ch in sentence)
        digits = sum(ch.isdigit() for ch in sentence)
        # prose, or prose about figures ("PCC’s revenues were $10.4 billion in 2024, …"): a table line's
        # figures are read as rows instead (_tabular)
        return ((letters / len(sentence) >= 0.6 or (letters >= 0.45 * len(sentence)
                                                   and letters + digits >= 0.65 * len(sentence)))
                and len(sentence.split()) >= 5)

    def generate(self, question: str, chunks: Sequence[Chunk],
                 on_token: Callable[[str], None] | None = None, *, history: Sequence[Turn] = (),
                 critique: bool = False) -> Answer:
        """Extractive, query-focused answer.

        The passages (sentences and table rows) that hold the question's constraints and most of its terms,
        chosen greedily for new question-term coverage (maximal marginal relevance, Carbonell & Goldstein
        1998), each cited ``[n]``.

        Boilerplate (headings, "In the following…", figure and table captions, reference-list
        entries) is never quoted. For "how many/how much" questions, table rows whose label
        matches the question are candidates too, read with their column header ("2024: $
        88,995"). The text is :data:`rag.engines.cited.EXTRACTIVE_LABEL`, a lead passage (the one that best
        holds the kind of answer asked for), then up to 3 further key passages. With ``critique`` (the answer
        check is on: Self-RAG's critique-guided selection, Asai et al. 2023), a lead the answer check would
        reject gives way to the best candidate passage it would accept (:meth:`acceptable`), if any.

        Citation numbers are 1-based in order of first use. An empty ``chunks`` gives an
        answer that says there is no evidence, with no citations. ``on_token`` receives the
        answer once, whole (an extractive answer has nothing to stream).
        """
        answer = self._extract(question, chunks, critique=critique)
        if on_token is not None and answer.text:
            on_token(answer.text)
        return answer

    def _candidates(self, question: str, chunks: Sequence[Chunk]) -> list[Passage]:
        weights = self.weighted_terms(question)
        q_seq = [t for t in terms(question) if t in weights]
        q_pairs = set(zip(q_seq, q_seq[1:], strict=False))
        cons = constraints(question)
        name_terms = {t for c in cons if c.kind != "number" for t in c.terms}
        authors = is_authorship(question)
        short = self.aliases(question, (c.text for c in chunks), (c.doc_sha for c in chunks))
        out: list[Passage] = []
        for rank, chunk in enumerate(chunks):
            # a sentence is read in the context of its passage: the names the chunk holds
            # ("RAG" in a chunk about RAG) count as held; numbers must be in the sentence
            chunk_seq = expand(terms(without_marks(chunk.text)), short)
            context = frozenset(t for t in chunk_seq if t in name_terms)
            head = self.head_names(question, chunk)
            context |= head
            # the names the chunk holds as names (every word, together), for the answer check's lead test
            named = {t for c in cons if c.kind != "number" and c.held_whole(chunk_seq)
                     for t in c.terms} | head
            if named:
                self.held_memo.add(question, {chunk.id: tuple(sorted(named))})
            about = frozenset(terms(f"{chunk.source} {chunk.title}"))
            sents = sentences(chunk.text)
            for pos, raw in enumerate(sents):
                sent = _quotable(raw)
                if pos == 0 and chunk.index > 0 and re.match(r"[a-z]", sent) and sent[-1:] in ".!?" \
                        and len(sent.split()) >= TAIL_WORDS and pos < len(sents) - 1 \
                        and not _CODE.search(sent):  # prose, not a line of code
                    sent = f"… {sent}"  # the end of a sentence the chunk boundary cut: quoted as a tail
                elif pos == len(sents) - 1 and pos > 0 and sent[-1:] not in ".!?" and sent[:1].isupper() \
                        and len(sent.split()) >= HEAD_WORDS and not _CODE.search(sent):
                    sent = cut_head(sent)  # the start of a sentence the chunk's end cut: quoted with "…"
                cut_off = (bool(re.match(r"[(\[;,]*[a-z]", sent))  # "(approximately 13.2% of revenues); …"
                           or (pos == len(sents) - 1 and sent[-1:] not in ".!?…")
                           # "… of queries in the dataset are"
                           or (sent[-1:].isalpha() and sent.split()[-1].lower() in STOPWORDS))
                if not self._readable(sent) or _boilerplate(sent) or _tabular(sent):
                    continue  # boilerplate answers nothing; table lines glued into a "sentence" are rows
                if cut_off and _CODE.search(sent):
                    continue  # a piece of a line of code is never quoted
                if cut_off:  # chunk edges and line breaks cut sentences in two: a piece, quoted as one
                    sent = sent if sent.startswith("…") or sent[:1].isupper() else f"… {sent}"
                    sent = sent if sent[-1:] in ".!?…" else cut_head(sent)
                seq = expand(terms(sent), short)
                pairs = q_pairs & set(zip(seq, seq[1:], strict=False))
                bonus = sum(weights[a][1] + weights[b][1] for a, b in pairs) / 2
                out.append(Passage(rank, pos, sent, frozenset(seq), bonus, len(terms(sent)), sent,
                                   context, about, head, fragment=cut_off))
            if authors and chunk.page == 1 and chunk.index == 0 and chunk.origin == "kb":
                # front matter: the author line, read as the list of names it holds
                names = persons(chunk.text[:FRONT_MATTER_CHARS], question, self.common_word)
                if names:
                    more = " and others" if len(names) > MAX_AUTHORS else ""
                    text = ", ".join(names[:MAX_AUTHORS]) + more
                    held_terms = frozenset(terms(chunk.text[:FRONT_MATTER_CHARS]))  # the title's words
                    out.append(Passage(rank, -1, text, held_terms, 0.0, len(names), None, context, about,
                                       head))
            rows = table_rows(chunk.text, question) + benchmark_cells(chunk.text, question)
            for pos, (text, header_terms) in enumerate(rows):
                seq = terms(text)
                pairs = q_pairs & set(zip(seq, seq[1:], strict=False))
                bonus = sum(weights[a][1] + weights[b][1] for a, b in pairs) / 2
                out.append(Passage(rank, 1000 + pos, text, frozenset(seq) | header_terms,
                                   bonus, len(seq), None, context, about, head))
        return out

    def _extract(self, question: str, chunks: Sequence[Chunk], *, critique: bool = False) -> Answer:
        """The extractive answer of :meth:`generate` (without streaming)."""
        if not chunks:
            return Answer(text="I found no evidence to answer this question.", citations=[])
        cons = constraints(question)
        kind = expected_type(question)

        predicate = self.predicate(question)

        def fits(p: Passage) -> bool:
            # a table row's figures are its label's by construction: no nearness to test
            return holds(p.text, kind, question, self.common_word,
                         None if p.quote is None else predicate, self.alias_memo.get(question)) is not None

        def held(p: Passage) -> float:
            return p.held_share(cons)

        candidates = self._candidates(question, chunks)
        fragments = [p for p in candidates if p.fragment]
        candidates = [p for p in candidates if not p.fragment]
        if kind in LINE_TYPES:
            candidates += [p for p in self._line_candidates(question, chunks) if fits(p)]
        chosen = self._choose(question, candidates, fits, held)
        if chosen and kind is not None and not any(fits(p) for p in chosen):
            # the next candidate passage: the best one that holds the type asked for leads instead
            spare = self._typed_candidate(question, [p for p in candidates if p not in chosen], fits, held)
            if spare is not None:
                chosen = [spare, *chosen[:MAX_ANSWER_SENTENCES - 1]]
        if not chosen and kind is not None:
            # no passage holds the question's terms: one that holds the type asked for still may
            spare = self._typed_candidate(question, candidates, fits, held)
            chosen = [spare] if spare is not None else []
        if not chosen:
            first = self._best_line(question, chunks) or self._first_readable(chunks)
            if first is None:
                return Answer(text="The retrieved passages contain no readable sentence to quote.",
                              citations=[])
            chosen = [first]
        # The lead: the chosen passage that best holds what was asked (constraints, answer kind).
        # Among those, the first chosen (the best at the time it was chosen).
        names = [c for c in cons if c.kind == "entity"]
        lead = max(chosen, key=lambda p: (fits(p), held(p), _exact(p.text, names), -chosen.index(p)))
        if critique:
            lead, chosen = self._critiqued(question, lead, chosen, candidates, fits, held, chunks, fragments)
        rest = sorted((p for p in chosen if p is not lead), key=lambda p: (p.rank, p.pos))
        return cited_answer(lead, rest, chunks)

    def _critiqued(self, question: str, lead: Passage, chosen: list[Passage],
                   candidates: Sequence[Passage], fits: Callable[[Passage], bool],
                   held: Callable[[Passage], float],
                   chunks: Sequence[Chunk] = (),
                   fragments: Sequence[Passage] = ()) -> tuple[Passage, list[Passage]]:
        """(lead, chosen) after the answer check's critique.

        A lead the check would reject gives way to the best candidate it would accept (the type asked for,
        every constraint, LEAD_USEFUL_AT of the question). When none would, to the best piece of a sentence
        (``fragments``: "… which results in 21,015,324 passages in the end") that holds the type asked for
        near the question's words and every constraint; and when none does, the lead of a question about a
        figure gives way to a table row labelled with the question's own words
        (:func:`rag.engines.tables.figure_row`). The check judges it like any lead: when nothing near its
        figures says which column is asked for, it still fails and the answer ends with a caveat, but it
        quotes the row's figures.
        """
        kind = expected_type(question)

        def accepted(p: Passage) -> bool:
            return ((kind is None or fits(p)) and held(p) == 1.0
                    and self.acceptable(question, p.text, kind, assembled=p.quote is None,
                                        held=p.head))

        if kind not in SPAN_TYPES or accepted(lead):
            return lead, chosen
        better = self._typed_candidate(question, [p for p in candidates if accepted(p)], lambda p: True, held)
        if better is None:
            better = self._typed_candidate(question, [p for p in fragments if held(p) == 1.0], fits, held)
        if better is None and kind == "number":
            better = self._figure_row(question, chunks, held)
        if better is None:
            return lead, chosen
        rest = [p for p in chosen if not _same_text(p.text, better.text)]
        return better, [better, *rest][:MAX_ANSWER_SENTENCES]

    def _choose(self, question: str, candidates: Sequence[Passage],
                fits: Callable[[Passage], bool], held: Callable[[Passage], float]) -> list[Passage]:
        """Up to MAX_ANSWER_SENTENCES passages chosen greedily for new question-term coverage."""
        weights = self.weighted_terms(question)
        total = sum(w for _, w in weights.values()) or 1.0
        chosen: list[Passage] = []
        covered: set[str] = set()
        bridge: dict[frozenset[str], tuple[float, int]] = {}
        """The names chosen passages introduce (the question's bridge entities), as their terms
        not in the question, with their rarest term's IDF and the rank of the chunk that named
        them: a passage of another chunk that continues from one (names it, or is about it) may
        hold the second hop's answer."""

        def follow(p: Passage) -> float:
            have = p.stems | p.about
            held = [w for name, (w, r) in bridge.items()
                    if r != p.rank and len(name & have) >= -(-2 * len(name) // 3)]
            return BRIDGE_FOLLOW * max(held, default=0.0)

        def gain(p: Passage) -> float:
            # New question terms count fully, repeated ones a quarter, a question phrase found
            # verbatim half, a bridge name from a chosen passage a share; constraints held and
            # the kind of answer asked for add to it; long sentences are diluted; later-ranked
            # chunks lose a little.
            new = sum(weights[s][1] for s in p.stems & weights.keys() - covered)
            old = sum(weights[s][1] for s in p.stems & covered)
            base = (new + 0.25 * old + 0.5 * p.bonus + follow(p)) / total
            return (base * (0.5 + 0.5 * held(p)) * (1.25 if fits(p) else 1.0)
                    / (1 + p.length / 40) - 0.01 * p.rank)

        def worth(p: Passage) -> bool:
            # something new, strongly on-topic on its own, or the next hop of the kind asked for
            if follow(p) > 0 and fits(p):
                return True
            if not p.stems & weights.keys():
                return False
            own = sum(weights[s][1] for s in p.stems & weights.keys())
            return (not chosen or bool(p.stems & weights.keys() - covered)
                    or own / total >= STRONG_SENTENCE_AT)

        pool = list(candidates)
        while len(chosen) < MAX_ANSWER_SENTENCES:
            eligible = [p for p in pool if worth(p)]  # a later bridge may make a passage worth it
            if not eligible:
                break
            best = max(eligible, key=gain)
            pool.remove(best)
            if any(_same_text(best.text, c.text) for c in chosen):
                continue  # overlapping chunks repeat sentences
            chosen.append(best)
            covered |= best.stems & weights.keys()
            for name in _names(best.text):
                key = frozenset(set(terms(name)) - weights.keys())
                if key and key not in bridge:  # "Shirley Temple", not every "Marin"
                    bridge[key] = (max(self.stats.idf(st) for st in key), best.rank)
        return chosen

    def _line_candidates(self, question: str, chunks: Sequence[Chunk]) -> list[Passage]:
        """Lines of ``chunks``, alone and with the next line, as passages.

        A table of officers or a signature block puts one fact on a line ("Marc D. Hamburg 75 Senior
        Vice-President – Chief Financial Officer 1992"), which sentence splitting glues to its neighbours;
        read line by line it is a short passage that holds a name near its role.
        """
        weights = self.weighted_terms(question)
        out: list[Passage] = []
        for rank, chunk in enumerate(chunks):
            head = self.head_names(question, chunk)
            context = frozenset(t for t in terms(chunk.text) if t in weights) | head
            about = frozenset(terms(f"{chunk.source} {chunk.title}"))
            lines = [" ".join(line.split()) for line in chunk.text.splitlines() if line.strip()]
            for pos, line in enumerate(lines):
                for text in (line, f"{line} {lines[pos + 1]}" if pos + 1 < len(lines) else "",
                             *_labelled(lines, pos)):
                    text = _quotable(text)
                    if not 15 <= len(text) <= 300 or _boilerplate(text) or _dangling(text):
                        continue
                    seq = terms(text)
                    out.append(Passage(rank, 2000 + pos, text, frozenset(seq), 0.0, len(seq), text,
                                       context, about, head))
        return out

    def _figure_row(self, question: str, chunks: Sequence[Chunk],
                    held: Callable[[Passage], float]) -> Passage | None:
        """The first table row of ``chunks`` labelled with the question's words (:func:`figure_row`), or None.

        Only a row whose chunk holds every constraint of the question; of those in the best-ranked chunk, the
        one with the longest label.
        """
        asked = set(terms(question))
        rows = []
        for rank, chunk in enumerate(chunks):
            flat = (" ".join(x.split()) for x in chunk.text.splitlines())
            lines = [(pos, line) for pos, line in enumerate(flat) if figure_row(line, asked) is not None]
            if lines:  # the chunk's terms and head are read only for a chunk with such a row
                context = frozenset(terms(chunk.text)) | self.head_names(question, chunk)
                rows += [Passage(rank, 3000 + pos, line, frozenset(terms(line)), 0.0, len(terms(line)), line,
                                 context) for pos, line in lines]
        rows = [p for p in rows if held(p) == 1.0]
        return min(rows, key=lambda p: (p.rank, -len(p.stems)), default=None)

    def _typed_candidate(self, question: str, pool: Sequence[Passage], fits: Callable[[Passage], bool],
                         held: Callable[[Passage], float]) -> Passage | None:
        """The best passage of ``pool`` that holds the answer type, or None.

        It must share a question term, and ranks by constraints held, stating the year asked about, then
        IDF-weighted question coverage per length, then chunk rank.
        """
        weights = self.weighted_terms(question)
        total = sum(w for _, w in weights.values()) or 1.0
        years = re.findall(r"\b(?:19|20)\d\d\b", question)

        def score(p: Passage) -> tuple[float, bool, float]:
            # names only its chunk holds count half ("NICO Primary and BHHC are each based in Omaha" is not
            # about BHSI); a passage stating the year asked about beats a line whose table header has it
            own = sum(weights[s][1] for s in p.stems & weights.keys())
            borrowed = sum(weights[s][1] for s in (p.context - p.stems) & weights.keys())
            cov = (own + CONTEXT_SHARE * borrowed) / total
            dated = not years or any(re.search(rf"\b{y}\b", p.text) for y in years)
            return held(p), dated, cov / (1 + p.length / 40) - 0.01 * p.rank

        # a passage shares a question term; an affiliation line may share it through its chunk's names (the
        # front matter names the paper, its affiliation line none of the question's words)
        where = affiliation(question) is not None
        typed = [p for p in pool
                 if fits(p) and (p.stems | (p.context if where else frozenset())) & weights.keys()]
        return max(typed, key=score) if typed else None

    def _best_line(self, question: str, chunks: Sequence[Chunk]) -> Passage | None:
        """The line of ``chunks`` that holds most of the question's IDF weight, or None when none holds any.

        Pages of code, tables and lists (Markdown documentation) may hold no sentence to quote; an answer
        that quotes nothing cites nothing, and the run abstains.
        """
        weights = self.weighted_terms(question)
        scored = [(sum(weights[s][1] for s in p.stems & weights.keys()), -p.rank, p)
                  for p in self._line_candidates(question, chunks)]
        best = max(scored, key=lambda t: (t[0], t[1]), default=None)
        return best[2] if best is not None and best[0] > 0 else None

    def _first_readable(self, chunks: Sequence[Chunk]) -> Passage | None:
        """The first readable, non-boilerplate sentence of ``chunks``, or None."""
        return next((Passage(r, 0, s, frozenset(), 0.0, 0, s) for r, c in enumerate(chunks)
                     for s in map(_quotable, sentences(c.text))
                     if self._readable(s) and not _boilerplate(s)), None)


def _exact(text: str, names: Sequence[Constraint]) -> int:
    """How many of the question's names ``text`` mentions on their own, not as the start of a longer name.

    "Berkshire is domiciled …" names Berkshire; "Berkshire Hathaway Energy Company is …" names another
    company whose name starts with it.
    """
    return sum(bool(re.search(rf"\b{re.escape(c.text)}\b(?!['’]?\s+[A-Z])", text)) for c in names)

