"""LLM prices (USD per 1M tokens, per model) and the cost of a run computed from its token counts."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import NamedTuple

from rag.models import Run, TraceEvent, node


class Price(NamedTuple):
    """USD per 1,000,000 tokens."""

    input: float
    """Prompt tokens."""
    output: float
    """Completion tokens."""


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
}
"""OpenAI list prices (standard tier, 2025). Override or extend with RAG_PRICES_JSON."""

PRICES_ENV = "RAG_PRICES_JSON"



def load_prices(env: Mapping[str, str] | None = None) -> dict[str, Price]:
    """The price table.

    :data:`DEFAULT_PRICES` updated from RAG_PRICES_JSON in ``env`` (default ``os.environ``).

    RAG_PRICES_JSON is a JSON object mapping a model name to ``{"input": usd, "output": usd}``
    or ``[input_usd, output_usd]``, USD per 1M tokens, e.g.
    ``{"llama3.1": [0, 0], "gpt-4o": {"input": 2.5, "output": 10}}``.
    Raises ValueError when it is not such an object (the message says what is wrong).
    """
    env = os.environ if env is None else env
    prices = dict(DEFAULT_PRICES)
    raw = (env.get(PRICES_ENV) or "").strip()
    if not raw:
        return prices
    try:
        table = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{PRICES_ENV} is not valid JSON: {exc}") from None
    if not isinstance(table, dict):
        raise ValueError(f"{PRICES_ENV} must be a JSON object of model -> price")
    for model, value in table.items():
        try:
            if isinstance(value, dict):
                price = Price(float(value["input"]), float(value["output"]))
            elif isinstance(value, (list, tuple)) and len(value) == 2:
                price = Price(float(value[0]), float(value[1]))
            else:
                raise TypeError
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{PRICES_ENV}: the price of {model!r} must be "
                             '{"input": usd, "output": usd} or [input, output] '
                             "(USD per 1M tokens)") from None
        if price.input < 0 or price.output < 0:
            raise ValueError(f"{PRICES_ENV}: the price of {model!r} cannot be negative")
        prices[str(model)] = price
    return prices


def price_of(model: str | None, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``.

    An exact entry, else the longest entry it starts with (so ``gpt-4o-2024-08-06`` costs as ``gpt-4o``); None
    when unknown.
    """
    if not model:
        return None
    if model in prices:
        return prices[model]
    matches = [name for name in prices if model.startswith(name)]
    return prices[max(matches, key=len)] if matches else None


def event_model(event: TraceEvent, run: Run) -> str | None:
    """The run's model for the node's role (``rag.models.NODES``); None for the offline engine."""
    return (run.models or {}).get(node(event.node).role)


def event_cost(event: TraceEvent, run: Run,
               prices: Mapping[str, Price] | None = None) -> float | None:
    """USD spent by one node visit.

    0.0 when it used no tokens, None when its model has no price in ``prices`` (default :func:`load_prices`).
    """
    if not (event.prompt_tokens or event.completion_tokens):
        return 0.0
    price = price_of(event_model(event, run), load_prices() if prices is None else prices)
    if price is None:
        return None
    return (event.prompt_tokens * price.input + event.completion_tokens * price.output) / 1e6


def run_cost(run: Run, prices: Mapping[str, Price] | None = None) -> float | None:
    """USD spent by the whole run (sum over its events).

    0.0 for an offline run, None when any event used a model with no price (see :func:`unpriced_models`).
    """
    prices = load_prices() if prices is None else prices
    costs = [event_cost(e, run, prices) for e in run.events]
    known = [c for c in costs if c is not None]
    return None if len(known) < len(costs) else round(sum(known), 6)


def unpriced_models(run: Run, prices: Mapping[str, Price] | None = None) -> list[str]:
    """Models that spent tokens in ``run`` but have no price, sorted."""
    prices = load_prices() if prices is None else prices
    return sorted({event_model(e, run) or "unknown" for e in run.events
                   if (e.prompt_tokens or e.completion_tokens)
                   and price_of(event_model(e, run), prices) is None})


def node_totals(run: Run, prices: Mapping[str, Price] | None = None) -> list[dict]:
    """One row per node of ``run``, in the order first visited.

    ``node``, ``visits``, ``duration_ms`` (summed), ``llm_calls``, ``tokens`` (prompt + completion) and
    ``cost`` (text, see :func:`format_cost`; ``n/a`` when a visit used a model with no price).
    """
    prices = load_prices() if prices is None else prices
    rows: dict[str, dict] = {}
    for e in run.events:
        row = rows.setdefault(e.node, {"node": e.node, "visits": 0, "duration_ms": 0.0,
                                       "llm_calls": 0, "tokens": 0, "usd": 0.0})
        row["visits"] += 1
        row["duration_ms"] += e.duration_ms
        row["llm_calls"] += e.llm_calls
        row["tokens"] += e.prompt_tokens + e.completion_tokens
        spent = event_cost(e, run, prices)
        row["usd"] = None if spent is None or row["usd"] is None else row["usd"] + spent
    return [{**{k: v for k, v in r.items() if k != "usd"}, "cost": format_cost(r["usd"])}
            for r in rows.values()]


def format_cost(usd: float | None) -> str:
    """``$0.0123``, ``$0`` for nothing spent, ``n/a`` when unknown."""
    if usd is None:
        return "n/a"
    if usd == 0:
        return "$0"
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"
