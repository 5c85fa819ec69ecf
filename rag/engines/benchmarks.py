"""Result tables of papers in chunk text: the cell where the row and the column a question names cross.

A results table is a header of column names (datasets, metrics: "Model NQ TQA WQ CT"), sometimes over two
lines (groups such as "Top-20 Top-100" over datasets) or with a line of units ("(acc) (acc) (FS) (em)"),
then rows of a label and figures ("RAG-Seq. 44.5 56.8/68.0 45.2 52.2"). A question that names a row
("RAG-Sequence") and a column ("CuratedTrec", which the header abbreviates "CT") is answered by that cell,
rendered with both ("RAG-Seq., CuratedTrec (CT): 52.2"). Financial tables, with a header of years, are
read by :mod:`rag.engines.tables`.
"""

from __future__ import annotations

import re

from rag.answer_types import expected_type
from rag.engines.rows import PAREN as _PAREN
from rag.engines.rows import group_fit, group_words, row_match, row_matches, unambiguous
from rag.engines.tables import years_header
from rag.text import QUESTION_WORDS, STOPWORDS, terms

_CELL = re.compile(r"(?:-?\d[\d,]*(?:\.\d+)?[%mbk]?|-|–|—)(?:/(?:-?\d[\d,]*(?:\.\d+)?[%mbk]?|-|–|—))?")
"""One cell: a figure (with a unit letter: "738m", not a model size: "13B"), a dash for none, or two of them
("56.8/68.0", "- /50.1")."""
_CURRENCY = re.compile(r"(?<!\S)\$(?=\s*[\d(])")
"""A dollar sign before a cell's amount ("$ 7,563", "$(810)"): a financial table's mark, not a cell."""
_CITATION = re.compile(r"\s*\[\d+(?:,\s*\d+)*\]")
"""A citation in a row's label ("T5-11B+SSM[52]", "REALM [20]"): not part of its name, and an answer would
read it as a citation of its own."""
CELL_ROW = re.compile(r"^[^\n]{2,}?, [^\n:]{1,80}: -?\d[\d,.]*[%mbk]?(?:/(?:-?\d[\d,.]*[%mbk]?|-))?"
                      r"(?: \[\d+\])*$")
"""A cell as :func:`benchmark_cells` renders it ("RAG-Seq., CuratedTrec (CT): 52.2"), an answer's lead: its
figure is its row's and column's by construction."""
GROUP_CAPTION_WORDS = 6
"""A line of at most this many words between a header and its rows names a group of rows ("LMs with
proprietary data"); a longer one is prose, which ends a table."""
MAX_LABEL_WORDS = 14
"""A row's label is at most this many words ("T5 (large) (Roberts et al., 2020) Transformer Seq2Seq …")."""


def _cells(line: str) -> tuple[str, list[str]] | None:
    """``(label, cells)`` of a table row: its trailing cells (two or more), or None."""
    tokens = re.sub(r"\s*/\s*", "/", line.strip()).split()
    cells: list[str] = []
    while tokens and _CELL.fullmatch(tokens[-1]):
        cells.insert(0, tokens.pop())
    if len(cells) < 2 or not tokens or len(tokens) > MAX_LABEL_WORDS or not re.search(r"[A-Za-z]", tokens[0]):
        return None
    if not any(re.search(r"\d", c) for c in cells) or any(re.fullmatch(r"\d+\.\d+", t) for t in tokens):
        return None  # no figure, or two rows glued in one line
    return _CITATION.sub("", " ".join(tokens)).strip() or " ".join(tokens), cells


def table_row(line: str) -> bool:
    """True when ``line`` is a table row: a label, then two or more cells, one a figure."""
    return _cells(line) is not None


def _amounts(line: str, head: list[list[str]]) -> tuple[str, list[str]] | None:
    """``(label, cells)`` of a row of dollar amounts under the one header line ``head``, or None.

    "Case liabilities $ 7,563 $ 11,675 $ 19,238" under "Property Casualty Total": when the header names as
    many columns as the row has cells (else it is a line of a financial statement, read by
    :mod:`rag.engines.tables`).
    """
    row = _cells(_CURRENCY.sub(" ", line)) if "$" in line else None
    return row if row is not None and len(head) == 1 and len(head[0]) == len(row[1]) else None


def _header(line: str) -> list[str] | None:
    """The column names of a header line (parenthesised notes left out, "# params" one name), or None.

    A line of names, all capitalised but one ("Name Architectures Pre-training NQ"), even a single one (a
    header the PDF's text puts one name a line: "WQ").
    """
    bare = _PAREN.sub(" ", line)
    if re.search(r"\d[\d,]*\.\d|(?<![\w-])\d{3,}\b", bare):  # a figure, not a name's number ("Top-100")
        return None
    names = re.findall(r"#\s*[A-Za-z]\w*|[A-Za-z][\w.+-]*(?:-\d+)?", bare)
    if not names or len(bare.split()) != sum(len(n.split()) for n in names) \
            or sum(n[:1].isupper() or n[:1] == "#" for n in names) < max(1, len(names) - 1):
        return None
    return [" ".join(n.split()) for n in names]


def _units(line: str) -> list[str] | None:
    """A line of units, one a column ("LM (acc) (acc) (FS) (em)"): the units, or None.

    A bracketed figure is a negative amount, not a unit ("Benefits paid (810) (852)" is a row of a 10-K).
    """
    found = [u.strip("()") for u in _PAREN.findall(line)]
    rest = _PAREN.sub(" ", line).split()
    figure = any(re.fullmatch(r"[$\s]*-?[\d,.]+\s*%?", u) for u in found)
    return found if len(found) >= 2 and len(rest) <= 2 and not figure else None


def _initials(name: str) -> str:
    """"WebQuestions" -> "wq", "Natural Questions" -> "nq", "TriviaQA" -> "tqa"."""
    return "".join(re.findall(r"[A-Z]|(?<=[^A-Za-z])[a-z]|^[a-z]", name)).lower()


def names_column(column: str, name: str) -> bool:
    """True when the header ``column`` is what the question calls ``name``.

    The same word (hyphens aside: "MSMARCO", "MS-MARCO"), its initials ("CT" for "CuratedTrec"), what comes
    before its hyphen ("ARC" for "ARC-Challenge"), its first part in camel case ("Pub" for "PubHealth") or
    its last in capitals ("TREC" for "CuratedTREC"), or a cut of it of four letters or more ("params" for
    "parameters"); a column named in words by its first ("Ground-truth Chunk").
    """
    col = column.lstrip("# ").split()[0].rstrip(".").lower() if column.strip("# ") else ""
    word = name.lower()
    if len(col) < 2:
        return False
    if col == word or col.replace("-", "") == word.replace("-", "") or (
            col == _initials(name) and len(name) > len(col)):  # "MSMARCO" is "MS-MARCO"
        return True
    if word.split("-")[0] == col and "-" in word and not re.search(r"\d", word):
        return True
    camel = re.match(r"[A-Z][a-z]{2,}(?=[A-Z])", name)  # "Pub" for "PubHealth"
    if camel and camel.group(0).lower() == col:
        return True
    tail = name[-len(col):]
    if len(col) >= 3 and len(name) > len(col) and tail.isupper() and tail.lower() == col \
            and name[-len(col) - 1].islower() and column.lstrip("# ")[:len(col)].isupper():
        return True  # "TREC" for "CuratedTREC": its last part, in capitals (never "Health" for "PubHealth")
    stem = col[:-1] if col.endswith("s") else col
    return len(stem) >= 4 and word.startswith(stem) and not re.search(r"\d", col)


def unit_asked(unit: str, question: str) -> bool:
    """Whether ``question`` names the metric a column's ``unit`` abbreviates.

    The unit itself, a word it begins (three letters or more: "mau" for MAUVE, "pre" for precision), or the
    initials of two words ("em": exact match).
    """
    u = unit.lower().strip(". ")
    if len(u) < 2 or not u.isalpha():
        return False
    words = re.findall(r"[a-z]+", question.lower())
    return any(w == u or (len(u) >= 3 and w.startswith(u)) for w in words) or any(
        a[0] + b[0] == u for a, b in zip(words, words[1:], strict=False))


_NO_COLUMN = STOPWORDS | QUESTION_WORDS
"""Words of a question that never name a results table's column."""


def benchmark_cells(text: str, question: str) -> list[tuple[str, frozenset[str]]]:
    """The cells of the results tables in ``text`` at a row and a column ``question`` names.

    As ``("RAG-Seq., CuratedTrec (CT): 52.2", terms of the column's names)``, best row first; only for
    questions about figures. A row's columns come from the header lines above it: the last one when it
    names enough columns, else all of them joined (a header split over lines), their last names, as many
    as the row has cells; a line of units assigns one each, the last name the rest. A header too short for
    a row ("Closed" / "Book" between rows) leaves the one before in force. Then the cells of one-column
    tables of counts (:func:`count_cells`).
    """
    if expected_type(question) != "number":
        return []
    names = {w for w in re.findall(r"[A-Za-z][\w.+-]*[\w+]|[A-Za-z]", question)
             if w.lower() not in _NO_COLUMN}  # "and" names no column ("life and health")
    names |= set(re.findall(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+", question))  # "Natural Questions": "NQ"
    block: list[list[str]] = []  # header lines since the last row or prose line
    kept: tuple[list[list[str]], list[str] | None, bool] = ([], None, False)  # the last row's header
    units: list[str] | None = None
    notes = False
    found: list[tuple[int, float, str, frozenset[str]]] = []
    by_size: list[tuple[int, float, str, frozenset[str]]] = []
    after_row = False  # the line before was a row
    weak = group_words(row[0] for line in text.splitlines() if (row := _cells(line)))
    caption = ""  # the caption of the group of rows the next row is listed under
    for line in text.splitlines():
        head = block or (kept[0] if after_row else [])
        row = _cells(line) or (_amounts(line, head) if units is None else None)
        after_row = row is not None
        if row is None:
            if years_header(line) or line.rstrip().endswith(":"):
                # a financial table's columns are its years (read by rag.engines.tables), and "Insurance and
                # Other:" names a group of a statement's rows, no column
                block, units, notes, kept = [], None, False, ([], None, False)
            elif (u := _units(line)) is not None and block:
                units = u
            elif (h := _header(line)) is not None:
                block.append(h)
            elif block and _PAREN.search(line) and not _PAREN.sub("", line).strip():
                notes = True  # "(79k/4k)" under a column name: the header goes on over the next lines
            elif len(line.split()) > GROUP_CAPTION_WORDS:  # prose: no table goes on across it
                block, units, notes, caption = [], None, False, ""
            elif kept[0]:
                caption = line  # "Baselines without retrieval": a group's caption between rows
            continue
        label, cells = row
        group = kept[0] and len(block) == 1 and len(block[0]) == 1  # "Test" between rows: a group's caption
        caption = block[0][0] if group else label.split()[0] if label.split()[0].lower() in weak else caption
        columns = _columns(block, units, len(cells), names, notes) if block and not group else []
        if columns:
            kept = (block, units, notes)
        else:
            columns = _columns(kept[0], kept[1], len(cells), names, kept[2]) if kept[0] else []
        block, notes = [], False
        hits, strong = row_match(label, question, weak)
        fit = group_fit(caption, question)
        shown = f"{label} (under {caption})" if fit > 0 and caption.lower() not in label.lower() else label
        if hits and columns and (cell := _cell(shown, cells, columns, names, question)) is not None:
            (found if strong else by_size).append((hits, fit, *cell))
    # a row named only by its size ("the 7B model": "Our SELF-RAG 7B") when no row has a name asked
    return unambiguous(found or by_size) + count_cells(text, question)


def _cell(label: str, cells: list[str], columns: list[tuple[str, str]], names: set[str],
          question: str) -> tuple[str, frozenset[str]] | None:
    """The row's cell at the column ``question`` asks for, as (cell with both, the column's terms), or None.

    ``names``: the question's words that may name a column; none of them in the label.
    """
    named = [(n, column, unit, asked) for n, (column, unit) in enumerate(columns)
             if (asked := next((w for w in sorted(names) if column and names_column(column, w)), None))
             and asked.lower() not in label.lower()]
    if (chosen := _asked_column(named, question)) is None:
        return None
    n, column, unit, asked = chosen
    if n >= len(cells) or cells[n] in "-–—":
        return None
    inner = [p for p in (column if asked.lower() != column.lower() else "", unit) if p]
    shown = asked + (f" ({', '.join(inner)})" if inner else "")
    return f"{label}, {shown}: {cells[n]}", frozenset(terms(f"{asked} {column} {unit}"))


_COUNT_ROW = re.compile(r"^([A-Z][^\n.;:!?]{1,80}?)\s+(\d{1,3}(?:,\d{3})+)$")
"""A row of a one-column table of counts: a name, then one figure in groups of thousands ("GPT-4 Alpaca
Instruction-following Open-Instruct 26,168")."""
COUNT_ROWS = 3
"""Consecutive rows that make a one-column table of counts: fewer are lines of prose."""
_COUNT_COLUMN = re.compile(r"\b((?:number|count)\s+of\s+[A-Za-z][\w-]*|[A-Za-z][\w-]*)\s*$", re.I)
"""The column a one-column table's header line names by its last words: "… the number of instances"."""


def _count_row(line: str) -> tuple[str, str] | None:
    """``(name, figure)`` of a row of a one-column table of counts (:data:`_COUNT_ROW`), or None.

    Not a row of several figures run into one count ("Natural Questions 79,168 58,880 8,757 3,610").
    """
    m = _COUNT_ROW.match(line.strip())
    if m is None or re.search(r"\d,\d{3}|\d\.\d|\b\d{3,}\b", m.group(1)):
        return None
    return m.group(1), m.group(2)


def count_row(line: str) -> bool:
    """True when ``line`` reads as a row of a one-column table of counts (:func:`_count_row`)."""
    return _count_row(line) is not None


def count_cells(text: str, question: str) -> list[tuple[str, frozenset[str]]]:
    """The cells of one-column tables of counts in ``text`` at a row ``question`` names.

    As ``("ShareGPT Instruction-following Open-Instruct, number of instances: 13,406", terms of the
    column)``, best row first. A table is COUNT_ROWS rows or more of a name (no figure in it) and one figure
    in thousands, right under a header line with no figure whose last words name the column ("Dataset name
    category Data source the number of instances"). Read only for a question about a number that puts a
    word of the row's name right before the column's noun ("How many ShareGPT instances are …"; not "how
    many instances per aspect … GPT-4's …").
    """
    if expected_type(question) != "number":
        return []
    lines = [line.strip() for line in text.splitlines()]
    found: list[tuple[int, float, str, frozenset[str]]] = []
    i = 0
    while i < len(lines):
        j, rows = i, []
        while j < len(lines) and (row := _count_row(lines[j])):
            rows.append(row)
            j += 1
        header = lines[i - 1] if i else ""
        col = _COUNT_COLUMN.search(header) if j - i >= COUNT_ROWS and not re.search(r"\d", header) else None
        column = col.group(1) if col else ""
        # the words of the question right before the column's noun: "… ShareGPT instances …"
        said = re.findall(rf"([\w.+-]+)(?:['’]s)?\s+{re.escape(column.split()[-1])}\b", question, re.I) \
            if column else []
        before = {w.lower() for w in said}
        for label, figure in rows if before else []:
            if not before & {t.lower() for t in label.split()}:
                continue
            cell = (row_matches(label, question), 0.0, f"{label}, {column}: {figure}",
                    frozenset(terms(column)))
            if cell[0] and cell not in found:  # chunks overlap: a row read twice is one cell
                found.append(cell)
        i = max(j, i + 1)
    return unambiguous(found)


def _asked_column(named: list[tuple[int, str, str, str]], question: str) -> tuple[int, str, str, str] | None:
    """The one column of ``named`` (index, name, unit, the question's word for it) the question asks for.

    None when it names no column or two ("closed-book … in the oracle setting"). Of columns with one name
    ("ASQA (em) (rg) (mau) (pre) (rec)"), the one whose unit the question names ("what MAUVE score"), the
    first when it names none, and None when it names two.
    """
    if len({column for _, column, _, _ in named}) != 1:
        return None
    by_unit = [c for c in named if unit_asked(c[2], question)] if len(named) > 1 else []
    return None if len(by_unit) > 1 else (by_unit or named)[0]


def _columns(block: list[list[str]], units: list[str] | None, n: int, names: set[str],
             notes: bool = False) -> list[tuple[str, str]]:
    """``(column name, unit)`` of a row's ``n`` cells from the header lines ``block``, or [].

    ``notes``: the header had lines of notes under its names, so its lines are one header split by the PDF.
    Else the last line with enough names is the header (lines after it name groups of rows: "Closed Book").
    """
    last = block[-1]
    if units is not None and len(units) == n and len(last) <= n:
        return [(last[min(i, len(last) - 1)], units[i]) for i in range(n)]
    joined = [name for line in block for name in line]
    if notes:
        return [(c, "") for c in joined[-n:]] if len(joined) >= n else []
    at = next((i for i in range(len(block) - 1, -1, -1) if len(block[i]) >= n), None)
    if at is None:
        return []
    line = block[at]
    if len(line) >= 2 * n and len(line) % n == 0 and not any(re.search(r"\d", c) for c in line):
        # "Retrieved Chunk Ground-truth Chunk": names of words each (never "Top-5 Top-20 Top-100")
        k = len(line) // n
        line = [" ".join(line[i:i + k]) for i in range(0, len(line), k)]
    if at >= 1 and len(upper := block[at - 1]) > 1:
        groups = [g for g in upper if re.search(r"\d", g)]  # "Top-20 Top-100" over the datasets
        if groups and n % len(groups) == 0:
            size = n // len(groups)
            group = next((g for g, name in enumerate(groups) if any(names_column(name, w) for w in names)),
                         None)
            if group is not None:
                # the group goes with the cell as its unit: "Single DPR, TriviaQA (Top-20): 79.4"
                return [(c, groups[group]) if group * size <= i < (group + 1) * size else ("", "")
                        for i, c in enumerate(line[-n:])]
    return [(c, "") for c in line[-n:]]
