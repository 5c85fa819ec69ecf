"""``python -m tests.fakes.eval_conversations DATA_DIR COLLECTION [--no-history]``.

``rag eval`` of ``../shared/data/conversations/dev.jsonl`` (Full) on the LLM engine against the fake
OpenAI-compatible server (tests/fakes/servers.py, default script: a cooperative model whose
contextualizer appends the thread's first question as context). Prints each preset's
``first_turns`` / ``follow_ups`` and each turn's standalone question. The knowledge base must have
been ingested with the offline (hashing) embeddings, e.g.
``python -m rag ingest ../shared/data/papers/*.pdf --data-dir DATA_DIR --collection COLLECTION``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rag.eval import load_items, run_eval
from rag.run import make_context
from rag.store.chroma import open_knowledge_base
from tests.fakes.servers import FakeOpenAI
from tests.run_fixtures import llm_settings

CONVERSATIONS = Path("../shared/data/conversations/dev.jsonl")


def main(argv: list[str]) -> int:
    data_dir, collection = Path(argv[0]), argv[1]
    overrides = {"use_history": False} if "--no-history" in argv else {}
    server = FakeOpenAI().start()
    try:
        settings = llm_settings(server, data_dir)
        kb = open_knowledge_base(settings, collection)
        result = run_eval(load_items(CONVERSATIONS), make_context(settings, kb), ["full"], **overrides)
    finally:
        server.stop()
    figures = result.presets["full"]
    print(json.dumps({k: figures[k] for k in ("first_turns", "follow_ups", "source_hit", "llm_calls_mean")}))
    for item in result.items:
        first = item["citations"][0]["source"] if item["citations"] else "-"
        print(f"{item['id']:<6} {item['end']:<21} {first[:32]:<32} {item['standalone_question']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
