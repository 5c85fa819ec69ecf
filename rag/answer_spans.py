"""Answer spans: where in a passage the kind of answer a question asks for is (see :mod:`rag.answer_types`).

:func:`holds` finds the span of a type (a figure with its scale, a date, a person's or any name, a place,
an acronym's expansion) near the question's other terms; grading, generation and the answer check all read
a passage through it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from rag.acronyms import acronym_of, expansion
from rag.answer_lists import enumeration, list_count
from rag.answer_types import (
    _DEFINES,
    _NOT_NAME,
    _PLACE_AFTER,
    AnswerType,
    _in_question,
    affiliation,
    counted_noun,
    main_clause,
    persons,
)
from rag.counted import _counts, _counts_own, counts_other
from rag.places import asks_region, place_names
from rag.quantities import QUANTITY_WORDS
from rag.text import STOPWORDS, axis_ticks, has_date, number_tokens, terms, words

Aliases = Mapping[str, tuple[str, ...]] | None  # short form -> its full name's index terms, or None

_FIGURE = re.compile(r"(?<![\w.])(?<![A-Za-z]-)\d(?:\.\d+)?[eE]-?\d+\b"  # "3e-5", "1e-4": a learning rate
                     r"|(?<![\w.])(?<![A-Za-z]-)[$€£]?\s?\(?\d[\d,]*(?:\.\d+)?\)?\s?"
                     r"(?:%|percent|million|billion|thousand|trillion|[kKMBT]\b)?"
                     r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
                     r"fifty|hundred|thousand|million|billion|dozen)\b", re.I)
_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_MONTH_BEFORE = re.compile(rf"\b{_MONTHS}\s+$")
"""A month name just before a figure: the figure is a day of a date ("December 31, 2022"), not a quantity."""
_HYPHEN_BEFORE = re.compile(r"[A-Za-z][\w.]*-$")
"""A word with a letter and a hyphen just before a figure: "Llama02-" of "Llama02-70B"."""
_HYPHEN_AFTER = re.compile(r"-[A-Z]")
"""A hyphen and a capital just after a figure: "-Eleven" of "7-Eleven", "-K" of "Form 10-K"."""
_CHANGED_BY = re.compile(r"\b(?:increased|decreased|rose|fell|declined|grew|dropped|increases?|decreases?|"
                         r"declines?|rises?|growth|gains?|up|down)\s+(?:(?:of|by|approximately|about|nearly|"
                         r"roughly|over)\s+){0,2}$", re.I)
"""A verb or noun of change just before a figure: "pre-tax earnings increased $331 million" gives the change,
not the earnings."""
_POINTS = re.compile(r"\s*(?:[\w-]+\s+){0,2}?(?:points?|pp|percentage\s+points?)\b", re.I)
"""A figure of points ("by 2.6 Bleu points", "4.5 absolute points"): a margin between two scores, not one."""
_CHANGE_CLAUSE = re.compile(r"\b(?:increased|decreased|increases|decreases|higher|lower|rose|fell|declined|"
                            r"grew|offset)\b", re.I)
"""A word of change in a sentence: its parenthesised figures are contributions to the change."""


def _in_change_parenthesis(text: str, at: int) -> bool:
    """True when the figure at ``at`` opens a parenthesis in a sentence of change.

    "increased earnings from Occidental … and Kraft Heinz ($240 million)" gives what Kraft Heinz added, not
    its earnings.
    """
    before = text[max(0, at - 400):at]
    if not re.search(r"\(\s*\$?\s*$", before):
        return False
    return bool(_CHANGE_CLAUSE.search(re.split(r"[.;]\s+(?=[A-Z])", before)[-1]))


_MEASURE_OF = re.compile(r"\b([a-z]+)\s+(?:of|=)\s*$")
"""The noun a figure is given for: "a batch size of 512", "k1 = 0.9"."""
_NUMBER_SIGN = re.compile(r"(?:\b(?:No|Nos|ID|Number)\.?|#)\s*$")
"""A number sign just before a figure: an identifier ("PCAOB ID No. 34", "#3"), not a quantity."""
_DATE_SPAN = re.compile(rf"\b{_MONTHS}\s+\d{{1,2}},?\s+(?:1[0-9]|20)\d\d\b|\b(?:1[0-9]|20)\d\d\b")
NEAR_TERMS = 6
"""Index terms (stop words left out) on each side of a typed span that count as near it."""
NEAR_AT = 0.5
"""The share of the question's predicate weight (its terms besides names, years and type cues) that must
occur near the typed span: "Marc D. Hamburg … Chief Financial Officer" is no answer to "who is the chief
executive officer", and "41,500 people" none to "how large was the float"."""


_RATIO = re.compile(r"(?:\bwhat\s+share|\bshare\s+(?:of|in)|\bmarket\s+share|\b(?:percentage|percent|"
                    r"proportion|fraction))\b(?!\s+(?:price|count|repurchase))|"
                    r"\b(?:tax|interest|growth|discount|error|success|retention|churn|default|vacancy|occupancy|"
                    r"utilization|participation|unemployment)\s+rate\b", re.I)
"""A question that asks for a part of a whole or a rate of one, which a percentage answers ("GEICO's share of
the market", "BNSF's effective income tax rate"; not a learning rate)."""
_SHIFT = re.compile(r"\b(?:an?|one|\d+(?:\.\d+)?)[\s-]*(?:percentage[\s-]points?|percent|%|basis[\s-]points?)"
                    r"[\s-]+(?:change|increase|decrease|rise|fall|drop|decline|shift|move)\b", re.I)
"""A hypothetical change the question supposes ("a one percentage point change in BI severities"): the figure
it asks for is what that change would do, not a percentage."""


_AMOUNT = re.compile(r"\b(?:revenues?|sales|earnings|income|profits?|assets|liabilities|expenses|costs?|cash|"
                     r"debt|premiums|dividends|capital expenditures|worth|value)\b", re.I)
"""A question that asks for an amount of money."""
_CHANGE = re.compile(r"\b(?:rate|growth|grow|change|changed|increase|increased|decrease|decreased|decline|"
                     r"declined|rise|rose|fall|fell|margin|return|yield|by how much)\b", re.I)
"""A question about an amount's change or rate, which a percentage answers."""


_NAMED = re.compile(r"\b(?:[A-Z][A-Za-z0-9&.-]*[A-Z0-9][A-Za-z0-9&.-]*|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*"
                    r"|[a-z][a-z0-9]*(?:-[a-z0-9.]+)*-(?!(?:19|20)\d\d\b)[a-z]*\d[a-z0-9.]*)\b")
"""A capitalised name, a word with two capitals or a capital and a digit ("BART", "GPT-3"), or a lower-case
model name ending in a version ("voyage-02", "text-embedding-ada-002"; not "mid-2024")."""


_MODEL_SIZE = re.compile(r"\d+(?:\.\d+)?[BM]")
_SIZE_ASKED = re.compile(r"\b(?:param\w*|sizes?|billions?|millions?|large|big)\b", re.I)


def _spans(text: str, kind: AnswerType, question: str, common: Callable[[str], bool] | None) -> list[str]:
    """Every span of ``text`` of type ``kind``, in order (see :func:`holds`)."""
    if kind == "date":
        return [m.group(0) for m in _DATE_SPAN.finditer(text)] or \
            ([text] if has_date(text) else [])
    if kind == "number":
        years = re.compile(r"^(?:1[0-9]|20)\d\d$")
        counting = bool(re.search(r"\bhow\s+many\b", question, re.I))
        # "what share of the market": a percentage, not "$42,916" (a supposed change is no share asked)
        ratio = bool(_RATIO.search(_SHIFT.sub(" ", question)))
        # "what were McLane's revenues": an amount, not "17.3% of revenues" (unless a change or rate is asked)
        amount = bool(_AMOUNT.search(question)) and not ratio and not _CHANGE.search(question)
        given = {re.sub(r"[^\d.]", "", w) for w in number_tokens(question)}  # "the 17 named plaintiffs"
        points = bool(re.search(r"\bpoints?\b", question, re.I))  # a figure of points is asked for
        level = not _CHANGE.search(question)  # "what were the pre-tax earnings": not by how much they rose
        scaled = bool(re.search(r"\bin\s+(?:millions|billions|thousands)\b", question, re.I))
        much = scaled or bool(re.search(r"\bhow\s+much\b", question, re.I))
        asked_words = {w.rstrip("s") for w in words(question.lower())} | set(words(question.lower()))
        out = []
        ticks = axis_ticks(text)
        for m in _FIGURE.finditer(text):
            if any(a <= m.start() < b for a, b in ticks):  # "0.0 20.0 40.0 60.0": a chart's axis
                continue
            figure = m.group(0).rstrip(" ,")  # "2023," ends a clause: it is a year all the same
            pct = bool(re.search(r"%|percent", figure))  # answers a share or rate, not a count or an amount
            wrong_kind = (pct and (counting or amount or scaled)) or (ratio and not pct)
            day = _MONTH_BEFORE.search(text, 0, m.start())
            # "Llama02-70B", "7-Eleven": a figure hyphenated to a word is part of a name
            named = bool(_HYPHEN_BEFORE.search(text, 0, m.start()) or _HYPHEN_AFTER.match(text, m.end())
                         or _NUMBER_SIGN.search(text, max(0, m.start() - 12), m.start()))
            change = level and bool(_CHANGED_BY.search(text, max(0, m.start() - 40), m.start())
                                    or _in_change_parenthesis(text, m.start())
                                    or (_POINTS.match(text, m.end()) and not points))
            # "a batch size of 512" for "what learning rate": the figure of another quantity
            own = _MEASURE_OF.search(text, max(0, m.start() - 30), m.start())
            measures_else = bool(own and own.group(1) in QUANTITY_WORDS and own.group(1) not in asked_words)
            spelled = figure.isalpha() and (amount or much)  # an amount is in figures: not "the three years"
            # "Alpaca 13B": a model's size, no score nor amount (unless its size is asked)
            size = bool(_MODEL_SIZE.fullmatch(figure)) and not _SIZE_ASKED.search(question)
            if re.sub(r"[^\d.]", "", figure).strip(".") in given:
                continue  # a figure the question gives is not the one it asks for
            if not years.match(figure.strip(" $€£()")) and re.search(r"\w", figure) and \
                    not _label_number(text, m) and not wrong_kind and not day and not named and not spelled \
                    and not change and not measures_else and not size:
                out.append(figure.strip())
        return out
    if kind == "person":
        return persons(text, question, common)
    if kind == "acronym":
        acronym = acronym_of(question)
        found = expansion(text, acronym) if acronym else None
        return [found] if found else []
    asked = _asked_words(question)
    if kind == "place":
        return _places(text, question, asked)
    if kind == "organisation" and (where := affiliation(question)):
        return institutions(text, university=where == "university")
    return _named(text, asked, common)


def _named(text: str, asked: set[str], common: Callable[[str], bool] | None) -> list[str]:
    """The names in ``text`` an ``organisation`` question may ask for: names or acronyms it does not give."""
    out = []
    for m in _NAMED.finditer(text):
        name = m.group(0)
        if _in_question(name, asked) or name.lower() in _NOT_NAME | STOPWORDS or \
                name.split()[0].lower().rstrip(".") in _DOCUMENT_PARTS:
            continue
        if " " not in name and name[1:].islower() and (common is not None and common(name)):
            continue  # a capitalised corpus word ("Retrieval"), not a name
        if PLURAL_ACRONYM.fullmatch(name):
            continue  # "LMs", "GPUs": a kind of thing, not the name of one
        if _CITED.match(text, m.end()) or re.match(r"-\s*$", text[m.end():]):
            continue  # "(Guu et al., 2020)": an author cited; "Con-" at the end: a word cut by a line break
        out.append(name)
    return out


PLURAL_ACRONYM = re.compile(r"[A-Z]{2,5}s")
"""A plural acronym: "LMs", "GPUs", "PBOs": a kind of thing, not the name of one."""
_CITED = re.compile(r"\s+et\s+al\b|,?\s+\(?(?:19|20)\d\d[a-z]?\b[);,]")
"""What follows a cited author's name: "et al." or the year of the work ("Lewis, 2020)", "Guu (2020)")."""


def _asked_words(question: str) -> set[str]:
    """The question's lower-case words, and the initials of each run of two to four of them.

    "QA" in "Multi-Document QA" is a word "multi-document question answering" asks, not a name it asks for.
    """
    asked = words(question.lower())
    seq = [w for w in asked if w not in STOPWORDS]
    initials = {"".join(w[0] for w in seq[i:i + n]) for n in (2, 3, 4) for i in range(len(seq) - n + 1)}
    return set(asked) | initials


def _places(text: str, question: str, asked: set[str]) -> list[str]:
    """The places of ``text``: after a preposition of place, or a state, province or country it names.

    "Which state" takes only a state, province or country, not any capitalised phrase after "in".
    """
    named = [n for n in place_names(text) if not _in_question(n, asked)]
    if asks_region(question):
        return named
    after = [m.group(1) for m in _PLACE_AFTER.finditer(text)
             if m.group(1).split()[0].lower() not in _NOT_NAME | _DOCUMENT_PARTS | _FILING_PARTS
             and not _in_question(m.group(1), asked)]
    return after + [n for n in named if not any(n in a for a in after)]


_FILING_PARTS = frozenset({"registration", "form", "exhibit", "schedule", "statement", "rule", "regulation"})
"""Words that begin the name of a filing or a rule ("in Registration Statement No. …"), which is no place."""
_DOCUMENT_PARTS = frozenset({"table", "figure", "fig", "section", "appendix", "eq", "equation", "algorithm",
                             "chapter", "step", "item", "note", "part", "line", "page"})
"""Words that label a part of a document: "Table 1" names no thing and counts nothing."""


_INSTITUTION = re.compile(
    r"(?:[A-Z][\w&'’.-]*\s+){0,5}?(?:University|Institute|College|School|Laborator(?:y|ies)|Labs?|Research|"
    r"Academy|Cent(?:er|re)|AI|Inc\.?|Corporation|Corp\.?|Technologies)\b"
    r"(?:\s+(?:Labs?|Research|Institute)\b)?"
    r"(?:\s+(?:of|for)\s+(?:[A-Z][\w&.-]*(?:\s+and)?\s*){1,5})?")
"""An institution as a front matter names it: "Carnegie Mellon University", "Google Research", "AI21 Labs",
"University of Washington", "Hong Kong University of Science and Technology"."""


def institutions(text: str, *, university: bool = False) -> list[str]:
    """The institutions ``text`` names (a paper's affiliations), in order.

    With ``university`` only universities, institutes, colleges and schools, universities first.

    Footnote marks glued to a name ("1Google Research", "†University of Washington") are dropped.
    """
    # a footnote mark starts an affiliation ("1Google Research 2University of Washington"), a comma or a
    # line ends one: read each piece apart, so no name runs into the next
    pieces = re.split(r"(?:(?<![\w])[\d†‡∗*§♢¶]+(?=[A-Z]))|[,;\n]|(?<=[a-z])\d+(?:∗|\*)?\s", text)
    out = []
    for m in (m for piece in pieces for m in _INSTITUTION.finditer(piece)):
        name = " ".join(m.group(0).split()).strip(" ,.;")
        if university and not re.search(r"\b(?:University|Institute|College|School)\b", name):
            continue
        if len(name.split()) >= 2 or name.isupper():
            out.append(name)
    # a university question: universities before institutes ("… Institute …, Tongji University")
    return sorted(dict.fromkeys(out), key=lambda n: university and "University" not in n)


def _label_number(text: str, m: re.Match) -> bool:
    """Whether the figure ``m`` of ``text`` labels a part of the document or numbers a heading.

    "Table 1", "Section 5"; "5 Experiments: …", "3. In total …", "(25) Accumulated …" (a note) at its start.
    """
    before = re.findall(r"[A-Za-z]+\.?", text[max(0, m.start() - 12):m.start()])
    if before and before[-1].lower().rstrip(".") in _DOCUMENT_PARTS or re.search(r"§\s*$", text[:m.start()]):
        return True
    heading = re.fullmatch(r"\s*(?:\d{1,2}(?:\.\d{1,2})*\.?|\(\d{1,2}\))\s*", m.group(0))
    if heading and re.fullmatch(r"\s*\d\.\d{1,2}\s*", m.group(0)) and \
            re.search(r"[.?!)]\s+$|\n\s*$", text[:m.start()]) and _TITLE_AFTER.match(text, m.end()):
        return True  # "… (see §4.5). 4.3 Jeopardy Question Generation Table 2 shows …": a section's number
    return not text[:m.start()].strip() and bool(heading) and bool(re.match(r"\.?\s*[A-Z]", text[m.end():]))


_TITLE_AFTER = re.compile(r"\s*[A-Z][\w-]*\s+[A-Z][\w-]*")
"""Two capitalised words after a figure: a heading's title ("4.3 Jeopardy Question Generation")."""


def _windows(text: str, span: str, aliases: Aliases = None) -> list[set[str]]:
    """For each place ``span`` occurs in ``text``: its index terms and the NEAR_TERMS on each side.

    A short form near the span brings its full name's terms (``aliases``: short form -> full name's index
    terms): "BI severities" is near "bodily injury severities" where the document defines "BI".
    """
    full = aliases or {}
    return [set(terms(span)) | {x for t in terms(text[:m.start()])[-NEAR_TERMS:] + terms(text[m.end():])[
        :NEAR_TERMS] for x in (t, *full.get(t, ()))} for m in re.finditer(re.escape(span), text)]


def _near(text: str, span: str) -> set[str]:
    """The index terms within NEAR_TERMS of any place ``span`` occurs in ``text`` (its own included)."""
    return set(terms(span)).union(*_windows(text, span))


def nearness(text: str, span: str, predicate: Mapping[str, float], aliases: Aliases = None) -> float:
    """The share of ``predicate`` (index term -> weight) found within NEAR_TERMS index terms of ``span``.

    In [0, 1], the best over the places ``span`` occurs in ``text``; 1.0 when ``predicate`` is empty, 0.0
    when ``span`` does not occur in ``text``. ``aliases`` as for :func:`_windows`.
    """
    total = sum(predicate.values())
    if total <= 0:
        return 1.0
    return max((sum(w for t, w in predicate.items() if t in near) / total
                for near in _windows(text, span, aliases)), default=0.0)


_MEASURE_FAMILIES = ("revenues sales", "earnings income profits", "expenses costs",
                     "liabilities obligations debt", "losses", "assets", "equity", "capital", "prices",
                     "dividends", "margin", "rate", "ratio", "score", "accuracy", "capacity", "premiums")
MEASURES: dict[str, int] = {t: n for n, family in enumerate(_MEASURE_FAMILIES) for t in terms(family)}
"""Index terms of the nouns that name what a figure measures, to their family ("sales" is revenue, "costs"
are expenses, "debt" is a liability)."""


def measures_other(label: set[str], asked: set[str]) -> bool:
    """Whether a label (index terms) names another measure than the question (``asked``: its index terms).

    "Operating lease expense" measures an expense, so its figures are no answer to "what were the operating
    lease liabilities", however many of the question's words it shares; "sales" do answer for revenues.
    False when either names no measure.
    """
    want = {MEASURES[t] for t in asked if t in MEASURES}
    have = {MEASURES[t] for t in label if t in MEASURES}
    return bool(want) and bool(have) and not want & have


def holds(text: str, kind: AnswerType | None, question: str,
          common: Callable[[str], bool] | None = None,
          predicate: Mapping[str, float] | None = None, aliases: Aliases = None) -> str | None:
    """The span of ``text`` that holds an answer of type ``kind`` to ``question``, or None when none does.

    With ``kind`` None (or ``definition``/``list``, which any on-topic passage may hold) the whole text
    counts. A year is not the figure a ``number`` question asks for, and a name the question gives is not
    the ``person``, ``organisation`` or ``place`` it asks for. ``common`` tells corpus words from names
    (see :func:`persons`). With ``predicate`` (the question's index terms besides its names and years, with
    their weights), a span counts only when NEAR_AT of that weight is near it (:func:`nearness`; a short
    form of ``aliases`` near it counts as its full name).
    """
    if kind == "list" and (n := list_count(main_clause(question))):
        return enumeration(text, n, question)
    if kind is None or kind == "list":
        return text
    if kind == "definition":
        return text if _DEFINES.search(text) else None
    # a figure for "how many miles" counts miles (an assembled table row, predicate None, has its unit in its
    # header)
    noun = counted_noun(question) if kind == "number" and predicate is not None else None
    if (kind == "organisation" and affiliation(question)) or kind == "acronym":
        # an affiliation line holds none of the question's words; an acronym's expansion is found by the
        # acronym itself, whatever the question says of where ("in the hallucination survey")
        predicate = None
    if kind == "number" and predicate is not None and len(parts := _row_ends(text)) > 1:
        # "Net periodic pension expense $ (53) $ (32) The accumulated benefit obligation …": the figures
        # are the row's, read with its label only
        return next((found for part in parts
                     if (found := holds(part, kind, question, common, predicate, aliases))), None)
    # a question that names a measure ("liabilities") takes no figure of another one; the text is read for
    # that only then
    asked = set(predicate) if kind == "number" and predicate is not None and \
        any(t in MEASURES for t in predicate) else set()
    other = bool(asked) and measures_other(set(terms(text)), asked)
    for span in _spans(text, kind, question, common):
        if noun is not None and _counts_own(text, span, noun):
            return span  # "21,015,324 passages" for "how many passages": the figure names what it counts
        if other or (asked and measures_other(_near(text, span), asked)):
            continue  # "Operating lease expense $ 1,652" is no figure of the operating lease liabilities
        if kind == "number" and predicate is not None and noun is None and counts_other(text, span, question):
            continue  # "150k training instances" is no citation precision
        if (predicate is None or nearness(text, span, predicate, aliases) >= NEAR_AT) and \
                (noun is None or _counts(text, span, noun)):
            return span
    return None


_CELLS_THEN_SENTENCE = re.compile(r"(?:[$€£]?\s?\(?-?\d[\d,]*(?:\.\d+)?\s?\)?\s?%?\s+){2,}"
                                  r"(?=[A-Z][a-z]*\s+[a-z])")
"""Two or more figure cells, then a capitalised word and a lower-case one: where a table row, run into the
text after it by the layout, ends ("… expense $ (53) $ (32) $ (156) The accumulated benefit obligation …")."""


def _row_ends(text: str) -> list[str]:
    """``text`` cut after each run of figure cells that a sentence follows (one part when there is none)."""
    cuts = [m.end() for m in _CELLS_THEN_SENTENCE.finditer(text)]
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if text[a:b].strip()]
