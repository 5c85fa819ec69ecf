"""Retrace: a self-correcting retrieval-augmented generation library (graph, engines, trace).

Nothing under this package imports streamlit; the UI lives in ``app.py`` and ``app_pages/``.
"""

__version__ = "0.1.0"
