"""What a figure counts: the plural noun right after it ("21,015,324 passages", "150k training instances").

Used by :func:`rag.answer_spans.holds`: a "how many" question's figure must count what it asks about, and a
question about a score or a rate takes no figure that counts something else.
"""

from __future__ import annotations

import re

from rag.text import terms

COUNTED_NEAR = (6, 4)
"""Index terms before and after a figure within which the noun a "how many" question counts must occur."""


def _counts(text: str, span: str, noun: str) -> bool:
    """Whether ``noun`` (an index term) occurs within COUNTED_NEAR of ``span`` in ``text``.

    "14,200 miles" counts miles; "five pipeline systems" does not, and neither does "four types of queries"
    count queries.
    """
    before, after = COUNTED_NEAR
    for m in re.finditer(re.escape(span), text):
        if noun in terms(span):
            return True
        # a figure followed by a plural noun of its own counts that: "five Canadian provinces" after
        # "travel centers" counts provinces, "four types of multi-hop queries" counts types
        own = _OWN_NOUN.match(text, m.end())
        if own is not None:
            if noun in terms(own.group(0)):
                return True
            continue
        if noun in terms(text[m.end():])[:after] or noun in terms(text[:m.start()])[-before:]:
            return True
    return False


_OWN_NOUN = re.compile(r"\s+(?:[A-Za-z][\w-]*\s+){0,2}?(?!(?:was|has|does|this|thus|its|his|plus|"
                       r"minus|versus|whereas|as|is)\b)[a-z][\w-]*[a-rt-z]s\b(?!\s*[’'])")
"""A plural noun right after a figure (at most two words between): the thing that figure counts."""


def _counts_own(text: str, span: str, noun: str) -> bool:
    """Whether the figure ``span`` is followed by ``noun`` as its own plural noun ("21,015,324 passages")."""
    return any((own := _OWN_NOUN.match(text, m.end())) is not None and noun in terms(own.group(0))
               for m in re.finditer(re.escape(span), text))


SCORE_WORDS = frozenset(terms("precision recall accuracy score match rate ratio percentage bleu rouge f1 em "
                               "perplexity"))
"""Index terms of a measure that is a score or a rate, never a count of things."""


def counts_other(text: str, span: str, question: str) -> bool:
    """Whether the figure ``span`` counts things ``question`` (about a score) does not ask about.

    "150k training instances" is no citation precision, nor "four SELF-RAG 7B variants" one: the plural
    noun right after the figure (:data:`_OWN_NOUN`) is none of ``question``'s words, and the question asks
    for a score or a rate (:data:`SCORE_WORDS`) and counts nothing ("how many"). False when every place
    ``span`` occurs is followed by no plural noun or by one the question names.
    """
    asked = set(terms(question))
    if not asked & SCORE_WORDS or re.search(r"\bhow\s+many\b", question, re.I):
        return False
    owns = [_OWN_NOUN.match(text, m.end()) for m in re.finditer(re.escape(span), text)]
    return bool(owns) and all(own is not None and not set(terms(own.group(0))) & asked for own in owns)
