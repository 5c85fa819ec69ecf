"""The price table and run costs, and the Insights aggregates over real runs."""

from __future__ import annotations

import pytest

from rag.config import Options
from rag.models import Run, TraceEvent
from rag.trace import insights
from rag.trace.pricing import (
    DEFAULT_PRICES,
    Price,
    event_cost,
    format_cost,
    load_prices,
    node_totals,
    price_of,
    run_cost,
    unpriced_models,
)


def test_prices_default_and_override_from_json():
    assert load_prices({}) == DEFAULT_PRICES
    prices = load_prices({"RAG_PRICES_JSON": '{"llama3.1": [0, 0], '
                                             '"gpt-4o": {"input": 3, "output": 12}}'})
    assert prices["llama3.1"] == Price(0.0, 0.0)
    assert prices["gpt-4o"] == Price(3.0, 12.0)
    assert prices["gpt-4o-mini"] == DEFAULT_PRICES["gpt-4o-mini"]


@pytest.mark.parametrize("raw, said", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"m": {"input": 1}}', "the price of 'm' must be"),
    ('{"m": [1, 2, 3]}', "the price of 'm' must be"),
    ('{"m": [-1, 2]}', "cannot be negative"),
])
def test_bad_price_json_is_a_clear_error(raw, said):
    with pytest.raises(ValueError, match="RAG_PRICES_JSON") as exc:
        load_prices({"RAG_PRICES_JSON": raw})
    assert said in str(exc.value)


def test_dated_model_names_cost_as_their_family():
    assert price_of("gpt-4o-2024-08-06", DEFAULT_PRICES) == DEFAULT_PRICES["gpt-4o"]
    assert price_of("gpt-4o-mini-2024-07-18", DEFAULT_PRICES) == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_of("llama3.1", DEFAULT_PRICES) is None and price_of(None, DEFAULT_PRICES) is None


def _event(step, node, prompt=0, completion=0, **detail) -> TraceEvent:
    return TraceEvent(step=step, node=node, attempt=1, started_at=1000.0 + step, duration_ms=5,
                      summary=node, detail=detail, llm_calls=1 if prompt else 0,
                      prompt_tokens=prompt, completion_tokens=completion)


def test_cost_is_per_event_by_the_model_of_its_role():
    run = Run(question="q", options=Options(), engine="openai",
              models={"grader": "gpt-4o-mini", "generator": "gpt-4o"},
              events=[_event(1, "retrieve"), _event(2, "grade_documents", 1_000_000, 100_000),
                      _event(3, "generate", 200_000, 50_000), _event(4, "check_grounding", 10_000, 0)])
    mini, big = DEFAULT_PRICES["gpt-4o-mini"], DEFAULT_PRICES["gpt-4o"]
    assert event_cost(run.events[0], run, DEFAULT_PRICES) == 0.0
    assert event_cost(run.events[1], run, DEFAULT_PRICES) == pytest.approx(
        mini.input + 0.1 * mini.output)
    assert event_cost(run.events[2], run, DEFAULT_PRICES) == pytest.approx(
        0.2 * big.input + 0.05 * big.output)
    assert event_cost(run.events[3], run, DEFAULT_PRICES) == pytest.approx(0.01 * big.input)
    # a generator with no price: the run's cost is unknown, and says why
    local = run.model_copy(update={"models": {"grader": "gpt-4o-mini", "generator": "my-local-model"}})
    assert event_cost(local.events[3], local, DEFAULT_PRICES) is None
    assert run_cost(local, DEFAULT_PRICES) is None
    assert unpriced_models(local, DEFAULT_PRICES) == ["my-local-model"]
    priced = {**DEFAULT_PRICES, "my-local-model": Price(0, 0)}
    assert run_cost(local, priced) == pytest.approx(mini.input + 0.1 * mini.output)
    rows = node_totals(local, DEFAULT_PRICES)
    assert [r["node"] for r in rows] == ["retrieve", "grade_documents", "generate",
                                         "check_grounding"]
    assert rows[1]["tokens"] == 1_100_000 and rows[1]["llm_calls"] == 1
    assert rows[1]["cost"] == format_cost(mini.input + 0.1 * mini.output)
    assert rows[0]["cost"] == "$0" and rows[3]["cost"] == "n/a"
    assert format_cost(0) == "$0" and format_cost(None) == "n/a"
    assert format_cost(0.01234) == "$0.0123" and format_cost(12.5) == "$12.50"


def test_percentile_is_linear_between_ranks():
    assert insights.percentile([], 50) is None
    assert insights.percentile([7], 95) == 7
    assert insights.percentile([1, 2, 3, 4], 50) == 2.5
    assert insights.percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    with pytest.raises(ValueError):
        insights.percentile([1], 101)


def test_paths_fold_repeated_rounds(runs):
    assert insights.path_key(runs["naive"]) == "retrieve → generate → finalize"
    run = runs["rewritten"]
    i = run.path.index("retrieve")
    assert run.path[i:i + 6] == ["retrieve", "grade_documents", "rewrite_query"] * 2
    head = "".join(f"{node} → " for node in run.path[:i])
    assert insights.path_key(run) == (head + "(retrieve → grade_documents → rewrite_query) ×2 → "
                                      + " → ".join(run.path[i + 6:]))


def test_insights_over_real_runs(runs):
    sample = [runs["answered"], runs["naive"], runs["rewritten"], runs["abstained"],
              runs["naive"]]
    ins = insights.compute(sample, DEFAULT_PRICES)
    assert ins.runs == 5 and ins.answered == 4
    rewrote = [r for r in sample if r.rewrites]
    assert ins.rewrite_rate == pytest.approx(len(rewrote) / 5)
    answered = [r for r in sample if r.path[-1] in ("finalize", "finalize_with_caveat")]
    assert ins.mean_rewrites_answered == pytest.approx(sum(r.rewrites for r in answered) / 4)
    checks = [e for r in sample for e in r.events if e.node == "check_grounding"]
    assert ins.grounding_checks == len(checks) >= 2
    assert ins.grounding_failures == sum(1 for e in checks if not e.detail.grounded)
    strategies = [e.detail.strategy for r in sample for e in r.events
                  if e.node == "rewrite_query"]
    assert sum(ins.strategies.values()) == len(strategies) >= 2
    assert set(ins.strategies) == set(strategies)
    assert ins.paths[0] == ("retrieve → generate → finalize", 2)
    assert ins.stop_kinds == {"Answered": sum(1 for r in sample if r.path[-1] == "finalize"),
                              "Answered with caveat": 1, "No answer (abstained)": 1}
    latencies = sorted(r.duration_ms for r in sample)
    assert ins.latency_p50_ms == latencies[2]
    assert latencies[3] <= ins.latency_p95_ms <= latencies[4]
    assert ins.llm_calls_per_question == 0 and ins.tokens_per_question == 0
    assert ins.cost_per_question == 0
    rows = {r["pipeline"]: r for r in insights.by_pipeline(sample, DEFAULT_PRICES)}
    assert rows["Naive RAG"]["runs"] == 2 and rows["Naive RAG"]["rewrite_rate"] == 0
    assert rows["Full"]["runs"] == 2 and rows["Custom"]["runs"] == 1


def test_no_runs_no_numbers():
    ins = insights.compute([])
    assert ins.runs == 0 and ins.rewrite_rate is None and ins.latency_p50_ms is None
