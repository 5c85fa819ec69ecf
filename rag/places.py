"""Place names an answer of type "place" may be: the US states, Canada's provinces and the world's countries.

A general gazetteer (not fitted to any question set). The offline engine reads a place either after a
preposition of place ("headquartered in Omaha, Nebraska") or as one of these names anywhere in a passage:
a filing's cover page prints "Delaware" above "State or other jurisdiction of incorporation" with no
preposition at all.
"""

from __future__ import annotations

import re

US_STATES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
    "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky",
    "Louisiana", "Maine", "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi",
    "Missouri", "Montana", "Nebraska", "Nevada", "New Hampshire", "New Jersey", "New Mexico",
    "New York", "North Carolina", "North Dakota", "Ohio", "Oklahoma", "Oregon", "Pennsylvania",
    "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas", "Utah", "Vermont",
    "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming", "District of Columbia",
    "Puerto Rico")
PROVINCES = ("Alberta", "British Columbia", "Manitoba", "New Brunswick", "Newfoundland and Labrador",
             "Nova Scotia", "Ontario", "Prince Edward Island", "Quebec", "Saskatchewan")
COUNTRIES = (
    "Argentina", "Australia", "Austria", "Bangladesh", "Belgium", "Bermuda", "Brazil", "Bulgaria", "Canada",
    "Cayman Islands", "Chile", "China", "Colombia", "Czech Republic", "Denmark", "Egypt", "Finland", "France",
    "Germany", "Greece", "Hong Kong", "Hungary", "Iceland", "India", "Indonesia", "Ireland", "Israel",
    "Italy", "Japan", "Kenya", "Luxembourg", "Malaysia", "Mexico", "Morocco", "Netherlands", "New Zealand",
    "Nigeria", "Norway", "Pakistan", "Peru", "Philippines", "Poland", "Portugal", "Qatar", "Romania",
    "Russia", "Saudi Arabia", "Singapore", "South Africa", "South Korea", "Korea", "Spain", "Sweden",
    "Switzerland", "Taiwan", "Thailand", "Turkey", "Ukraine", "United Arab Emirates", "United Kingdom",
    "United States", "Vietnam", "England", "Scotland", "Wales")
_GAZETTEER = re.compile(r"\b(?:" + "|".join(sorted((re.escape(n) for n in US_STATES + PROVINCES + COUNTRIES),
                                                   key=len, reverse=True)) + r")\b")
_OF_NAME = re.compile(r"[A-Z][\w.&'’-]*\s+of\s+(?:the\s+)?$")
"""What comes before a place inside a longer name: "Bank of", "University of the"."""
_REGION = re.compile(r"\b(?:which|what)\s+(?:u\.?s\.?\s+)?(state|province|country|nation)\b", re.I)


def place_names(text: str) -> list[str]:
    """The states, provinces and countries ``text`` names, in order ("Delaware", "New York").

    Not inside a longer name: "The Bank of New York", "University of Washington", "Washington Post".
    """
    return [m.group(0) for m in _GAZETTEER.finditer(text)
            if not _OF_NAME.search(text, max(0, m.start() - 60), m.start())
            and not re.match(r"\s+[A-Z][a-z]", text[m.end():m.end() + 8])]


def asks_region(question: str) -> bool:
    """Whether ``question`` asks which state, province or country ("In which state is it incorporated?")."""
    return bool(_REGION.search(question))
