"""Whether a pronoun or a definite noun phrase of a question points inside the question itself.

contextualize_question replaces a back-reference ("it", "its", "their", "the company") with a name from an
earlier turn only when the question has no antecedent of its own. A question such as "The arena where the
Lewiston Maineiacs played their home games can seat how many people?" or "Which function gets a collection
by name, creating it if it doesn't exist?" is self-contained, and must pass unchanged whatever came before.

The rules are about grammar (agreement in number, the phrase the question asks about, restrictive
modifiers), not about any one corpus.
"""

from __future__ import annotations

import re

from rag.engines.phrases import topics
from rag.text import STOPWORDS

_AUX = (r"(?:does|do|did|is|are|was|were|has|have|had|can|could|will|would|should|may|might|must)")
_NAME = r"(?:the\s+)?[A-Z][\w&.'’-]*(?:\s+(?:of\s+)?[A-Z][\w&.'’-]*)*"
_SUBJECT = re.compile(rf"\b{_AUX}\s+(?:it|they|the\s+(?:company|firm|group|paper|authors|model|system)|"
                      rf"{_NAME})\s+[a-z]")
"""An auxiliary, then its subject (a pronoun, "the company" or a name), then the verb: "does BNSF have",
"did the company use … its"."""
_SINGULAR_SUBJECT = re.compile(rf"\b(?:does|is|was|has)\s+{_NAME}\s+[a-z]")
"""A name as the subject of a singular auxiliary ("does TriviaQA have"): "their" after it means others."""
_WH_PHRASE = re.compile(rf"^\s*(?:(?:in|on|at|for|from|by|with|under|of|to|since|about)\s+)?"
                        rf"(?:how\s+(?:many|much)|which|what|whose)\s+"
                        rf"(?P<head>(?:(?!{_AUX}\b|of\b)[\w.&-]+\s+){{0,4}}?)(?={_AUX}\b|of\b|$)", re.I)
"""The head of the phrase a question asks about ("Which API", "How much CPU memory", "Which committee" of
"Which committee of Berkshire's board"): a reference never means it."""
_INDEFINITE = re.compile(r"\b(?:a|an)\s+(?:[\w'’-]+\s+){0,3}?[a-z][\w-]*[a-rt-z]\b")
"""An indefinite singular noun phrase ("a collection", "a Chroma collection"): a later "it" means it."""
_PLURAL_NOUN = re.compile(r"\b(?!(?:is|was|has|does|this|its|as|us|yes|less|unless|across|plus|thus|"
                          r"whereas|always|perhaps|news|series|analysis|basis|class|process|access|"
                          r"business|address|status|bus|gas)\b)[a-z][a-z-]{2,}[^s'’\W]s\b")
"""A plural common noun ("records", "restaurants"), leaving out common words that merely end in "s"."""
_NAMED_SUBJECT = re.compile(rf"\b{_AUX}\s+{_NAME}\s+[a-z]")
"""An auxiliary, then a name as its subject, then the verb: "did Berkshire Hathaway Energy repurchase"."""
_REDUCED_RELATIVE = re.compile(r"it\s+(?!(?:is|was|has|does|did|can|will)\b)[a-z]+(?:ed|s)\b")
""""it" as the subject of a clause that describes a noun: "the plaintiffs it settled with"."""
_DEFINES_TERM = re.compile(r"\bstand\s+for\b|\bmean\b", re.I)
"""A question about what a term means ("What does HCL stand for in its business?"): the term is no owner."""
_RESTRICTED = re.compile(r"\s+(?:of|that|which|who|whom|whose|where|when|in\s+which)\b")
"""What makes a definite noun phrase restrictive: "the company that …", "the authors of …"."""


def asked_phrase(question: str) -> str:
    """The head of the phrase ``question`` asks about ("API" in "Which API did … use?"), or ""."""
    m = _WH_PHRASE.match(question)
    return m.group("head").strip() if m else ""


_SAYING = re.compile(r"\b(?:certif(?:y|ies)|(?:confirm|attest|affirm|acknowledge|declare|state|say|report|"
                     r"claim|promise|agree|show|prove|ensure)s?)\s+$", re.I)
"""A verb of saying or showing whose clause follows with no "that": "certify they've complied"."""


def refers_inside(question: str, at: int) -> bool:
    """Whether the back-reference at character ``at`` of ``question`` points inside ``question`` itself.

    True when:

    - a definite noun phrase is restricted by what follows it ("the company that Sachin Warrier worked
      for", "the work of a historian", "the authors of the Lewis et al. RAG paper");
    - the reference is capitalised inside a sentence, so part of a title ("The Thing of It Is");
    - "its" or "their" follows the question's own subject ("does BNSF … its system"), or a name the question
      gives besides the phrase it asks about ("… Berkshire's board … overseeing its …", "the Lewiston
      Maineiacs played their home games");
    - "their" or "them" follows a plural noun of the question's own ("filter records by their metadata");
    - "it" follows an indefinite noun phrase ("a collection …, creating it");
    - a name comes before it and a new clause ("and", "but", "or", a comma) starts between that name and
      the reference ("What is the retriever of RAG and how is it trained?"); or "they" follows a plural
      noun and a subordinating word ("How do language models behave when they …").
    """
    before, rest = question[:at], question[at:]
    word = re.match(r"[\w'’]+(?:\s+\w+)?", rest)
    ref = word.group(0) if word else ""
    if re.match(r"(?:the|this|that)\s", ref, re.I) and _RESTRICTED.match(rest[len(ref):]):
        return True
    if rest[:1].isupper() and before.strip() and not re.search(r"[.?!:]\s*$", before):
        return True  # "The Thing of It Is", "titled "Their Lives"": capitalised inside a sentence, a title
    wh = _WH_PHRASE.match(before)
    own = before[wh.end():] if wh else before  # a reference never means the phrase the question asks about
    lower = ref.lower()
    it = (lower.split() or [""])[0] == "it"
    # "their" is no singular subject's: "How many test questions does TriviaQA have in their dataset table?"
    singular = lower.startswith("their") and _SINGULAR_SUBJECT.search(before) and not _PLURAL_NOUN.search(own)
    if lower.startswith(("its", "their")) and not singular and not _DEFINES_TERM.search(before) and (
            _SUBJECT.search(before) or any(not (before.startswith(t) and " " not in t and not t.isupper())
                                           for t in topics(own))):
        return True  # "How many hubs does BNSF have across its system?", "the Maineiacs played their games"
    if lower.startswith(("its", "their")) and _NAMED_SUBJECT.search(rest):
        return True  # "What share of its stock did Berkshire Hathaway Energy buy?": the subject after it
    noun = re.search(r"\b([a-z]{3,})\s+$", before)
    if it and topics(own) and noun is not None and \
            noun.group(1) not in STOPWORDS and _REDUCED_RELATIVE.match(rest):
        return True  # "How much did PacifiCorp pay the plaintiffs it settled with?": a clause about a noun
    if lower.startswith(("their", "them")) and _PLURAL_NOUN.search(own):
        return True  # "used to filter records by their metadata", "to have them strip search"
    if it and _INDEFINITE.search(own):
        return True  # "Which function gets a collection by name, creating it if it doesn't exist?"
    if re.match(r"(?:they|them|their|theirs)\b", rest, re.I) and re.search(
            r"\b[a-z]{3,}s\b.*\b(?:when|if|because|while|as|that|which|who|whether|so)\s+$", before):
        return True  # "How do language models behave when they …": a plural noun of its own
    if re.match(r"they\b", rest, re.I) and re.search(r"\b[a-z]{3,}s\b", own) and _SAYING.search(before):
        return True  # "How often must employees certify they've complied?": what they say of themselves
    joins = [m.start() for m in re.finditer(r"\s(?:and|but|or)\s|[,;:]", before, re.I)]
    when = re.search(r"\s(?:when|after|before|once|since)\s+$", before)
    if re.match(r"(?:it|the\s+[a-z]+)\b", rest, re.I) and when and topics(before[:when.start()]):
        # "What price did Berkshire pay when it bought …?", "… RAG-Token get when the retriever is frozen?"
        return True
    return bool(joins) and bool(topics(before[:joins[-1]]))
