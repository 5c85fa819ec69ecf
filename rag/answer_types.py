"""Expected answer types: what kind of thing a question asks for, and whether a text holds one.

Question classification by answer type is the classic first step of factoid QA (Li & Roth 2002; the
TREC QA track). The types are: ``person``, ``organisation`` (also any named thing asked for by "which
X"), ``number`` (a figure or amount, with its unit and scale), ``date``, ``place``, ``acronym`` (the
expansion asked for by "what does X stand for"), ``definition`` and ``list``; None when the question asks
for none of them (yes/no questions, "how" and "why"). Every rule reads the question's own grammar (question
words, the noun after "which", "stand for"), never a list of topics, so it carries over to any corpus.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rag.answer_lists import list_count
from rag.quantities import QUANTITY_WORDS as _QUANTITY
from rag.text import STOPWORDS, frame_words, terms, words

AnswerType = str
"""One of :data:`TYPES`."""
TYPES = ("person", "organisation", "number", "date", "place", "acronym", "definition", "list")
SPAN_TYPES = ("person", "place", "organisation", "acronym", "number", "date")
"""Answer types with one span to find (a definition or a list has none): the answer check names the span it
found, and its lead passage must cover the question (LEAD_USEFUL_AT)."""
LABELS = {"person": "a person's name", "organisation": "a name", "number": "a figure",
          "date": "a date or year", "place": "a place", "acronym": "the expansion of the acronym",
          "definition": "a definition", "list": "a list"}
"""How a reason names each type ("the answer holds no person's name")."""
MISSING = {
    "person": "asks who, and the answer's lead passage names no person the question does not already name",
    "organisation": "asks who or which, and the answer's lead passage holds no name the question does not "
                    "already give",
    "number": "asks for a figure, and the answer's lead passage holds none next to what it asks about",
    "date": "asks when, and the answer's lead passage holds no date or year",
    "place": "asks where, and the answer's lead passage names no place",
    "acronym": "asks what the acronym stands for, and the answer's lead passage does not spell it out",
    "definition": "asks what something is, and the answer's lead passage defines nothing",
    "list": "asks for a list, and the answer's lead passage holds none",
}
"""What the answer check says when a type is missing ("the question asks when, and …")."""

_ACRONYM_Q = re.compile(r"\b(?:stands?|stood)\s+for\b|\bshort\s+for\b|\babbreviat|\bacronym\b|"
                        r"\bwhat\s+does\s+(?:the\s+)?[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*\s+mean\b")
_DATE_Q = re.compile(r"^(?:in\s+)?(?:when|what year|which year|what date|on what date|in what year)\b"
                     r"|\b(?:what|which) (?:year|date|month|decade|century)\b"
                     r"|\b(?:what|which) [a-z]+ (?:date|year|month)(?![\w-])", re.I)
""""When …", "what year …", and a date of a kind ("what birth date", "which fiscal year")."""
_HOW_Q = r"how (?:many|much|long|old|far|big|large|tall|high|often|accurate)\b"
_NUMBER_Q = re.compile(rf"^(?:\W*[\w'’-]+\s+){{0,2}}?{_HOW_Q}"
                       r"|^(?:\W*[\w'’-]+\s+){0,3}?(?:in|into|for|of|on|at|by|with|from|to|over|after|within|across)"
                       rf"\s+{_HOW_Q}"
                       r"|\bwhat (?:percentage|share|proportion|fraction|number|amount)\b", re.I)
""""How many …", and after a prepositional lead-in too ("Into chunks of how many words are …")."""
_PERSON_Q = re.compile(r"^(?:who|whom|whose)\b|\bby whom\b|\b(?:which|what) (?:person|people|author|authors|"
                       r"researcher|researchers|executive|officer|ceo|founder)\b|\bwho\s+(?:wrote|"
                       r"founded|leads|led|runs|heads|created|proposed|introduced)\b", re.I)
_PLACES = (r"(?:(?:two|three|four|five|six|\d+)\s+)?(?:cit(?:y|ies)|countr(?:y|ies)|states?|towns?|regions?|"
           r"count(?:y|ies)|provinces?|continents?)")
_PLACE_Q = re.compile(rf"^where\b|\bin (?:which|what) (?:{_PLACES}|place)\b|\b(?:which|what) {_PLACES}\b",
                      re.I)
_WHICH = re.compile(r"^(?:which|what)\s+([a-z-]+)\s+"
                    r"(?:do|does|did|is|are|was|were|has|have|had|can|could|will)\b"
                    r"|^(?:(?:on|under|in|at|from|to|by|for|with|through)\s+)?which\s+"
                    r"(?:(?!(?:do|does|did|is|are|was|were|has|have|had|the|a|an|of)\b)[\w-]+\s+){1,3}?"
                    r"(?:do|does|did|is|are|was|were|has|have|had|can|could|will)\b",
                    re.I)
""""Which generator does …", "Which FAISS index type did …" (three words at most before its verb): a name."""
_NAMED_KIND = re.compile(r"^(?:(?:on|under|in|at|from|to|by|for|with|through)\s+)?"
                         r"(?:which\s+(?:(?!(?:do|does|did|is|are|was|were|has|have|had|the|a|an)\b)[\w-]+\s+){0,2}?|what\s+)"
                         r"(?:compan(?:y|ies)|firms?|organi[sz]ations?|subsidiar(?:y|ies)|universit(?:y|ies)|labs?|"
                         r"models?|datasets?|methods?|retrievers?|brands?|exchange|benchmarks?|business(?:es)?|"
                         r"insurers?|frameworks?|librar(?:y|ies)|court|agenc(?:y|ies)|banks?|algorithms?|"
                         r"encoders?|generators?|metrics?|languages?|journal|conference)\b"
                         r"(?!\s+(?:size|sizes|count|number|length|scores?|accuracy|performance)\b)")
"""A question for a named thing of a kind, whatever its verb ("what company …", "which Berkshire subsidiary
sells …", "on which stock exchange are …"): an ``organisation``. Modifiers only after "which"."""
_LIST_Q = re.compile(r"^(?:list|name|enumerate)\b|^(?:which|what) (?:are|were) (?:the )?\w+s\b", re.I)
_DEFINITION_Q = re.compile(r"^(?:what\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?(?!the\b|default\b)\S"
                           r"|define\b|explain\b|describe\b)", re.I)
_AUTHORSHIP = re.compile(r"\b(?:authors?|wrote|written|co-?authors?|created|proposed|introduced)\b", re.I)

CUE_WORDS: dict[str, frozenset[str]] = {
    "acronym": frozenset({"stand", "stands", "stood", "short", "abbreviation", "abbreviate", "acronym",
                          "mean"}),
    "person": frozenset({"author", "authors", "wrote", "written", "coauthor", "coauthors", "co", "paper",
                         "papers", "article", "study", "created", "create", "first"}),
    "number": frozenset({"many", "much"}), "date": frozenset({"date", "day", "year"}),
}
"""Words that only say which type is asked for, never what the answer's passage is about: "stand for"
is not in the passage that expands an acronym, "authors" is not in a paper's author line. They are left
out of the terms a passage must hold, and out of the search query."""


_NOT_AFTER = "".join(rf"(?<!\b{a})" for a in ("al", "etc", "vs", "Inc", "Co", "No", "Nos", "v", "Mt", "St",
                                                "Dr", "Mr", "Mrs", "Ms", "Jr", "Sr"))
PREAMBLE = re.compile(r"^(?!(?i:what|which|who|whom|whose|how|when|where|why|do|does|did|is|are|was|were|"
                       r"can|could|should|would|will|has|have|had)\b)"
                       rf"([^?]*[a-z0-9]{_NOT_AFTER}[’'\"”)]?[.!])"
                       r"\s+([A-Z][^.!?]*(?:\.\S[^.!?]*)*\?)\s*$")
"""A turn that states something, then asks ("BNSF also issued debentures in 2024. In what year do they
mature?"); not one cut at an abbreviation ("Lewis et al. RAG paper", "Rostker v. Goldberg", "Mt. Carmel")."""


def question_part(text: str) -> str:
    """The question of ``text`` without a statement before it in the same turn (see :data:`PREAMBLE`)."""
    said = PREAMBLE.match(text.strip())
    return said.group(2) if said else text


_FRAME = re.compile(r"^([^,:;?]{1,80}?)[,:;]\s+(?=\S)")
"""A framing phrase before the question proper: "In the DPR paper, how many …", "Different paper: which …"."""
_WH = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how)\b", re.I)


def main_clause(question: str) -> str:
    """``question`` without its framing phrases ("In total, ", "According to the survey, ", "Other paper: ").

    A phrase before a comma, colon or semicolon is framing when it holds no question word and the rest does;
    the question is returned whole otherwise ("What is X, and how …" keeps its first clause).
    """
    q = " ".join(question_part(question.strip()).split())  # "… the largest was Pilot. What was its value?"
    while (m := _FRAME.match(q)) and not _WH.search(m.group(1)) and _WH.search(q[m.end():]):
        q = q[m.end():]
    return q[:1].upper() + q[1:]


def expected_type(question: str) -> AnswerType | None:
    """The answer type ``question`` asks for (one of :data:`TYPES`), or None.

    The order of the tests settles overlaps: "what does X stand for" is an acronym before it is a
    definition; "how many" a number before anything else; "who" a person; "where" a place; "which
    company" an organisation and "which generator" a named thing (``organisation``); "what is X" a
    definition.
    """
    q = re.sub(r"^(What|Who|Where|When|How)['’]s\b", r"\1 is", main_clause(question), flags=re.I)
    low = q.lower()  # "What's the par value …" is "What is the par value …"
    if _ACRONYM_Q.search(q):
        return "acronym"
    if _DATE_Q.search(low):
        return "date"
    if _asks_figure(low):
        return "number"
    if list_count(q):
        return "list"
    if _PERSON_Q.search(q):
        # "who is the CEO" and "who wrote it" ask for a person; "who won the cup" may be a team or a firm
        if re.match(r"^(?:who|whom)\s+(?!(?:is|was|are|were|wrote|leads|led|heads|runs|created|proposed|"
                    r"introduced)\b)\w+", low):
            return "organisation"
        return "person"
    if _PLACE_Q.search(q):
        return "place"
    if _LIST_Q.search(q) and not _WHICH.match(q):
        return "list"
    if _WHICH.match(q) or _NAMED_KIND.match(low):
        return "organisation"
    if _DEFINITION_Q.search(q):
        return "definition"
    return None


def _asks_figure(low: str) -> bool:
    """Whether the lower-case main clause ``low`` asks for a figure.

    "How many …", "what percentage …", "what were the revenues …", and a noun phrase that ends on a quantity
    ("What closed-book accuracy did GPT-3.5-Turbo get?", "What exact match score does …").
    """
    if _NUMBER_Q.search(low):
        return True
    if re.fullmatch(r"what (?:is|are) (?:an? )?[\w-]+\W*", low):
        return False  # "What is goodwill?": a quantity word alone asks what it is, not a figure
    if (m := re.search(r"\bhow (?:many|much)\b", low)) and not _WH.search(low[:m.start()]):
        return True  # "LLMs can handle contexts of more than how many tokens?": no question word before it
    if re.match(r"^(?:what|which) (?:was|were|is|are|would|will|could|might)\b", low) \
            and set(words(low)) & _QUANTITY:
        return True
    if _MEASURED.match(low) or _CONTRIBUTED.match(low) or _SCALE_ASKED.search(low):
        return True
    return any(_quantity(head) for head in _np_heads(low))


def _quantity(word: str) -> bool:
    """Whether ``word`` names a quantity, singular or plural ("rate", "rates")."""
    return word in _QUANTITY or (word.endswith("s") and word[:-1] in _QUANTITY)


_PREPOSITION = re.compile(r"\s+(?:of|over|on|for|in|across|at|with|from|among|per|under)\s+")


def _np_heads(low: str) -> list[str]:
    """The heads a "what X did …" noun phrase may have: before its first preposition, and its last word.

    "what average score over all seven datasets did …" -> ["score", "datasets"]; "what range of interest
    rates do …" -> ["range", "rates"]; [] when the question has no such phrase.
    """
    m = _WH_NP.match(low)
    if m is None:
        return []
    # a symbol named after its noun is that noun's ("what weight λ", "which threshold θ", "what value k1")
    phrase = re.sub(r"(?:\s+(?:[^\W\d_]|[a-z]\d))+$", "", m.group(1) or m.group(2)).split()
    first = _PREPOSITION.split(" " + " ".join(phrase) + " ", maxsplit=1)[0].split()
    return list(dict.fromkeys([*(first[-1:] if first else []), *phrase[-1:]]))


_AUX_WORD = r"(?:do|does|did|is|are|was|were|has|have|had)\b"
_WH_NP = re.compile(rf"^(?:(?:at|by|for|from|in|on|to|under|with|within)\s+)?(?:what|which)\s+"
                    rf"(?:((?:(?!{_AUX_WORD})[\w&/-]+\s+){{0,9}}?(?!{_AUX_WORD})"
                    rf"[^\W\d_][\w-]*)\s+(?:{_AUX_WORD}|(?:applied|applies|apply)\b)"
                    rf"|((?:[\w-]+\s+){{0,3}}[^\W\d_][\w-]*)\s*\?*$)")
"""A "(at) what X do/did/is …" question and its noun phrase X (up to ten words: "what expected long-term rate
of return on pension plan assets did …"; "what discount rate applied to …" too), or a bare "(at) what X?"
(up to four: "At what weighted average interest rate?")."""


_MEASURED = re.compile(r"^what\s+(?:[\w-]+\s+){0,4}?(?:do|does|did)\s+(?:(?!to\b)[\w'’.+-]+\s+){1,8}?"
                       r"(?:score|achieve|reach|obtain|attain|get|cost|weigh|total|earn|pay|spend|lose|owe)\b"
                       r"|^how\s+(?:well\s+)?(?:do|does|did)\s+(?:[\w'’.+-]+\s+){1,8}?(?:do|perform|fare|score)"
                       r"\s+(?:on\s|there\b)")
""""What (X) did Y score/reach/earn …" and "How does Y do on Z" ask for a figure, whatever X is ("What did
T5-11B+SSM score on WQ?", "How does BART do there?"; not "What method did they use to score passages?")."""


_CONTRIBUTED = re.compile(r"^(?:what|how much)\s+(?:do|does|did)\s+.+?\s+(?:contribute|add)\s+to\s+"
                          r"(?:[\w'’-]+\s+){0,3}(?:earnings|income|revenues?|sales|profits?|losses|assets|"
                          r"cash flows?)\b")
""""What did X contribute to its net earnings": a share of a measure, so a figure."""
_SCALE_ASKED = re.compile(r",?\s+in\s+(?:millions|billions|thousands)(?:\s+of\s+dollars)?\s*\??$")
"""A question that ends on the scale its answer takes ("…, in millions?") asks for a figure."""


def answer_type(question: str) -> str | None:
    """The coarse kind of :func:`expected_type`: ``date``, ``number``, ``name`` or None.

    ``name`` is a person or any named thing; the kinds an answer check tested before answer types.
    """
    kind = expected_type(question)
    return "name" if kind in ("person", "organisation") else kind if kind in ("date", "number") else None


def cue_words(question: str) -> frozenset[str]:
    """The words of ``question`` that only name its answer type (see :data:`CUE_WORDS`), lower-case.

    Also "authors" where the question does not count them: "the Self-RAG authors train on …" is written "we
    train on …" in the paper itself; and the words of a topic-shift frame (:func:`rag.text.frame_words`).
    """
    kind, asked, frame = expected_type(question), set(words(question.lower())), frame_words(question)
    writers = frame | ({"author", "authors"} & asked if counted_noun(question) != "author" else frozenset())
    if kind == "person" and not _AUTHORSHIP.search(question):
        return frame
    if affiliation(question) and (m := _AFFILIATION_Q.search(question)):
        writers |= {m.group(1).lower()}  # "university" names the answer's type, not a word of its passage
    if kind == "number" and (how := _HOW_MUCH.search(question)):
        writers |= {how.group(1).lower()}  # "How large was the float?": its passage never says "large"
    if kind == "number" and (generic := _GENERIC_QUANTITY.match(main_clause(question))):
        writers |= {generic.group(1).lower()}  # "What value of k1 …": the passage says "k1 = 0.9"
    if kind == "place" and (where := _PLACE_KIND.search(question)):
        writers |= {where.group(1).lower()}  # "In which state is BHE GT&S based?": "based in Virginia"
    return (CUE_WORDS.get(kind or "", frozenset()) & asked) | writers


_PLACE_KIND = re.compile(r"\b(?:which|what)\s+(?:\w+\s+)?(states?|countr(?:y|ies)|cit(?:y|ies)|towns?|"
                         r"provinces?|regions?|continents?)\b", re.I)
"""The kind of place asked for ("in which state", "which two states"): it names the answer's type, not a word
of its passage."""
_GENERIC_QUANTITY = re.compile(r"^(?:what|which)\s+(values?|numbers?|amounts?|levels?)\s+of\b", re.I)
"""A figure asked for by a bare quantity word ("What value of k1 did they use?"): the word names the answer's
type, not a word of its passage."""
_HOW_MUCH = re.compile(r"\bhow\s+(large|big|long|old|far|tall|high|often|wide|deep|heavy|fast|accurate)\b",
                       re.I)
"""The adjective of "how large", "how old": it names the kind of figure asked for, not the figure's passage.
"""


def about_authors(question: str) -> bool:
    """True when ``question`` asks about a document's authors: who they are, or where they work."""
    return bool(_AUTHORSHIP.search(question))


_AFFILIATION_Q = re.compile(r"\b(?:which|what)\s+(compan(?:y|ies)|universit(?:y|ies)|organi[sz]ations?|"
                            r"institutions?|institutes?|labs?|firms?)\b", re.I)


def affiliation(question: str) -> str | None:
    """``university`` or ``organisation`` when ``question`` asks where a paper's authors work, else None.

    "Which university are the FLARE authors from?", "Which company are the authors of In-Context RALM
    from?": the answer is an affiliation of the paper's front matter, a line that holds none of the
    question's words.
    """
    m = _AFFILIATION_Q.search(question)
    if not m or not re.search(r"\b(?:authors?|researchers?|affiliat\w*|they|he|she)\b", question, re.I):
        return None
    return "university" if m.group(1).lower().startswith("universit") else "organisation"


def is_authorship(question: str) -> bool:
    """True when ``question`` asks who wrote something ("Who are its authors?", "Who wrote DPR?")."""
    return expected_type(question) == "person" and bool(_AUTHORSHIP.search(question))


def search_query(question: str) -> str:
    """``question`` without its type cue words: what a search for its answer's passage should use."""
    cues = cue_words(question)
    if not cues:
        return question
    kept = [w for w in re.split(r"(\s+)", question) if w.strip(" ?.!,").lower() not in cues]
    return "".join(kept).strip() or question


# -- does a text hold the type? ---------------------------------------------------------------------
_NOT_NAME = frozenset(
[
    "the", "a", "an", "this", "that", "these", "those", "in", "on", "of", "for", "and", "or", "to",
    "by", "with", "from", "at", "as", "is", "are", "was", "were", "be", "chief", "executive", "officer",
    "officers", "chairman", "chairwoman", "vice", "president", "director", "directors", "board",
    "details", "experimental", "experiments", "inference", "analysis", "evaluation", "training",
    "related", "background", "implementation", "discussion", "limitations", "overview", "setup",
    "ablation", "baselines", "baseline", "contents", "references", "acknowledgments", "acknowledgements",
    "senior", "junior", "general", "manager", "managing", "partner", "partners", "counsel", "secretary",
    "treasurer",
    "company", "companies", "inc", "corporation", "corp", "group", "holdings", "llc", "ltd", "plc",
    "university", "institute", "department", "table", "figure", "section", "appendix", "part", "item",
    "annual", "report", "form", "note", "notes", "total", "net", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december", "monday",
    "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "states", "united", "national",
    "international", "american", "north", "south", "east", "west", "new", "operating", "operations",
    "insurance", "energy", "railway", "services", "financial", "statements", "securities", "exchange",
    "commission", "act", "our", "we", "it", "its", "they", "their", "he", "she", "his", "her",
    "abstract", "introduction", "conclusion", "results", "method", "methods", "model", "models",
    "dataset", "datasets", "retrieval", "language", "learning", "generation"
])
_HONORIFIC_NAME = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof)\.?\s+([A-Z][a-z]+(?:-[A-Z][a-z]+)?)")
_FULL_NAME = re.compile(
    r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?(?:\s+[A-Z]\.)*(?:\s+(?:van|von|de|da|del|der|di|le|la)\s+)?"
    r"\s+[A-Z][a-z]+(?:-[A-Z][a-z]+)?(?:\s+[A-Z][a-z]+)?)(?![A-Za-z])")
_PLACE_AFTER = re.compile(
    r"\b(?:in|at|near|from|headquartered in|based in|located in|headquarters (?:is|are) in)\s+"
    r"((?:the\s+)?[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*(?:,\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)?)")
_DEFINES = re.compile(r"\b(?:is|are|was|were)\s+(?:an?|the|one)\b|\brefers?\s+to\b|\b(?:we|this paper)\s+"
                      r"(?:propose|present|introduce)s?\b|\bis\s+defined\b|,\s+an?\s+\w+", re.I)


def _in_question(name: str, asked: set[str]) -> bool:
    """Every word of ``name`` is one of ``asked`` (lower-case words), plural or not ("PDFs" for "PDF")."""
    return all(w.lower() in asked or w.lower().rstrip("s") in asked for w in re.findall(r"[A-Za-z]+", name))


def persons(text: str, question: str = "", common: Callable[[str], bool] | None = None) -> list[str]:
    """Person names in ``text`` that ``question`` does not give ("Warren E. Buffett", "Mr. Abel").

    Two or three capitalised words (with middle initials) none of which is a role, organisation, month,
    stop or document word, nor a word ``text`` also uses in lower case, nor (``common(word)``, when
    given) a word common in the corpus; or a surname after an honorific.
    """
    asked = set(words(question.lower()))
    prose = re.sub(r"\{[^}]*\}|\S+@\S+|https?://\S+", " ", text)  # e-mail lists spell names in lower case
    lower = set(re.findall(r"\b[a-z]+\b", prose))
    out: list[str] = []
    for m in _FULL_NAME.finditer(text):
        name = m.group(1)
        parts = [p.strip(".").lower() for p in re.split(r"[\s-]+", name) if len(p.strip(".")) > 1]
        if any(p in _NOT_NAME or p in STOPWORDS or p in lower or (common is not None and common(p))
               for p in parts) or _in_question(name, asked):
            continue
        out.append(name)
    for m in _HONORIFIC_NAME.finditer(text):
        if m.group(1).lower() not in _NOT_NAME and not _in_question(m.group(1), asked):
            out.append(m.group(0))
    return list(dict.fromkeys(out))


def name_list(text: str, question: str = "", common: Callable[[str], bool] | None = None) -> bool:
    """Whether ``text`` is a list of people's names and nothing else (a paper's author line)."""
    names = persons(text, question, common)
    rest = text
    for name in names:
        rest = rest.replace(name, "")
    return bool(names) and not re.sub(r"\b(?:and|others)\b|[,\s]", "", rest)


_COUNTED = re.compile(r"\bhow\s+many\s+((?:[\w/-]+\s+){0,3}?)([a-z][\w-]*s)\b(?=\s+(?:do|does|did|is|are|"
                      r"was|were|has|have|had|will|can|could|would|in|of|on|at|for|from|per|there)\b|\s*[?,]|$)",
                      re.I)
"""A "how many" question and the plural noun it counts."""
def counted_noun(question: str) -> str | None:
    """The index term of the plural noun a "how many" question counts, or None.

    "mile" in "how many miles of pipeline …", "pair" in "how many instruction-output pairs …".
    """
    m = _COUNTED.search(question)
    if not m or m.group(2).lower() in ("times", "years"):
        return None
    found = terms(m.group(2))
    return found[-1] if found else None


def describe(kind: AnswerType | None) -> str:
    """``a person's name`` for ``person``; "" for None."""
    return LABELS.get(kind or "", "")
