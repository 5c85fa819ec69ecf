"""Table captions, and column headers printed over several lines, as the 10-K's tables have them.

A caption says whose table follows and what it covers ("A summary of BNSF’s earnings follows",
"Summarized consolidated financial information of Kraft Heinz follows"); a header may print one date or year
per line ("Year ended" / "December 28," / "2024" / …). :func:`rag.engines.tables.table_rows` reads both.
"""

from __future__ import annotations

import re

_TWO_YEARS = re.compile(r"\b(?:19|20)\d\d\b.*\b(?:19|20)\d\d\b")
"""A line with two years or more: a header line of its own, not a piece of one."""
CAPTION_OWNER = re.compile(r"\b([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){0,3})['’]s?\s+(?:[a-z-]+\s+){0,3}?"
                            r"(?:follows?|are\s+summari[sz]ed|is\s+summari[sz]ed)\b"
                            r"|\b((?:[A-Za-z]+\s+){0,3}(?:information|results))\s+of\s+"
                            r"([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){0,3})\s+follows?\b")
"""Whose table a caption announces: "A summary of BNSF’s earnings follows (dollars in millions).",
"Summarized consolidated financial information of Kraft Heinz follows (in millions)." (whose rows are that
information: "Kraft Heinz’s sales (summarized consolidated financial information), 2024: …")."""
_CAPTION_KIND = re.compile(r"\bsummary\s+of\s+(?:our\s+)?([a-z][\w/-]*(?:\s+[a-z][\w/-]*){0,2}?)\s+"
                           r"(?:underwriting\s+)?results\s+follows?\b")
"""The kind of business a caption's table covers: "A summary of property/casualty reinsurance underwriting
results follows" (its rows are that business's: "Premiums written (property/casualty reinsurance)")."""
_CAPTION_TOPIC = re.compile(
    r"\b(?:[Ss]ummary|[Rr]econciliations?|[Aa]nalysis|[Cc]omponents|[Dd]etails)\s+of\s+"
    r"(?:the\s+|our\s+)?([a-z][\w/-]*(?:\s+[a-z][\w/-]*){1,8}?)\s+"
    r"(?:for\s+each\s+of|as\s+of|at\s+December|follows?|are\s+summari[sz]ed|is\s+summari[sz]ed)\b"
    r"|(?:^|[.;]\s+)([A-Z][a-z]+(?:\s+[a-z][\w/-]*){1,5}?)\s+for\s+each\s+of\s+the\s+[^.]*?\b"
    r"(?:are|is)\s+summari[sz]ed\b")
"""What a caption's table is about, in lower-case words: "Reconciliations of the allowance for credit losses
on loans and finance receivables for each of the three years … follow" (its rows are that allowance's:
"Provision for credit losses (allowance for credit losses on loans and finance receivables)"), "Operating
lease revenues for each of the three years … are summarized below"."""
PROSE_WORDS = 8
"""A line of this many words or more that is no row is prose: the table above it has ended."""
_DATE_PIECE = re.compile(r"(?:(?:Years?|Twelve\s+months|Three\s+months|Six\s+months|Nine\s+months)\s+"
                         r"(?:ended|ending)\s*)?(?:(?:January|February|March|April|May|June|July|August|September|October|November|"
                         r"December)\s+\d{1,2},?\s*)?(?:(?:19|20)\d\d)?")
"""A piece of a column header printed one date per line ("December 28,", "2024", "Year ended")."""


def stacked_years(lines: list[str]) -> list[str]:
    """``lines`` with a column header printed a date or a year per line joined into one line of years.

    "Year ended" / "December 28," / "2024" / "December 30," / "2023" becomes "2024 2023": a header
    :func:`rag.engines.tables._header` reads. Runs with fewer than two years are left as they are.
    """
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        years = [y for piece in run for y in re.findall(r"\b(?:19|20)\d\d\b", piece)]
        out.extend([" ".join(years)] if len(years) >= 2 and len(set(years)) == len(years) else run)
        run.clear()

    for line in lines:
        piece = line.strip()
        if piece and _DATE_PIECE.fullmatch(piece) and not _TWO_YEARS.search(piece):
            run.append(piece)
            continue
        flush()
        out.append(line)
    flush()
    return out


def read_caption(line: str, owner: str, business: str) -> tuple[str, str]:
    """(owner, what the table covers) after ``line``: a caption names whose table follows and what it is."""
    if caption := CAPTION_OWNER.search(line):
        owner = caption.group(1) or caption.group(3)
        business = caption.group(2).lower() if caption.group(2) else business
    if kind := _CAPTION_KIND.search(line):
        business = kind.group(1)
    elif not caption and (topic := _CAPTION_TOPIC.search(line)):
        business = (topic.group(1) or topic.group(2)).lower()
    return owner, business
