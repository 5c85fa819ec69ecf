"""One text format per kind of figure, for every page and export.

- shares: whole percentages with a space, ``80 %``;
- durations: whole milliseconds with thousands separators and the unit, ``1,234 ms``;
- counts: integers with thousands separators, ``12,345``, and a noun made plural when it must
  (``1 chunk``, ``2 chunks``);
- means of counts (per question): one decimal, ``1.5``;
- scores in [0, 1] (confidence): two decimals, ``0.80``;
- sizes: decimal units, ``1.2 MB``.

A figure with no data (None) is a dash, :data:`NONE`, never ``None`` or ``nan``.
"""

from __future__ import annotations

import math

NONE = "—"
"""What a figure with no data shows."""


def _missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def share(x: float | None) -> str:
    """A share in [0, 1] as a whole percentage: ``0.8`` -> ``80 %``; None -> :data:`NONE`."""
    return NONE if x is None or _missing(x) else f"{round(x * 100):d} %"


def ms(x: float | None) -> str:
    """A duration in ms as whole milliseconds: ``1234.5`` -> ``1,235 ms``; None -> :data:`NONE`."""
    return NONE if x is None or _missing(x) else f"{round(x):,d} ms"


def count(n: float | None) -> str:
    """A count with thousands separators: ``12345`` -> ``12,345``; None -> :data:`NONE`."""
    return NONE if n is None or _missing(n) else f"{round(n):,d}"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and ``noun``, made plural unless ``n`` is 1: ``1 chunk``, ``2 chunks``, ``1,024 pages``.

    ``nouns`` is the plural when it is not ``noun + "s"`` (``1 LLM call``, ``2 LLM calls`` need none).
    """
    return f"{count(n)} {noun if n == 1 else nouns or noun + 's'}"


def mean(x: float | None) -> str:
    """A mean of counts (per question, per run) with one decimal: ``1.25`` -> ``1.2``; None: :data:`NONE`."""
    return NONE if x is None or _missing(x) else f"{x:,.1f}"


def score(x: float | None) -> str:
    """A score in [0, 1] (a confidence, a similarity) with two decimals: ``0.8`` -> ``0.80``."""
    return NONE if x is None or _missing(x) else f"{x:.2f}"


def size(n_bytes: int) -> str:
    """``1.2 MB``, ``830.0 kB`` or ``512 B`` (decimal units, as max_upload_mb uses)."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= factor:
            return f"{n_bytes / factor:.1f} {unit}"
    return f"{n_bytes} B"


COUNT_FORMAT = "%,d"
"""The printf format of a count in a table column (Streamlit's NumberColumn), as :func:`count` writes it."""
MS_FORMAT = "%,d ms"
"""The printf format of a duration in ms in a table column, as :func:`ms` writes it."""
MEAN_FORMAT = "%,.1f"
"""The printf format of a mean of counts in a table column, as :func:`mean` writes it."""
