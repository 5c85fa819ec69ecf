"""Issue 19 on the LLM engine, against the fake OpenAI-compatible server with recorded replies.

The shared contextualize cases (tests/data/contextualize-cases.jsonl) pass through the LLM path as they do
offline: a self-contained question never reaches the model (so a model that carries the topic cannot alter
it), and a follow-up's standalone question is the model's reply. The answer check is told the kind of answer
the question asks for, and its "missing type" reaches the graph.
"""

from __future__ import annotations

import json
from pathlib import Path

from rag.config import Settings
from rag.engines.base import Answer, AnswerCitation
from rag.engines.contextualize import self_contained
from rag.engines.llm import LLMEngine
from rag.engines.local import LocalEngine
from rag.models import Turn
from rag.store.bm25 import LexicalStats
from tests.fakes.servers import Reply, default_script, user_text

CASES = [json.loads(line) for line in
         (Path(__file__).parents[1] / "data" / "contextualize-cases.jsonl").read_text().splitlines() if line]
KEY = "sk-test-DO-NOT-LEAK-contextualize-7d1"


def _engine(fake) -> LLMEngine:
    settings = Settings.from_env({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake.base_url,
                                  "RAG_LLM_TIMEOUT_S": "5"})
    texts = [c["standalone"] for c in CASES] + [h for c in CASES for h in c["history"]]
    return LLMEngine(settings, LocalEngine(LexicalStats.from_texts(texts)))


def test_the_shared_cases_pass_through_the_llm_path(fake):
    recorded = {c["question"]: c["standalone"] for c in CASES}

    def script(kind, body):
        if kind == "StandaloneQuestion":  # the recorded reply of a model that follows the prompt's rules
            asked = user_text(body).rsplit("<question>", 1)[1].split("</question>", 1)[0].strip()
            return Reply(json.dumps({"question": recorded[asked], "reasoning": "Resolved from the turns."}))
        return default_script(kind, body)

    fake.script = script
    engine = _engine(fake)
    alone = [c for c in CASES if c["kind"] == "self-contained"]
    follow = [c for c in CASES if c["kind"] != "self-contained"]
    assert len(alone) >= 10 and len(follow) >= 10
    skipped = 0
    for case in alone:
        before = len(fake.requests)
        out = engine.contextualize(case["question"], [Turn(question=h) for h in case["history"]])
        assert out.question == case["question"], case
        # one that holds a word that could point back ("that", "also") is left to the model
        skipped += len(fake.requests) == before
        assert (len(fake.requests) == before) == self_contained(case["question"], case["question"]), case
    assert skipped >= 2 * len(alone) // 3, skipped
    asked = 0
    for case in follow:
        before = len(fake.requests)
        out = engine.contextualize(case["question"], [Turn(question=h) for h in case["history"]])
        asked += len(fake.requests) > before
        assert out.question == case["standalone"], case
    assert asked >= len(follow) // 2  # the follow-ups the offline rules change go to the model
    prompt = json.dumps(next(r for r in fake.requests if fake._kind(r) == "StandaloneQuestion"))
    assert "returned exactly as it is" in prompt and "never add a name" in prompt


def test_a_model_that_carries_the_topic_cannot_alter_a_self_contained_question(fake):
    # the default fake contextualizer appends the first turn to every question it sees
    engine = _engine(fake)
    history = [Turn(question="What were Berkshire Hathaway's net earnings in 2024?")]
    out = engine.contextualize("What is dense passage retrieval?", history)
    assert out.question == "What is dense passage retrieval?" and "not asked" in out.reasoning
    follow = engine.contextualize("And in 2023?", history)
    assert "(context:" in follow.question  # a follow-up still goes to the model


def test_the_llm_answer_check_is_told_the_type_and_names_what_is_missing(fake):
    def script(kind, body):
        if kind == "AnswerGrade":
            return Reply(json.dumps({"useful": False, "missing_type": "number",
                                     "reasoning": "No figure is given."}))
        return default_script(kind, body)

    fake.script = script
    engine = _engine(fake)
    answer = Answer(text="BNSF operates one of the largest railroad systems [1].",
                    citations=[AnswerCitation(n=1, chunk_id="c")])
    grade = engine.grade_answer("How many route miles of track does BNSF operate?", answer)
    assert not grade.useful and grade.missing_type == "number"
    body = next(r for r in fake.requests if fake._kind(r) == "AnswerGrade")
    assert "<expects>a figure</expects>" in user_text(body)
    # a kind the graph does not know is dropped, and a useful answer misses nothing
    fake.script = lambda kind, body: (Reply(json.dumps({"useful": True, "missing_type": "colour",
                                                        "reasoning": "Fine."}))
                                      if kind == "AnswerGrade" else default_script(kind, body))
    assert engine.grade_answer("What is BNSF?", answer).missing_type is None
