"""Where a follow-up's references point: the papers, works, plural noun phrases and measures of earlier turns.

The pieces :mod:`rag.engines.contextualize` resolves references with, each a rule of grammar: a paper named
as "the X paper" or by its authors, a survey named by its noun phrase, the plural noun phrase "they" means,
the measure "it" means before a verb of change, a statement the question itself makes before it asks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.engines.coreference import asked_phrase, refers_inside
from rag.engines.entities import filers
from rag.engines.phrases import _YEAR, YEARS_ONLY, _possessive, owners, topics
from rag.models import Turn
from rag.text import QUESTION_WORDS, STOPWORDS

_PAPER = re.compile(r"\bthe\s+['‘\"“]?([A-Z][\w.-]*(?:\s+(?:[A-Z][\w.-]*|et\s+al\.|[a-z]{1,5}))*?)['’\"”]?"
                    r"\s+paper\b")
"""A paper named by its title or authors: "the Lewis et al. RAG paper", "the 'Lost in the Middle' paper"."""


def _work_phrase(kinds: str) -> re.Pattern[str]:
    """"the <one to four words> <kind>", a kind of ``kinds`` ("paper|survey"): a work by its noun phrase."""
    return re.compile(rf"\bthe\s+(?:(?!(?:the|of|a|an)\b)[\w-]+\s+){{1,4}}?(?:{kinds})\b")


_DOCUMENT_NP = _work_phrase("paper|survey|benchmark|study")
"""A work named by a noun phrase: "the hallucination mitigation survey", "the RAG survey"."""
_AUTHORS_OF = re.compile(r"\b([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*)(?:['’]s)?\s+(?:authors|paper)\b|"
                         r"\bauthors\s+of\s+(?:the\s+)?([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*)")
"""A paper named by what its authors or it are called: "the InstructRetro authors", "authors of DPR"."""
_HOW_MANY = re.compile(r"\bhow\s+(?:many|much)\s+((?:[a-z-]+\s+){0,2}?[a-z-]+s)\b", re.I)
"""The counted plural a question asks about ("how many route miles")."""
_OWNED_PAPER = re.compile(r"\b([A-Z][\w-]*\s+et\s+al\.)|"
                          r"\b([A-Z][\w-]*)['’]s\s+(?:[a-z][\w-]*\s+){0,4}?paper\b")
"""A paper named by whose it is: "Lewis et al.'s retrieval-augmented generation paper", "Lewis et al."."""


def _latest_paper(history: Sequence[Turn], *, by_authors: bool = False) -> tuple[str, int] | None:
    """("the X paper", its 1-based turn) for the latest turn that names a paper as "the X paper", or None.

    ``by_authors``: a turn that names a paper only by its authors ("Lewis et al.", "Lewis et al.'s … paper")
    counts too: what "they" did is theirs, but an author's name is a poor search term for "the paper" (other
    papers cite it).
    """
    for n in range(len(history), 0, -1):
        text = history[n - 1].understood()
        paper = _PAPER.search(text)
        if paper:
            return f"the {paper.group(1)} paper", n
        named = _AUTHORS_OF.search(text)
        if named and (name := named.group(1) or named.group(2)) and name.lower() not in ("the", "which"):
            return f"the {re.sub(r'^The ', '', name)} paper", n  # "… one of the InstructRetro authors from?"
        if by_authors and (owned := _OWNED_PAPER.search(text)):
            work = _WRITTEN_WORK.search(text)  # "the RAG survey by Gao et al.": the survey
            return (work.group(0) if work else f"the {owned.group(1) or owned.group(2)} paper"), n
    return None


_OBJECT_PLURAL = re.compile(r"\b(?:[a-z]+ed|has|have|had|holds?|owns?|sells?|discusses|describes|mentions|"
                            r"lists|cites|compares)\s+(?:(?:new|additional|several|some|two|three|four|its|their|a\s+few|"
                            r"many|other)\s+)?((?:[a-z][\w-]*\s+)?(?:[A-Za-z][\w-]*\s+)?[a-z][\w-]*[a-rt-z]s)\b")
"""The plural noun phrase a statement's verb takes ("BNSF also issued debentures in 2024")."""
_PLACED_PLURAL = re.compile(r"\b(?:at|in)\s+(?:(?:two|three|four|five|six|several|some|both|all)\s+"
                            r"(?:of\s+)?)?(?:its|their|the)\s+((?:[a-z-]+\s+)?[a-z-]+[^s\W]s)\b")
"""Plural things a statement places something at ("fires at two of its facilities"): where "they" are."""
_WORK = re.compile(r"\b(?:paper|survey|benchmark|study|report|article)$")
"""A name that ends on a kind of work ("the hallucination mitigation survey"): one thing, never "them"."""


_FILING = re.compile(r"\b(?:(?:Form\s+)?10-[KQ]|annual\s+report|filing)\b")
"""A filing ("the 10-K", "Berkshire Hathaway's 2024 10-K"): where to look, not what a question is about."""


def _besides_filing(names: list[str], text: str) -> list[str]:
    """``names`` without a filing and its filer, when ``text`` names something else.

    "According to Berkshire Hathaway's 2024 10-K, how many route miles … does BNSF operate?": "its" in the
    next turn is BNSF's; the 10-K (and whose it is) only says where to look.
    A name that only modifies a noun ("the company's SEC commission file number", "the LIFO-based inventory
    costs", "its investment in Occidental common stock") is no such thing: "its" in the next turn is the
    filer's. A filing alone stands for its filer.
    """
    filed = filers(text)
    kept = [t for t in names if not _FILING.search(t) and t not in filed]
    if filed and kept and all(re.search(rf"\b(?:the|an?|its|their|our|\w+['’]s|in|of)\s+{re.escape(t)}[\s-]+"
                                        rf"[a-z][\w-]*\b(?!['’])", text) for t in kept):
        return filed
    return kept or [t for t in names if not _FILING.search(t)] or filed or names


def _with_topic(question: str, name: str) -> str:
    """``question`` (which names no topic) about ``name``, grammatically.

    A paper frames the question ("In the Ragas paper, how is the answer relevance score computed?"), as does
    any name for a question that may end on its verb ("how", "why"); else the name follows its noun phrase
    ("What about the datasets of Self-RAG?").
    """
    q = question.strip().rstrip(" ?.!")
    if name.endswith(" paper") or re.match(r"(?:how|why)\b", q, re.I):
        lead = "In" if name.endswith(" paper") else "For"
        return f"{lead} {name}, {q[:1].lower() + q[1:] if not re.match(r'[A-Z]{2}', q) else q}?"
    return f"{q} of {name}?"


def _authors(name: str, named: str) -> str | None:
    """Who "they" are when ``name`` (``named``: as the turn wrote it) is a paper, else None.

    "the authors of the X paper", or "Lewis et al." for "the Lewis et al. paper".
    """
    if by := re.fullmatch(r"the (.+ et al\.) paper", name):
        return by.group(1)
    named = re.sub(r"^The\s", "the ", named)  # "The Self-RAG paper" opened its sentence
    return f"the authors of {named}" if name.endswith(" paper") else None


def _users_paper(history: Sequence[Turn], asked: str, refs: list[re.Match]) -> tuple[str, int] | None:
    """The latest paper when "they" of ``asked`` does something ("did they use"), else None.

    People use things, a dataset does not: "Which threshold did they use?" after a question about a dataset
    of the FLARE paper asks about that paper's authors. The paper is one of the last three turns', and no
    turn since has turned to a filing.
    """
    paper = _latest_paper(history, by_authors=True)
    if paper and paper[1] >= len(history) - 2 and not any(
            _FILING.search(t.understood()) for t in history[paper[1]:]) and any(
            r.group(0).lower() == "they" and acts(asked, r) for r in refs):
        return paper
    return None


_WRITTEN_WORK = _work_phrase("survey|study")


def _latest_work(history: Sequence[Turn]) -> tuple[str, int] | None:
    """("the RAG survey", its 1-based turn) for the latest turn that names a survey or study, or None."""
    for n in range(len(history), 0, -1):
        if found := _WRITTEN_WORK.search(history[n - 1].understood()):
            return found.group(0), n
    return None


def acts(asked: str, they: re.Match) -> bool:
    """Whether "they" at ``they`` does what an author does ("did they use").

    Not what is done to a thing: the subject of a passive ("were they released") is the thing.
    """
    return bool(_AGENT_VERB.match(asked[they.end():])) and not _PASSIVE.search(asked[:they.start()])


_PASSIVE = re.compile(r"\b(?:were|are|was|is|be|been|being)\s+$", re.I)
_AGENT_VERB = re.compile(r"\s+(?:use|used|train|trained|propose|proposed|evaluate|evaluated|build|built|find|"
                         r"found|report|reported|introduce|introduced|prompt|prompted|compare|compared|test|"
                         r"tested|choose|chose|fine-tune|fine-tuned|run|ran|measure|measured|create|created|"
                         r"collect|collected|apply|applied|split|experiment|employ|employed|see|saw|observe|"
                         r"observed|notice|noticed|end\s+up|ended\s+up|exclude|excluded|sample|sampled|annotate|"
                         r"annotated|design|designed|adopt|adopted|describe|described|conclude|"
                         r"concluded|say|said|claim|claimed|argue|argued|cite|cited|mention|mentioned|note|"
                         r"noted|show|showed|give|gave|configure|configured|set|select|selected|pick|picked|"
                         r"settle|settled|suggest|suggested|think|thought|believe|believed|tackle|tackled|address|"
                         r"addressed|explain|explained|attribute|attributed|expect|expected|consider|considered|"
                         r"focus|focused|skip|skipped|try|tried|define|defined|obtain|obtained|achieve|achieved|"
                         r"study|studied|analy[sz]e|analy[sz]ed|release|released|acknowledge|"
                         r"acknowledged)\b", re.I)
"""Verbs whose subject "they" is a paper's authors: "Which retriever do they use?", "For which task did they
see the retrieval component collapse?"."""


def _plural_focus(question: str, owner: str | None) -> str | None:
    """The plural noun phrase "they" or "them" means in a later turn, or None.

    What the question counts ("how many employees" -> "BNSF's employees"), or a plural it names in the
    possessive ("FLARE's authors", "the authors of FLARE").
    """
    m = re.search(r"\b([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*['’]s?\s+authors)\b|\b(the\s+authors\s+of\s+"
                  r"(?:the\s+)?[A-Z][^?,]*?)(?=\s+(?:use|used|train|split|propose|evaluate|find|report|"
                  r"prompt|build|from)\b|[?,]|$)", question)
    if m:  # "… do Self-RAG's authors train on?"; "the authors of the X paper think …" ends at "paper"
        return m.group(1) or re.sub(r"(\bpaper)\b.*", r"\1", m.group(2))
    m = _HOW_MANY.search(question)
    if m and m.group(1).lower() not in ("years", "times"):
        noun = m.group(1)
        if noun[:1].isupper() or (owner and owner.lower() in noun.lower()):
            return f"the {noun}"
        return f"{_possessive(owner)} {noun}" if owner else f"the {noun}"
    m = re.search(r"\b([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*['’]s?\s+(?:[a-z-]+\s+){0,2}?[a-z]+[^s'’\W]s)\b|"
                  r"\b(the\s+[a-z]+s\s+of\s+(?:the\s+)?"
                  r"[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)", question)
    if m:
        return m.group(1) or m.group(2)
    if owner and re.search(r"\b(?:wrote|authors?|created|proposed|introduced)\b", question, re.I):
        return f"the authors of {owner}"  # "they" after "Who wrote In-Context RALM?"
    return None


def _contrasted(prev: str, earlier: Sequence[str]) -> str | None:
    """The name of ``prev`` (the previous question) that an elliptical follow-up replaces, or None.

    The name the previous question brought in (not asked about in ``earlier`` turns), the last of those in
    the sentence ("About Berkshire: where is Louis headquartered?" then "And Jazwares?": Louis); when every
    name was asked about before, its first possessor or name, as the conversation's subject.
    """
    names = _besides_filing(list(dict.fromkeys(owners(prev) + topics(prev))), prev)
    if not names:
        return None
    said = " ".join(earlier).lower()
    new = [n for n in names if n.lower() not in said and re.search(r"[^\W\d]", n)
           and not YEARS_ONLY.fullmatch(n)]  # a year is no name, nor are years ("2022 and 2023")
    return max(new, key=lambda n: prev.find(n)) if new else names[0]


_OF_THAT = re.compile(r"\b(?:of|from)\s+(that|those|these|this)\b"
                      r"(?=\s+(?:was|were|is|are|did|do|does|had|has|have|will|would|could|can|[a-z]+ed)\b"
                      r"|\s*[?.!,]|$)", re.I)
"""A demonstrative standing for the thing the previous question asked about: "How much of that was accrued
in 2024?", "How many of those worked in insurance?" (not "of those plaintiffs")."""


def _part_of_previous(asked: str, before: str) -> tuple[str, tuple[str, str]] | None:
    """``asked`` with "of that"/"of those" replaced by the phrase ``before`` asked about, with its owner.

    "How much of that was accrued in 2024 alone?" after "What cumulative wildfire losses had PacifiCorp
    recorded …?" is "How much of PacifiCorp's cumulative wildfire losses was accrued in 2024 alone?".
    Returns (text, (phrase, demonstrative)), or None when ``asked`` has no such demonstrative or ``before``
    asks about no phrase.
    """
    m = _OF_THAT.search(asked)
    head = asked_phrase(before) if m else ""
    if m is None or not head or refers_inside(asked, m.start(1)):
        return None
    owner = next((t for t in topics(before) if re.search(r"[^\W\d]", t)), None)
    phrase = f"{_possessive(owner)} {head}" if owner and owner.lower() not in head.lower() else f"the {head}"
    return asked[:m.start(1)] + phrase + asked[m.end(1):], (phrase, m.group(1))


_IT_CHANGED = re.compile(r"\b(it)\s+(?:grow|rise|increase|decrease|decline|fall|drop|change|shrink|"
                         r"go\s+(?:up|down))\b", re.I)
_WHAT_WAS = re.compile(r"^(?:[Ww]hat|[Hh]ow\s+much)\s+(?:was|were|is|are)\s+"
                       r"((?:the\s+)?[A-Z][^?,]*?['’]s?\s+[a-z][^?,]*?)"
                       r"(?=\s+(?:at|in|for|on|during|as\s+of|according|over)\b|\s*[?,]|$)")
"""A question for one owner's measure: "What was Berkshire Hathaway's shareholders' equity at the end …"."""


def _changed_measure(asked: str, before: str) -> tuple[str, tuple[str, str]] | None:
    """"By how much did it grow?" after "What was Berkshire's shareholders' equity …": the measure grew.

    A measure changes, its owner does not: "it" before a verb of change is the owner's measure the previous
    question asked for. Returns (text, (phrase, "it")) or None.
    """
    m = _IT_CHANGED.search(asked)
    was = _WHAT_WAS.match(before.strip()) if m else None
    if m is None or was is None or refers_inside(asked, m.start(1)):
        return None
    phrase = was.group(1)
    return asked[:m.start(1)] + phrase + asked[m.end(1):], (phrase, m.group(1))


def _same_year(text: str, before: str) -> str:
    """"that year" / "the same year" read as the year of ``before`` ("in 2024"), when it names one."""
    year = _YEAR.search(before)
    if not year:
        return text
    # "at the end of that year" is "at the end of 2024"; "that year" alone, "in 2024"
    text = re.sub(r"\b(of|during|for|by|since|until)\s+(?:that|the same)\s+year\b", rf"\1 {year.group(0)}",
                  text)
    return re.sub(r"\b(?:in\s+)?(?:that|the same)\s+year\b", f"in {year.group(0)}", text)


def _head_noun_refs(text: str, before: str) -> str:
    """"the hospital" after "Mount Sinai Hospital": a definite noun that heads an earlier name means it."""
    for name in topics(before):
        head = name.split()[-1]
        if re.search(rf"{re.escape(name)}['’]?s?\s+paper\b", before):
            continue  # a paper's title: "the retrieval results table" is no "Dense Passage Retrieval"
        if len(name.split()) > 1 and head[:1].isupper() and head.isalpha():
            text = re.sub(rf"\bthe\s+{head.lower()}(?=['’]s\b|\b)", name, text)
    return text


_SUCH = re.compile(r"\bsuch\s+(?!as\b)([a-z][\w-]*?)(s?)\b")
"""A reference by kind: "How much did such events contribute …" (not "such as")."""


def _such_refs(text: str, before: str) -> tuple[str, list[tuple[str, str]]]:
    """(``text`` with "such events" read as ``before``'s noun phrase of that head, [(reference, phrase), …]).

    The phrase keeps up to three modifiers (no article, question word or function word) and takes the number
    the reference has: "such events" after "… a significant catastrophe event …" is "significant catastrophe
    events". ``(text, [])`` when ``before`` has no such phrase.
    """
    read: list[tuple[str, str]] = []

    def phrase(m: re.Match[str]) -> str:
        noun = m.group(1)
        for found in re.finditer(rf"\b((?:[a-z][\w-]*\s+){{1,3}}){re.escape(noun)}(?:e?s)?\b", before):
            mods = found.group(1).split()
            while mods and mods[0] in STOPWORDS | QUESTION_WORDS | {"many", "much", "per"}:
                mods = mods[1:]
            if mods and not any(w in STOPWORDS for w in mods):
                read.append((m.group(0), f"{' '.join(mods)} {noun}{m.group(2)}"))
                return read[-1][1]
        return m.group(0)
    return _SUCH.sub(phrase, text), read


_PART_REF = re.compile(r"\b(?:that|this|the\s+same)\s+(table|figure|ablation)\b", re.I)
"""A reference to a part of a paper the conversation looked at: "in that table", "the same figure"."""


def _part_refs(text: str, before: str) -> tuple[str, list[tuple[str, str]]]:
    """(``text`` with "that table" read as ``before``'s noun phrase of that head, [(reference, phrase)]).

    "What PubHealth accuracy is listed for SAIL in that table?" after "In the Self-RAG paper's main results
    table, …" asks about "the Self-RAG paper's main results table". ``(text, [])`` when ``before`` has no
    such phrase.
    """
    read: list[tuple[str, str]] = []

    def phrase(m: re.Match[str]) -> str:
        noun = m.group(1).lower()
        found = re.search(rf"\bthe\s+(?:[\w.’'-]+\s+){{0,5}}?{noun}\b", before, re.I)
        if found is None or found.group(0).lower() == m.group(0).lower():
            return m.group(0)
        read.append((m.group(0), found.group(0)))
        return found.group(0)
    return _PART_REF.sub(phrase, text), read
