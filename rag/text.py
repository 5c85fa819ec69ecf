"""Text analysis shared by the offline engine, the hashing embeddings and lexical statistics."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import snowballstemmer

# English stop words (the classic SMART/Snowball core); they carry no topical signal.
STOPWORDS = frozenset(
    [
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are",
    "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "cannot", "could", "couldn", "did", "didn", "do", "does", "doesn", "doing", "don",
    "down", "during", "each", "either", "etc", "few", "for", "from", "further", "get", "gets", "had",
    "hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here", "hers", "herself", "him",
    "himself", "his", "how", "however", "i", "if", "in", "into", "is", "isn", "it", "its", "itself",
    "just", "let", "ll", "me", "might", "more", "most", "must", "mustn", "my", "myself", "no", "nor",
    "not", "now", "of", "off", "on", "once", "one", "only", "or", "other", "ought", "our", "ours",
    "ourselves", "out", "over", "own", "per", "re", "same", "shall", "shan", "she", "should", "shouldn",
    "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then",
    "there", "these", "they", "this", "those", "through", "thus", "to", "too", "under", "until", "up",
    "upon", "us", "use", "used", "using", "very", "via", "was", "wasn", "we", "were", "weren", "what",
    "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with",
    "within", "without", "won", "would", "wouldn", "yes", "yet", "you", "your", "yours", "yourself",
    "yourselves", "s", "t", "d", "m", "ve", "e", "g", "eg", "ie",
]
)

# Words that frame a question but say nothing about its topic.
QUESTION_WORDS = frozenset(
    [
        "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "does", "do", "did", "is",
        "are", "was", "were", "can", "could", "explain", "describe", "tell", "give", "list", "name",
    ]
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Scripts written without spaces between words: Hangul Jamo, Hiragana, Katakana, Hangul
# compatibility Jamo, CJK ideographs (extension A, unified, compatibility), Hangul syllables.
_CJK_CHARS = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_HAS_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"([{_CJK_CHARS}]+)")


def _cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a run of CJK characters.

    (a lone character stays one term), as Lucene's CJK analyzer does: no dictionary, and a two-character word,
    the most common length in Chinese, is matched exactly.
    """
    if len(run) < 2:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_local = threading.local()


def words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (letters and digits; possessives folded).

    Chinese, Japanese and Korean runs, which have no spaces between words, become overlapping
    character bigrams (``'检索器'`` gives ``'检索'``, ``'索器'``); other text is unchanged by them.
    """
    out: list[str] = []
    for token in _WORD.findall(text.lower()):
        out.extend(_token_words(token))
    return out


def _token_words(token: str) -> list[str]:
    """The words of one :data:`_WORD` match (lower-cased): itself, folded, or its CJK bigrams."""
    token = token.replace("’", "'")
    if token.endswith("'s"):
        token = token[:-2]
    token = token.replace("'", "")
    if not _HAS_CJK.search(token):
        return [token]
    out: list[str] = []
    for i, piece in enumerate(_CJK_RUN.split(token)):
        if piece:
            out.extend(_cjk_bigrams(piece) if i % 2 else [piece])
    return out


_TOKEN_TERMS: dict[str, tuple[str, ...]] = {}
"""Cache of :func:`terms` per :data:`_WORD` match (with the default stop words); emptied when it
reaches :data:`_TOKEN_TERMS_MAX` entries. Text repeats its words, so most tokens are looked up, not
folded and stemmed again (ingest tokenises every chunk)."""
_TOKEN_TERMS_MAX = 500_000


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball (Porter 2) English stem of one lower-case word.

    One stemmer per thread: a snowballstemmer object keeps its word in itself, so threads sharing
    one (Compare runs pipelines in parallel) corrupt each other's stems ("string index out of range").
    """
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


def terms(text: str, *, drop: frozenset[str] = STOPWORDS) -> list[str]:
    """Index terms of ``text``: stems of its words, without stop words and 1-letter tokens.

    Digits are kept (years and numbers matter in questions), and so are CJK bigrams and lone
    CJK characters (see :func:`words`).
    """
    if drop is not STOPWORDS:
        return _keep(words(text), drop)
    out: list[str] = []
    cache = _TOKEN_TERMS
    for token in _WORD.findall(text.lower()):
        got = cache.get(token)
        if got is None:
            if len(cache) >= _TOKEN_TERMS_MAX:
                cache.clear()
            got = cache[token] = tuple(_keep(_token_words(token), drop))
        out.extend(got)
    return out


def _keep(ws: list[str], drop: frozenset[str]) -> list[str]:
    return [stem(w) for w in ws if w not in drop and (len(w) > 1 or w.isdigit() or _HAS_CJK.match(w))]


def query_terms(text: str) -> list[str]:
    """Distinct index terms of a question, in order, without question-framing words."""
    seen: dict[str, None] = {}
    for term in terms(text, drop=STOPWORDS | QUESTION_WORDS):
        seen.setdefault(term, None)
    return list(seen)


_ABBREVIATION = re.compile(
    r"\b(?:al|e\.g|i\.e|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|Tab|No|Dr|Mr|Mrs|Ms|Prof|St|approx|resp|"
    r"Co|Inc|Ltd|Corp|Bros|Jr|Sr|Mt|Ft|Gen|Col|Lt|Capt|Sgt|Rev|Gov|Sen|[A-Z])\.$")
"""Words whose full stop ends no sentence: "et al.", "KKR & Co. L.P.", "Franklin D. Roosevelt"."""
_HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+[A-Z][^.!?;,]{0,60}|[A-Z][^.!?:;,]{0,60})$")


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences on terminal punctuation followed by a capital or digit.

    Short lines that look like headings ("2.4 Training") end a sentence of their own, so
    they are not glued to the sentence that follows them in PDF text.
    """
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if _HEADING.match(line) and len(line.split()) <= 6:
            if current:
                blocks.append(" ".join(current))
                current = []
            blocks.append(line)
            continue
        current.append(line)
    if current:
        blocks.append(" ".join(current))
    out: list[str] = []
    for block in blocks:
        flat = re.sub(r"\s+", " ", block).strip()
        pieces = [s.strip() for s in _SENTENCE.split(flat) if s.strip()]
        merged: list[str] = []
        for piece in pieces:
            if merged and _ABBREVIATION.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {piece}"  # "et al. 2009" is not a sentence end
            else:
                merged.append(piece)
        out.extend(merged)
    return out


# -- what a question asks for --------------------------------------------------------------
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_YEAR = re.compile(r"\b(?:1[0-9]|20)\d\d(?:s)?\b")
_DATE = re.compile(rf"\b{_MONTH}\s+\d{{1,2}}\b|\b\d{{1,2}}\s+{_MONTH}\b|\b{_MONTH}\s+(?:1[0-9]|20)\d\d\b")
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                     r"twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen)\b",
                     re.IGNORECASE)



def has_date(text: str) -> bool:
    """True when ``text`` holds a year (1000-2099) or a day-and-month date."""
    return bool(_YEAR.search(text) or _DATE.search(text))


def has_number(text: str) -> bool:
    """True when ``text`` holds a figure: a digit or a number word."""
    return bool(_NUMBER.search(text))


def number_tokens(text: str) -> list[str]:
    """Distinct word tokens of ``text`` that contain a digit ("2022", "q1"), in order."""
    return list(dict.fromkeys(w for w in words(text) if any(ch.isdigit() for ch in w)))


def clip(text: object, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters.

    Cut at a word boundary with an ellipsis (``…``) when it is longer; a single word longer than half of
    ``limit`` is cut inside, still with the ellipsis.
    """
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if flat[limit - 1] != " " and " " in cut[limit // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


DISCOURSE_WORDS = frozenset({
    "besides", "apart", "except", "unlike", "like", "according", "regarding", "concerning", "considering",
    "including", "excluding", "following", "given", "now", "also", "then", "thus", "hence", "however",
    "moreover", "furthermore", "additionally", "meanwhile", "overall", "switching", "anyway", "finally",
    "lastly", "next", "okay", "ok", "so", "well"})
"""Capitalised words that open a sentence, never part of a name: "Besides NVIDIA, …" is about NVIDIA."""
_LEAD_IN = re.compile(r"(^|[.!?:;]\s+)([A-Z][a-z]+(?:ing|ed))(?=\s+(?:to|at|on|with|from|over|back|into)\b)")


def lower_lead_ins(text: str) -> str:
    """``text`` with a participle that opens a sentence in lower case.

    "Moving to the goodwill note: …", "Turning to IMC, …" and "Looking at BNSF, …" name no "Moving",
    "Turning to IMC" or "Looking".
    """
    return _LEAD_IN.sub(lambda m: m.group(1) + m.group(2).lower(), text)


_FRAME = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|so|and|now)\b[\s,.!]*)*"
    r"(?:(?:switching|moving|turning|going|flipping|coming|heading|returning|getting)(?:\s+(?:back|over|on))?"
    r"\s+(?:to|onto)|back\s+to|different\s+(?=paper|document|filing|report|company))\b", re.I)


def frame_words(question: str) -> frozenset[str]:
    """The words of a topic-shift frame that opens ``question``, lower-case (empty when none).

    "Switching to the REALM paper: …", "Moving on to flooring: …", "Back to Berkshire: …", "Different paper:
    …" say where the question goes, not what it asks: a passage never says "switching". The topic itself
    ("the REALM paper", "paper") is kept; a frame of stop words only ("Now on the 10-K: …") has none.
    """
    m = _FRAME.match(question)
    return frozenset(words(m.group(0).lower())) - STOPWORDS if m else frozenset()


MONTHS = frozenset({"january", "february", "march", "april", "june", "july", "august", "september", "october",
                    "november", "december"})
"""Month names ("May" left out: a verb too): a date's word, not a topic a follow-up refers back to."""


_NUMBER_TOKEN = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.%])")
MIN_TICKS = 4


def axis_ticks(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a chart's axis read as text, as (start, end) character offsets.

    MIN_TICKS or more numbers in a row, only spaces between them, evenly spaced ("0.0 25.0 50.0 75.0
    100.0"); two axes run together are two runs. A table row's figures are not evenly spaced.
    """
    nums = [(m.start(), m.end(), float(m.group(0))) for m in _NUMBER_TOKEN.finditer(text)]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(nums):
        j = i + 1
        step = None
        while j < len(nums) and not text[nums[j - 1][1]:nums[j][0]].strip():
            gap = round(nums[j][2] - nums[j - 1][2], 6)
            if step is None:
                step = gap
            elif gap != step:
                break
            j += 1
        if j - i >= MIN_TICKS and step:
            out.append((nums[i][0], nums[j - 1][1]))
            i = j
        else:
            i = max(i + 1, j - 1) if j - i > 2 else i + 1
    return out
