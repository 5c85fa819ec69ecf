"""The last slots an ellipsis can fill: a line item, a listed pair, the subject of "is" or "for".

Tried by :func:`rag.engines.slots.fill_slot` after every other slot, for a fragment that names what the
previous question asked about in other words than its slots': "And patents and technology?" after "… the
net carrying value of the insurance and other businesses' trademarks and trade names …", "And long-duration
insurance contracts?" after "… what after-tax balance did defined benefit pension plans carry …", "And
ChatGPT without retrieval?" after "… is reported for Ret-Llama2-c13B". Before this, such a fragment became
"What about X of Y?", which named neither the measure nor the table.
"""

from __future__ import annotations

import re

from rag.quantities import QUANTITY_WORDS
from rag.text import STOPWORDS

_WORD = r"(?:(?!(?:" + "|".join(sorted(STOPWORDS, key=len, reverse=True)) + r")\b)[a-z][\w-]*)"
"""A lowercase content word."""
_ITEM_WORDS = rf"{_WORD}(?:\s+{_WORD}){{0,3}}"
_LISTED = re.compile(rf"\b{_ITEM_WORDS}(?:,\s+{_ITEM_WORDS})*,?\s+and\s+{_ITEM_WORDS}\b(?!['’])")
"""A listed pair or list of lowercase items ("trademarks and trade names", "land, buildings and
improvements"): a balance sheet's or a note's line item."""
_ITEM = re.compile(rf"(?:the\s+)?{_ITEM_WORDS}(?:(?:,\s+|,?\s+and\s+){_ITEM_WORDS})*")
"""A fragment that is a lowercase line item ("long-duration insurance contracts", "machinery and
equipment")."""
_ANAPHORA = re.compile(r",?\s+(?:there|then|instead|too|as\s+well|in\s+(?:the\s+same|that|this)\s+"
                       r"(?:[a-z][\w-]*\s+){0,2}(?:table|section|note|comparison|ablation))$", re.I)
"""A fragment's words that point back at the previous question's frame ("the ORQA baseline's exact match
there", "BM25+DPR in the same setting"): the frame stays, so they go."""
_COPULA_SUBJECT = re.compile(r"^(.*?\b(?:is|are|was|were)\s+)((?:the\s+)?(?:[\w.+-]+\s+){0,4}?[\w.+-]+)"
                             r"(\s+(?:on|in|at|for|as|across|within)\s.*)$")
"""A question split at the subject of "is"/"were" ("how accurate is the 7B model on PopQA", "What were
unearned premiums on Berkshire's consolidated balance sheet …")."""
_DID_SUBJECT = re.compile(rf"^(.*?\b(?:do|does|did)\s+)({_WORD}(?:\s+{_WORD}){{0,4}}?)"
                          r"(\s+[a-z][\w-]*(?:\s+(?:at|in|on|for|during|by|of)\b.*)?)$")
"""A question split at a lowercase subject of "did" ("… did defined benefit pension plans carry at the end
of 2024")."""
_FOR_NAME = re.compile(r"^(.*\b(?:for|by)\s+)([A-Z][\w.+-]*(?:\s+[A-Z\d][\w.+-]*){0,2})$")
"""A question that ends on the name it asks about ("… which FactScore on biographies is reported for
Ret-Llama2-c13B")."""
_NAME_FRAGMENT = re.compile(r"[A-Z][\w.+-]*(?:\s+[\w.+-]+){0,4}")


def without_anaphora(fragment: str) -> str:
    """``fragment`` without its closing words that point back at the previous question (see _ANAPHORA)."""
    cut = _ANAPHORA.sub("", fragment.strip())
    return cut if cut.strip() else fragment


def _is_item(frag: str) -> bool:
    """Whether ``frag`` is a lowercase line item of content words (not "the same", not a clause)."""
    words = re.findall(r"[\w-]+", frag.lower())
    return (bool(_ITEM.fullmatch(frag)) and any(w not in STOPWORDS for w in words)
            and not any(w in STOPWORDS - {"the", "and"} for w in words))


def listed_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"patents and technology" for the previous question's listed items ("trademarks and trade names").

    A list with a word of no content in it ("the insurance and other businesses") is a segment, not an item.
    """
    if not _is_item(frag) or " and " not in f" {frag} ":
        return None
    for m in _LISTED.finditer(prev):
        if all(w not in STOPWORDS or w == "and" for w in re.findall(r"[\w-]+", m.group(0).lower())):
            return prev[:m.start()] + frag.strip() + prev[m.end():], f"“{m.group(0)}” by “{frag.strip()}”"
    return None


def item_subject_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """A line item for the subject of "is"/"were" or of "did" (not for the measure: "the net carrying value").

    "And long-duration insurance contracts?" after "… what after-tax balance did defined benefit pension
    plans carry …"; "And the retrieval-augmented Alpaca 7B baseline?" after "… how accurate is the 7B model on
    PopQA?".
    """
    np_ = frag.strip()
    m = _DID_SUBJECT.match(prev) if _is_item(np_) else None
    if m is None and (_is_item(np_) or re.match(r"the\s", np_)):
        m = _COPULA_SUBJECT.match(prev)
    if m is None or m.group(2).lower() == np_.lower():
        return None
    subject, rest = m.group(2), m.group(3)
    if (of := re.match(r"(.*?\bof\s+(?:the\s+)?)(.+)$", subject)) and \
            set(of.group(1).lower().split()) & (QUANTITY_WORDS | {"balance", "balances"}):
        # "the balance of insurance premiums receivable": the item, not the measure
        return m.group(1) + of.group(1) + np_ + rest, f"“{of.group(2)}” by “{np_}”"
    words = subject.split()
    if len(words) > 1 and words[-1].lower() == "worth":  # "how much were raw materials worth"
        subject, rest = " ".join(words[:-1]), f" {words[-1]}{rest}"
    last = subject.split()[-1].lower()
    if last in QUANTITY_WORDS - {"premiums", "receivables", "borrowings", "liabilities", "assets"} or \
            last in STOPWORDS:
        return None
    return m.group(1) + np_ + rest, f"“{subject}” by “{np_}”"


def for_name_slot(frag: str, prev: str, owner: str | None) -> tuple[str, str] | None:
    """"ChatGPT without retrieval" for the name a question ends on ("… reported for Ret-Llama2-c13B")."""
    m = _FOR_NAME.match(prev)
    if m is None or not _NAME_FRAGMENT.fullmatch(frag.strip()) or m.group(2) in frag:
        return None
    return m.group(1) + frag.strip(), f"“{m.group(2)}” by “{frag.strip()}”"
