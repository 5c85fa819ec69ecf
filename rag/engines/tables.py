"""Financial tables in chunk text, read row by row against their header of years and their scale line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import combinations

from rag.answer_spans import MEASURES, measures_other
from rag.answer_types import expected_type
from rag.engines.aliases import Aliases, expand
from rag.engines.captions import PROSE_WORDS, read_caption, stacked_years
from rag.text import STOPWORDS, number_tokens, terms

_WORD_COLUMNS = "Thereafter|Prior|Total"
"""The columns a schedule's header of years may end in ("2025 2026 2027 2028 2029 Thereafter Total")."""
_YEARS_HEADER = re.compile(rf"((?:\b(?:19|20)\d\d\b\s*){{2,}}(?:(?:{_WORD_COLUMNS})\b\s*){{0,2}})"
                           r"((?:(?:19|20)\d\d\s+vs\.?\s+(?:19|20)\d\d\s*)*)$")
"""A column header of years, then any change columns ("2024 2023 2022 2024 vs 2023 2023 vs 2022")."""
COLUMN = rf"(?:(?:19|20)\d\d|{_WORD_COLUMNS})"
"""A column an assembled row names before its figure (", 2024: ", ", Total: ")."""


def years_header(line: str) -> bool:
    """Whether ``line`` ends in a column header of two years or more (:data:`_YEARS_HEADER`)."""
    return _YEARS_HEADER.search(line) is not None


def _row_cells(line: str, n: int) -> tuple[str, list[str]] | None:
    """Split a table row into its label and its last ``n`` cells, or None if it has fewer."""
    cells: list[str] = []
    rest = line.rstrip()
    while len(cells) < n:
        # a cell: a figure, a dash, or "**" (a change "not meaningful", as its footnote says)
        m = re.search(r"(\$?\s*(?:\(\s*[\d,]+(?:\.\d+)?\s*\)|-?\d[\d,]*(?:\.\d+)?|—|–|\*\*)\s*%?)\s*$", rest)
        if not m:
            return None
        cell = re.sub(r"\(\s*|\s*\)", lambda x: x.group(0).strip(), " ".join(m.group(1).split()))
        cells.insert(0, re.sub(r"\s+%", "%", cell))  # a percentage keeps its sign: "5.5%" is no count
        rest = rest[:m.start()].rstrip()
    label = rest.strip(" $:.")
    if len(re.findall(r"[A-Za-z]", label)) < 6 and not re.fullmatch(r"[A-Z][A-Za-z&]{2,}", label):
        return None  # a label of fewer letters is a piece of prose, unless a name ("BNSF", "BHE")
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

    In [0, 1]; 1.0 when ``asked`` is empty, 0.0 when it holds only the row's years. The row's years (its
    columns) and a "total" the label lacks are not asked of the label. ``aliases`` expands the label's short
    forms (:func:`rag.engines.aliases.expand`). "Discount rate applicable to PBOs" holds little of "what
    weighted average discount rate … for operating lease liabilities", so it is no answer to it.
    """
    if not asked:
        return 1.0
    cut = re.search(rf", {COLUMN}: ", row)
    label = set(expand(terms(row[:cut.start()] if cut else row), aliases or {}))
    # the year is the row's column, not its label's ("Assets, 2024: …"); "total" names no other measure, and
    # "in millions" is the table's scale, which its cells carry
    columns = set(re.findall(r"\b(?:19|20)\d\d\b", row[cut.start():])) if cut else set()
    asked = {t: w for t, w in asked.items()
             if t not in columns and not (t in _UNASKED and t not in label)}
    total = sum(asked.values())
    if total <= 0:
        return 0.0  # the question names nothing but the column: no label is shown to be the one asked
    if measures_other(label, set(asked)):
        return 0.0
    return sum(w for t, w in asked.items() if t in label) / total




_SCALE = re.compile(r"\(?\s*(?:(?:dollars|amounts|us\s*\$|\$)\s+)?in\s+(millions|billions|thousands)\b", re.I)
"""A table's scale line: "(in millions)", "(dollars in millions, except per share amounts)"."""
_PER_SHARE = re.compile(r"\bper\b(?:\s+[\w-]+){0,4}\s+shares?\b", re.I)
"""A row of amounts per share ("Net earnings per average equivalent Class B share"), which a scale line leaves
out."""
_SCALE_WORD = {"millions": "million", "billions": "billion", "thousands": "thousand"}
_UNASKED = frozenset({"total", *terms(" ".join(_SCALE_WORD))})
"""Question terms a row's label need not hold: a total, and the scale its figures are read in."""


def _scaled(cell: str, scale: str) -> str:
    """``$ 88,995`` read with the table's scale: ``$88,995 million`` (a dash or a percentage stays)."""
    if not re.search(r"\d", cell) or cell.endswith("%"):
        return cell  # a dash, or a percentage: no scale
    return f"{cell.replace('$ ', '$')} {scale}"


SECTION_WORDS = 8
"""The most words of a line without figures, inside a table, that heads the rows below it ("Pre-tax
earnings")."""


def _section(line: str) -> str | None:
    """``line`` without its colon when it is a section line of a table ("Pre-tax earnings:"), else None.

    A line of one to SECTION_WORDS words only (no figure, no "%"), starting with a capital, not ending a
    sentence, and no column header ("Percentage change").
    """
    words = line.split()
    if not 1 <= len(words) <= SECTION_WORDS or not _SECTION_LINE.fullmatch(line) or not line[:1].isupper() \
            or line.endswith((".", ",", ";")) or _SCALE.search(line) or _NOT_A_SECTION.search(line):
        return None
    return line.rstrip(" :")


_SECTION_LINE = re.compile(r"[A-Za-z][A-Za-z’'/&(),:-]*(?:\s+[A-Za-z(][A-Za-z’'/&(),:-]*)*")
"""Words only: no figure, no "%" ("Amount % Amount %" heads columns, not rows)."""
_NOT_A_SECTION = re.compile(r"\b(?:change|changes|amount|amounts|ended)\b", re.I)
"""Words of a column header over the figures ("Percentage change", "Year Ended December 31,")."""


def _with_section(label: str, section: str) -> str:
    """``label`` with the section its row stands in, unless the label already holds all of its words.

    "Building products" under "Pre-tax earnings" is "Building products (pre-tax earnings)".
    """
    if not section or set(terms(section)) <= set(terms(label)):
        return label
    return f"{label} ({section[:1].lower() if section[1:2].islower() else section[:1]}{section[1:]})"


def _in_group(label: str, group: str) -> str:
    """``label`` with the group of columns it is read in, as printed: "Western Europe (Property/Casualty)"."""
    return f"{label} ({group})" if group and not set(terms(group)) <= set(terms(label)) else label


def _header(line: str) -> tuple[list[str], int] | None:
    """(the years, the number of change columns) of a column header line, or None for another line.

    No years for "2024 2023 2024 2023": two tables side by side, whose columns no single header says (their
    rows are not read).
    """
    m = _YEARS_HEADER.search(line)
    if not m or len(line.split()) > 16:
        return None
    years = m.group(1).split()
    return (years if len(set(years)) == len(years) else []), len(re.findall(r"\bvs\b", m.group(2) or ""))


_GROUP_JOINS = frozenset({"and", "of", "in", "at", "for", "to", "the", "on", "&", "from"})
"""Words after which a capitalised word goes on the same group name ("Service and Retailing")."""


def _year_runs(line: str) -> list[list[str]]:
    """The runs of a header that repeats its years, one per group of columns, or [].

    "2024 2023 2022 2024 2023 2022" -> two runs of three; "2024 2023 2024 2023 2022" (Pilot, then McLane)
    -> runs of two and three. Each run holds distinct years in one order; a header of one run gives [].
    """
    m = _YEARS_HEADER.search(line)
    if not m or m.group(2) or len(line.split()) > 16 or line[:m.start()].strip():
        return []
    runs: list[list[str]] = []
    for year in m.group(1).split():
        run = runs[-1] if runs else None
        if run is not None and year not in run and (len(run) < 2 or (run[-1] > run[-2]) == (year > run[-1])):
            run.append(year)
        else:
            runs.append([year])
    return runs if len(runs) >= 2 and all(len(r) >= 2 for r in runs) else []


def group_names(line: str, k: int) -> list[str]:
    """``line`` cut into the ``k`` names of column groups it holds, or [] when it cannot be.

    A group starts at a capitalised word that does not follow a joining word ("Manufacturing" | "Service
    and Retailing"); of the ways to cut there, the one with the most even groups ("Carrying Value" | "Fair
    Value"). A title before the groups ("Operating leases Lessee Lessor": a phrase with a lower-case word) is
    left out. A line with a figure, or over 12 words, names no groups.
    """
    words = line.split()
    if k < 2 or not 2 <= len(words) <= 12 or re.search(r"\d", line) or not words[0][:1].isupper():
        return []
    starts = [i for i in range(1, len(words))
              if words[i][:1].isupper() and words[i - 1].lower() not in _GROUP_JOINS]
    if len(starts) == k and any(w[:1].islower() and w not in _GROUP_JOINS for w in words[:starts[0]]):
        # a title first: "Operating leases"
        words, starts = words[starts[0]:], [i - starts[0] for i in starts[1:]]
    if len(starts) < k - 1:
        return []
    best: tuple[int, list[str]] | None = None
    for cut in combinations(starts, k - 1):
        bounds = [0, *cut, len(words)]
        parts = [" ".join(words[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
        widest = max(b - a for a, b in zip(bounds, bounds[1:], strict=False))
        if best is None or widest < best[0]:
            best = (widest, parts)
    return best[1] if best else []


_TAX_SIDE = re.compile(r"\b(?:(after)[- ](?:income[- ])?tax(?:es)?|net\s+of\s+(?:income\s+)?tax(?:es)?|"
                       r"(before)[- ](?:income[- ])?tax(?:es)?|(pre)-?tax)\b", re.I)
"""Which side of income taxes a figure is on: "after-tax earnings", "earnings before income taxes"."""


def _tax_side(text: str) -> str | None:
    m = _TAX_SIDE.search(text)
    return None if m is None else "before" if m.group(2) or m.group(3) else "after"


def asked_group(groups: list[str], question: str) -> int | None:
    """The index of the one group of ``groups`` that ``question`` names most words of, or None.

    A group on the other side of income taxes than the question is not asked ("after-tax earnings" are not
    "Earnings (loss) before income taxes").
    """
    asked = set(terms(question))
    side = _tax_side(question)
    scores = [0 if side and _tax_side(g) not in (None, side) else len(asked & set(terms(g))) for g in groups]
    top = max(scores, default=0)
    return scores.index(top) if top and scores.count(top) == 1 else None


def _grouped(line: str, recent: list[str], question: str) -> tuple[list[str], int, int, str]:
    """The columns of the group ``question`` names, under a header of years repeated per group, or nothing.

    As ``(its years, its first column, the row's cells in all, the group's name)``, or ``([], 0, 0, "")``.
    The group names are on the nearest line of ``recent`` above the header that is not a "Year ended
    December 31," line ("Property/Casualty Life/Health" over "2024 2023 2022 2024 2023 2022").
    """
    runs = _year_runs(line)
    names = next((group_names(r, len(runs)) for r in reversed(recent)
                  if not re.search(r"(?i)year ended|december 31|as of", r)), []) if runs else []
    at = asked_group(names, question) if names else None
    if at is None:
        return [], 0, 0, ""
    return runs[at], sum(len(r) for r in runs[:at]), sum(len(r) for r in runs), names[at]


def _columns(line: str, years: list[str], recent: list[str],
             question: str) -> tuple[tuple[list[str], int, int, str], str]:
    """What a header of ``years`` reads: ``((years, first column, cells in all, group), section)``.

    A header that repeats its years (``years`` empty) reads the group the question names
    (:func:`_grouped`); else a title over the header that names a measure heads its rows.
    """
    if not years:
        return _grouped(line, recent, question), ""
    return (years, 0, len(years), ""), (_measure_title(recent[-1]) if recent else "")


def _measure_title(line: str) -> str:
    """``line`` when it is a title just over a table's header that names a measure, else "".

    "Pre-tax underwriting earnings (loss)" heads the rows below; "Results of Operations" names no measure.
    """
    title = _section(line)
    return title if title and MEASURES.keys() & set(terms(title)) else ""


def _rendered(label: str, cells: list[str], years: list[str], asked: list[str], scale: str,
              owner: str) -> str:
    """A row as ``"<owner>’s <label>, 2024: $88,995 million (2023: …; 2022: …)"``, the asked year first.

    ``cells`` are the row's year columns (the change columns, "(0.5 )%", are no year's figure); the scale
    ("million") is left off a row of amounts per share.
    """
    if owner and owner.lower() not in label.lower():
        label = f"{owner}’s {label[:1].lower() if label[1:2].islower() else label[:1]}{label[1:]}"
    if scale and not _PER_SHARE.search(label):  # "(in millions except per share amounts)"
        cells = [_scaled(c, scale) for c in cells]
    else:
        cells = [c.replace("$ ", "$") for c in cells]
    pairs = list(zip(years, cells, strict=False))
    first = next((p for p in pairs if p[0] in asked), pairs[0])
    others = "; ".join(f"{y}: {v}" for y, v in pairs if (y, v) != first)
    return f"{label}, {first[0]}: {first[1]}" + (f" ({others})" if others else "")


def _cells_of(line: str, width: int, changes: int, paired: bool) -> tuple[str, list[str]] | None:
    """(label, cells) of a table row of ``width`` columns, or None for another line.

    ``paired``: each year is an amount and its percentage ("Premiums earned $ 22,239 100.0 $ 21,938 100.0 …"),
    and the row's amounts are its cells; a row that gives amounts only reads as usual. A row may leave a
    change column empty ("Pilot 46,891 51,739 — (9.4)").
    """
    if paired and (row := _row_cells(line, 2 * width)) is not None:
        return row[0], row[1][0::2]
    return next((r for k in range(changes, -1, -1) if (r := _row_cells(line, width + k))), None)


def _not_a_row(line: str, section: str, covers: str) -> tuple[str, str]:
    """(section, what the table covers) after a line of a table that is no row.

    A section line heads the rows below; prose, or a subtotal (figures without a label), ends the section,
    and prose ends the table its caption named.
    """
    if len(line.split()) >= PROSE_WORDS:
        covers = ""
    if not re.search(r"[A-Za-z]", line):
        return "", covers
    if not re.search(r"\d", line):
        return _section(line) or "", covers
    return section, covers


def table_rows(text: str, question: str) -> list[tuple[str, frozenset[str]]]:
    """Rows of the tables in ``text`` read against their column header of years.

    As ``("<label>, 2024: $ 88,995 (2023: $ 96,223; 2022: $ (22,759))", header stems)``; the question's year
    comes first when the header has it; figures carry the table's scale ("(in millions)" makes
    ``$88,995 million``). Change columns after the years ("2024 vs 2023") are left out, and a caption
    naming whose table it is ("A summary of BNSF’s earnings follows") names each row's owner ("BNSF’s net
    earnings, 2024: $5,031 million"). A line without figures inside a table heads the rows below it, up to a
    subtotal, a "Total" row or prose (and a title over the header that names a measure heads them too), so a
    table that stacks the same rows under "Revenues" and then under "Pre-tax earnings" reads
    "Building products (pre-tax earnings), 2024: 4,134 million" for the second. A row of amounts per share
    takes no scale. Only for questions about figures.
    """
    if expected_type(question) != "number":
        return []
    asked = [w for w in number_tokens(question) if re.fullmatch(r"(?:19|20)\d\d", w)] + (
        ["Total"] if re.search(r"\btotal\b", question, re.I) else [])  # a schedule's total column
    out = []
    years: list[str] = []
    changes = offset = width = 0
    scale = owner = section = group = business = covers = ""
    paired = after_row = headed = False
    recent: list[str] = []  # the lines before this one, nearest last
    # a scale line broken after "in" ("… follows (dollars in" / "millions).") is read as one
    text = re.sub(r"\b(in)[ \t]*\n[ \t]*(millions|billions|thousands)\b", r"\1 \2\n", text, flags=re.I)
    for line in stacked_years(text.splitlines()):
        line = line.strip()
        if found := _SCALE.search(line):
            scale = _SCALE_WORD[found.group(1).lower()]
        owner, business = read_caption(line, owner, business)
        if (header := _header(line)) is not None:
            years, changes = header
            (years, offset, width, group), section = _columns(line, years, recent, question)
            covers, business, paired = business or covers, "", False  # a second header of the same table
            recent, headed = [*recent[-2:], line], True
            continue
        recent, just_headed, headed = [*recent[-2:], line], headed, False
        if not years:
            continue
        if re.fullmatch(r"(?:19|20)\d\d\s+vs\.?", line):  # a change column's header on lines of its own
            changes += 1
            continue
        if re.fullmatch(r"(?:Amount\s+%\s*){2,}", line):  # each year an amount and its percentage
            paired = True
            continue
        amounts_paired = paired and not offset
        row = _cells_of(line, width, changes, amounts_paired)
        if row is None and covers and (after_row or just_headed) and not re.search(r"[A-Za-z]", line):
            # figures without a label under the rows of a table its caption names: their total; right under
            # its header, the table's one row ("A summary of future operating lease receipts … follows")
            label = f"Total {covers}" if after_row else covers[:1].upper() + covers[1:]
            row = _cells_of(f"{label} {line}", width, changes, amounts_paired)
        after_row = row is not None
        if row is None:
            section, covers = _not_a_row(line, section, covers)
            continue
        label, cells = row
        label = _in_group(_with_section(label, section), group or covers)
        if label.lower().startswith("total"):
            section = ""  # "Total revenues" closes its group
        out.append((_rendered(label, cells[offset:offset + len(years)], years, asked, scale, owner),
                    frozenset(terms(" ".join(years)))))
    return out
