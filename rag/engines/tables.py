"""Financial tables in chunk text, read row by row against their header of years and their scale line."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rag.answer_spans import measures_other
from rag.answer_types import expected_type
from rag.engines.aliases import Aliases, expand
from rag.text import STOPWORDS, number_tokens, terms

_YEARS_HEADER = re.compile(r"((?:\b(?:19|20)\d\d\b\s*){2,})((?:(?:19|20)\d\d\s+vs\.?\s+(?:19|20)\d\d\s*)*)$")
"""A column header of years, then any change columns ("2024 2023 2022 2024 vs 2023 2023 vs 2022")."""
_CAPTION_OWNER = re.compile(r"\b([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){0,3})['’]s?\s+(?:[a-z-]+\s+){0,3}?"
                            r"(?:follows?|are\s+summari[sz]ed|is\s+summari[sz]ed)\b")
"""Whose table a caption announces: "A summary of BNSF’s earnings follows (dollars in millions)."."""


def _row_cells(line: str, n: int) -> tuple[str, list[str]] | None:
    """Split a table row into its label and its last ``n`` cells, or None if it has fewer."""
    cells: list[str] = []
    rest = line.rstrip()
    while len(cells) < n:
        m = re.search(r"(\$?\s*(?:\(\s*[\d,]+(?:\.\d+)?\s*\)|-?\d[\d,]*(?:\.\d+)?|—|–)\s*%?)\s*$", rest)
        if not m:
            return None
        cell = re.sub(r"\(\s*|\s*\)", lambda x: x.group(0).strip(), " ".join(m.group(1).split()))
        cells.insert(0, re.sub(r"\s+%", "%", cell))  # a percentage keeps its sign: "5.5%" is no count
        rest = rest[:m.start()].rstrip()
    label = rest.strip(" $:.")
    if len(re.findall(r"[A-Za-z]", label)) < 6:
        return None
    return label, cells


_CELL = re.compile(r"[$€£]?\(?-?\d[\d,]*(?:\.\d+)?\)?%?|[()%$]|—|–")
"""One cell of a table line after its label: a figure, a percentage, or a bracket or dash of one."""


def figure_row(line: str, asked: set[str]) -> str | None:
    """``line`` when it is a table row whose label is wholly the question's words, else None.

    "GPT-3.5-Turbo 56.1% 88.3%" or "Coal 1,205 1,468 1,529 (17.9 ) (4.0 )": a label, then one to eight
    figures, nothing else. The label starts with a capital and does not end on a function word. Its figures
    are its label's, whatever the column headers (elsewhere in the chunk) call them, so a question about that
    label (``asked``: the question's index terms) may be answered by the row, though not which column. None
    for a row with a word after its first figure, or whose label has a word the question does not.
    """
    words = line.split()
    first = next((i for i, w in enumerate(words) if _CELL.fullmatch(w)), None)
    if not first or any(not _CELL.fullmatch(w) for w in words[first:]):
        return None
    figures = [w for w in words[first:] if re.search(r"\d", w)]
    label = terms(" ".join(words[:first]))
    # "… encoders for up to 40" is a sentence a line end cut, not a row
    if not 1 <= len(figures) <= 8 or not label or not set(label) <= asked or not words[0][:1].isupper() \
            or words[first - 1].lower() in STOPWORDS:
        return None
    return line


def label_share(row: str, asked: Mapping[str, float], aliases: Aliases | None = None) -> float:
    """The share of ``asked`` (index term -> weight) that ``row``'s label (before ", <year>:") holds.

    In [0, 1]; 1.0 when ``asked`` is empty. ``aliases`` expands the label's short forms
    (:func:`rag.engines.aliases.expand`). "Discount rate applicable to PBOs" holds little of "what weighted
    average discount rate … for operating lease liabilities", so it is no answer to it.
    """
    total = sum(asked.values())
    if total <= 0:
        return 1.0
    label = set(expand(terms(re.split(r", (?:19|20)\d\d: ", row, maxsplit=1)[0]), aliases or {}))
    if measures_other(label, set(asked)):
        return 0.0
    return sum(w for t, w in asked.items() if t in label) / total




_SCALE = re.compile(r"\(?\s*(?:(?:dollars|amounts|us\s*\$|\$)\s+)?in\s+(millions|billions|thousands)\b", re.I)
"""A table's scale line: "(in millions)", "(dollars in millions, except per share amounts)"."""
_SCALE_WORD = {"millions": "million", "billions": "billion", "thousands": "thousand"}


def _scaled(cell: str, scale: str) -> str:
    """``$ 88,995`` read with the table's scale: ``$88,995 million`` (a dash or a percentage stays)."""
    if not re.search(r"\d", cell) or cell.endswith("%"):
        return cell  # a dash, or a percentage: no scale
    return f"{cell.replace('$ ', '$')} {scale}"


def table_rows(text: str, question: str) -> list[tuple[str, frozenset[str]]]:
    """Rows of the tables in ``text`` read against their column header of years.

    As ``("<label>, 2024: $ 88,995 (2023: $ 96,223; 2022: $ (22,759))", header stems)``; the question's year
    comes first when the header has it; figures carry the table's scale ("(in millions)" makes
    ``$88,995 million``). Change columns after the years ("2024 vs 2023") are left out, and a caption
    naming whose table it is ("A summary of BNSF’s earnings follows") names each row's owner ("BNSF’s net
    earnings, 2024: $5,031 million"). Only for questions about figures.
    """
    if expected_type(question) != "number":
        return []
    asked = [w for w in number_tokens(question) if re.fullmatch(r"(?:19|20)\d\d", w)]
    out = []
    years: list[str] = []
    changes = 0
    scale = owner = ""
    for line in text.splitlines():
        line = line.strip()
        if found := _SCALE.search(line):
            scale = _SCALE_WORD[found.group(1).lower()]
        if caption := _CAPTION_OWNER.search(line):
            owner = caption.group(1)
        m = _YEARS_HEADER.search(line)
        if m and len(line.split()) <= 16:
            years = m.group(1).split()
            if len(set(years)) < len(years):  # "2024 2023 2024 2023": two tables side by side, whose
                years = []  # columns no single header says; their rows are not read
            changes = len(re.findall(r"\bvs\b", m.group(2) or ""))
            continue
        if not years:
            continue
        row = _row_cells(line, len(years) + changes)
        if row is None:
            continue
        label, cells = row
        cells = cells[:len(years)]  # the change columns ("(0.5 )%") are no year's figure
        if owner and owner.lower() not in label.lower():
            label = f"{owner}’s {label[:1].lower() if label[1:2].islower() else label[:1]}{label[1:]}"
        if scale:
            cells = [_scaled(c, scale) for c in cells]
        pairs = list(zip(years, cells, strict=False))
        first = next((p for p in pairs if p[0] in asked), pairs[0])
        others = "; ".join(f"{y}: {v}" for y, v in pairs if (y, v) != first)
        rendered = f"{label}, {first[0]}: {first[1]}" + (f" ({others})" if others else "")
        out.append((rendered, frozenset(terms(" ".join(years)))))
    return out
