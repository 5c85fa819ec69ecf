"""Nouns that name a quantity: a question about one asks for a figure; a figure given for one measures it."""

from __future__ import annotations

QUANTITY_WORDS = frozenset(("revenue", "revenues", "earnings", "income", "profit", "profits", "loss",
    "losses", "sales", "cost", "costs", "price", "prices", "population", "budget", "salary", "worth",
    "amount", "total", "net", "gross", "assets", "debt", "dividend", "dividends", "float", "expenses",
    "expense", "liabilities", "equity", "capital", "value", "margin", "number", "rate", "ratio",
    "percentage", "score", "size", "count", "accuracy", "share", "threshold", "length", "width",
    "weight", "temperature", "dimension", "capacity", "duration", "limit", "obligation", "obligations",
    "payment", "repayment", "improvement", "charge", "fee", "match", "perplexity", "recall", "precision",
    "latency", "discount", "yield", "spread", "cap", "depreciation", "amortization", "goodwill",
    "expenditures", "receivables", "borrowings", "proceeds", "premiums", "reserves"))
"""Nouns that name a quantity ("revenues", "rate", "size", "depreciation"), used by
:func:`rag.answer_types.expected_type` and by the slots of an ellipsis (:mod:`rag.engines.measure_slots`)."""
