"""Which row of a results table a question names: the names of its label, and the group it is listed under.

Used by :mod:`rag.engines.benchmarks`. A table lists rows in groups: under a caption line ("Baselines
without retrieval", "Baselines with retrieval", "Single" / "Multi") or with the group's word opening the
label ("Single BM25+BERT", "Multi DPR", "Our SELF-RAG 7B"). The group's word names no row ("single" in
"BM25+DPR trained on a single dataset" is not the row "Single ORQA"), but it tells apart two rows of one
label ("Alpaca13B" without and with retrieval).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

PAREN = re.compile(r"\([^()]*\)")
NAME = re.compile(r"[A-Za-z][\w.+-]*|\d+[A-Za-z][\w.+-]*")
"""A name in a row's label: "RAG-Seq.", "ORQA", a model size ("13B")."""
_SIZE = re.compile(r"\d+(?:\.\d+)?[BMK]", re.I)
"""A model's size ("13B"): alone it names no row (every model of a table has one)."""
_CAPTION_NOISE = frozenset(("the", "a", "an", "of", "and", "or", "on", "in", "for", "to"))
"""Words of a group's caption that say nothing of which group it is."""


def group_words(labels: Iterable[str]) -> frozenset[str]:
    """The words (lower case) that open labels as the name of their group ("single", "multi", "our").

    A word that opens two or more labels of several words ("Single BM25+BERT …", "Single ORQA …"; "Our
    SELF-RAG 7B", "Our SELF-RAG 13B"), or one whose label without it is another row's ("Multi DPR", "DPR").
    """
    seen = [" ".join(label.lower().split()) for label in labels]
    several = [label.split(" ", 1) for label in seen if " " in label]
    first = Counter(word for word, _ in several)
    return frozenset(w for w, n in first.items() if n >= 2) | {word for word, rest in several if rest in seen}


def _asked_text(question: str) -> str:
    """``question`` in lower case, without the paper it names.

    The paper says where the table is, not which row: "the Self-RAG paper's … table", "Lewis et al.'s
    retrieval-augmented generation paper".
    """
    return re.sub(r"\b(?:the|\w+\s+et\s+al\.?['’]s)\s+\S+(?:\s+\S+){0,3}?\s+paper['’]?s?\b", " ",
                  question.lower())


def _said(t: str, asked: str) -> bool:
    """Whether the name ``t`` (lower case) is a word of ``asked``, not part of another name."""
    return bool(re.search(rf"(?<![\w+-]){re.escape(t)}(?![\w+-])", asked))


def _glued_size(t: str, asked: str) -> bool:
    """Whether ``t`` is a name glued to its size that ``asked`` says apart ("alpaca13b": "Alpaca 13B")."""
    return any(_SIZE.fullmatch(t[k:]) and _said(t[:k], asked) and _said(t[k:], asked)
               for k in range(2, len(t) - 1))


def row_matches(label: str, question: str, weak: frozenset[str] = frozenset()) -> int:
    """How many of the label's names the question holds (0: the row is not the one asked about).

    A name with another note than the question's is another row: "T5 (11b)" when "T5 (large)" is asked;
    and a name joined to another is another name: "BM25+DPR" is not "BM25". A name glued to its size
    ("Alpaca13B") is that name at that size. The words of ``weak`` (:func:`group_words`) and model sizes
    count only beside another name: alone they name no row (see :func:`row_match`).
    """
    hits, strong = row_match(label, question, weak)
    return hits if strong else 0


def row_match(label: str, question: str, weak: frozenset[str] = frozenset()) -> tuple[int, bool]:
    """(names of the label the question holds, whether one is more than a group's word or a model size).

    "Our SELF-RAG 7B" for "the 7B model" holds one name, only a size: the row when no other row holds a
    name the question gives, not when "Alpaca 13B" is asked and the row "Alpaca13B" holds it.
    """
    asked = _asked_text(question)
    for name, note in re.findall(r"([\w.+-]+) \(([^()]+)\)", question):
        own = rf"(?<![\w-]){re.escape(name)} \("
        if re.search(rf"{own}(?!{re.escape(note)}\))[^()]+\)", label, re.I) \
                and not re.search(rf"{own}{re.escape(note)}\)", label, re.I):
            return 0, False
    hits = started = strong = 0
    said = set(re.findall(r"[a-z0-9]+", asked))
    for token in PAREN.sub(" ", label).split():
        token = token.split("*")[0]  # "Toolformer*6B": a name, a footnote's mark, a model size
        if not NAME.fullmatch(token):
            continue
        t = token.lower().rstrip(".")
        if len(t) < 2:
            continue
        parts = t.split("-")
        if _said(t, asked) or (
                token.endswith(".") and len(t) >= 3 and re.search(rf"(?<![\w-]){re.escape(t)}\w", asked)) or (
                len(parts) >= 3 and set(parts) <= said) or _glued_size(t, asked):  # "3-way FEVER"
            hits += 1
            strong += t not in weak and not _SIZE.fullmatch(t)
        elif len(t) >= 5 and re.search(rf"(?<![\w-]){re.escape(t)}\w", asked):
            started += 1  # "Multi" for "multiple": counts beside another name the question gives, never alone
    for note in PAREN.findall(label):  # "T5 (large)": the note tells rows of one name apart
        if note.lower() in asked:
            hits += 1
            strong += 1
    plain = PAREN.sub(" ", label).lower().split()
    if len(plain) > 1 and all(w.isalpha() for w in plain) and "-".join(plain) in asked:
        hits += len(plain)  # "the hard-constraints variant" for the row "Hard constraints"
        strong += 1
    return (hits + started if hits else 0), bool(strong)


def group_fit(group: str, question: str) -> float:
    """How well the caption of a row's group fits ``question``.

    Its words the question says, less half of those it does not: "Baselines without retrieval" fits "…
    Alpaca 13B get without retrieval?" by 1.5, "Baselines with retrieval" by 0. 0.0 for no group.
    """
    words = [w for w in re.findall(r"[a-z]+", group.lower()) if w not in _CAPTION_NOISE]
    asked = set(re.findall(r"[a-z]+", question.lower()))

    def said(w: str) -> bool:  # "multi" in "multiple", "baselines" for "baseline"; "with" is no "without"
        return w in asked or any(len(a) >= 5 and len(w) >= 5 and (a.startswith(w) or w.startswith(a))
                                 for a in asked)

    return sum(1.0 if said(w) else -0.5 for w in words)


def unambiguous(found: list[tuple[int, float, str, frozenset[str]]]) -> list[tuple[str, frozenset[str]]]:
    """The cells ``found`` (hits, group fit, cell, terms), best row first, without two rows of one label.

    "BM25+DPR" under "Single" and again under "Multi", with other figures, or two rows whose labels differ
    only in marks or figures ("Gold 7 ✗", "Gold 7 ✓"): which one is asked is not clear, unless the group
    of one fits the question better than every other's (:func:`group_fit`: "trained on a single dataset").
    A row whose names are a part of another's that the question names more of is dropped ("DPR" beside
    "Multi DPR" for "DPR trained on multiple datasets").
    """
    by_label: dict[tuple[str, ...], list[tuple[int, float, str, frozenset[str]]]] = {}
    for f in found:
        by_label.setdefault(_label_names(f[2].rsplit(": ", 1)[0]), []).append(f)
    kept = []
    for cells in by_label.values():
        best = max(fit for _, fit, _, _ in cells)
        top = [f for f in cells if f[1] == best]
        if len({f[2].rsplit(": ", 1)[1] for f in top}) == 1:
            kept.append(top[0])
    # "DPR" beside "Multi DPR" for "trained on multiple datasets": the row the question names more of
    names = {f[2]: set(_label_names(f[2].rsplit(": ", 1)[0])) for f in kept}
    kept = [f for f in kept if not any(g[0] > f[0] and names[f[2]] < names[g[2]] for g in kept)]
    return [(cell, t) for _, _, cell, t in sorted(kept, key=lambda f: (-f[0], -f[1]))]


def _label_names(label: str) -> tuple[str, ...]:
    """The names of a rendered cell's label and column, without figures and marks.

    "Gold 7 ✗, top-20" and "Gold 7 ✓, top-20" (in-batch training or not) are one row as a question names it.
    """
    label = re.sub(r" \(under [^()]*\)", "", label)  # the group is no part of the row's name
    return tuple(t.lower() for t in label.replace(",", " ").split() if NAME.fullmatch(t))
