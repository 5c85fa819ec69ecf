"""Several replicas (issue 20): two CLI processes, one PostgreSQL and one Chroma server.

Each has its own data directory; both use one ``RAG_DATABASE_URL`` and one ``chroma run``. They see the same
knowledge bases, documents, keyword results, conversations and runs; a follow-up asked on one resolves
against the turn asked on the other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.bench.data import read_jsonl
from rag.bench.replica import replica_delay
from rag.bench.scale import fill_store
from rag.config import Settings
from rag.history import CLI_SESSION, RunStore
from rag.store.bm25 import lexical_index
from rag.store.chroma import open_knowledge_base
from tests.conftest import DATA, ROOT
from tests.integration.test_chroma_server_loss import ChromaServer

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.fixture
def chroma(tmp_path):
    server = ChromaServer(tmp_path / "chroma-server", tmp_path / "chroma.log").start()
    yield server
    server.kill()


def replica(chroma: ChromaServer, database_url: str, data_dir: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RETRACE_TEST_")}
    env.update(CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(chroma.port), RAG_DATABASE_URL=database_url,
               RAG_DATA_DIR=str(data_dir), RAG_ENV_FILE="")

    def cli(*args: str) -> subprocess.CompletedProcess:
        out = subprocess.run([sys.executable, "-m", "rag", *args], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, (args, out.stdout, out.stderr)
        return out

    return cli


def retrieved(answer: dict) -> tuple[str, list[str]]:
    """The first retrieval's mode and the sources of its chunks."""
    detail = next(e["detail"] for e in answer["events"] if e["node"] == "retrieve")
    return detail["mode"], [c["source"] for c in detail["chunks"]]


def test_two_replicas_share_everything(chroma, database_url, tmp_path):
    a = replica(chroma, database_url, tmp_path / "replica-a")
    b = replica(chroma, database_url, tmp_path / "replica-b")
    zircon, basalt = tmp_path / "zircon.md", tmp_path / "basalt.md"
    zircon.write_text("# Zircon notes\n\nZircon crystals date the oldest rocks on Earth, some 4.4 billion "
                      "years old. Zircon survives erosion and metamorphism.\n")
    basalt.write_text("# Basalt notes\n\nBasalt is a fine-grained volcanic rock that forms from lava flows "
                      "rich in magnesium and iron.\n")

    a("ingest", str(zircon))
    b("ingest", str(basalt))
    for cli in (a, b):  # the same knowledge base and documents
        [kb] = json.loads(cli("kb", "list", "--json").stdout)
        assert kb["name"] == "default" and kb["chunks"] == 2, kb
        shown = cli("kb", "show", "default", "--json").stdout
        assert "zircon.md" in shown and "basalt.md" in shown

    # keyword search on each replica finds the document ingested through the other
    first = json.loads(a("ask", "What is Basalt?", "--preset", "naive", "--thread", "t-geo", "--json").stdout)
    assert retrieved(first) == ("bm25", ["basalt.md"])
    follow = json.loads(b("ask", "How is it formed?", "--preset", "naive", "--thread", "t-geo",
                          "--json").stdout)
    assert follow["standalone_question"] == "How is Basalt formed?"
    assert follow["path"][0] == "contextualize_question"
    assert retrieved(follow)[1][0] == "basalt.md"
    other = json.loads(b("ask", "How old are zircon crystals?", "--preset", "naive", "--json").stdout)
    assert retrieved(other) == ("bm25", ["zircon.md"])

    for cli in (a, b):  # one conversation of two turns and the same three runs
        [thread] = json.loads(cli("threads", "list", "--json").stdout)
        assert (thread["id"], thread["turns"]) == ("t-geo", 2)
        runs = {r["id"] for r in json.loads(cli("runs", "list", "--json").stdout)}
        assert runs == {first["run_id"], follow["run_id"], other["run_id"]}
    # nothing of it lives in the replicas' own folders
    for data in (tmp_path / "replica-a", tmp_path / "replica-b"):
        assert not (data / "runs.sqlite").exists() and not (data / "bm25").exists()

    # a run asked on one replica is re-run from a step on the other (the checkpoints are shared), and the
    # child is listed with its parent on both
    parent = json.loads(a("ask", "How old are zircon crystals?", "--preset", "full", "--json").stdout)
    assert "grade_documents" in parent["path"], parent["path"]
    child = json.loads(b("runs", "rerun", parent["run_id"], "--from", "grade_documents", "--top-k", "8",
                         "--json").stdout)
    assert child["parent_run_id"] == parent["run_id"] and child["from_node"] == "grade_documents"
    assert child["run_id"] != parent["run_id"] and child["answer"]
    for cli in (a, b):
        listed = {r["id"]: r for r in json.loads(cli("runs", "list", "--json").stdout)}
        assert listed[child["run_id"]]["parent_run_id"] == parent["run_id"]
        assert "re-run of" in cli("runs", "list").stdout


def test_a_follow_up_on_another_replica_reads_the_turn_from_the_checkpoints(chroma, database_url, tmp_path):
    """The earlier turn comes from the shared checkpoints: with its run row deleted, a follow-up resolves."""
    import psycopg

    a = replica(chroma, database_url, tmp_path / "replica-a")
    b = replica(chroma, database_url, tmp_path / "replica-b")
    basalt = tmp_path / "basalt.md"
    basalt.write_text("# Basalt notes\n\nBasalt is a fine-grained volcanic rock that forms from lava flows "
                      "rich in magnesium and iron.\n")
    a("ingest", str(basalt))
    first = json.loads(a("ask", "What is Basalt?", "--preset", "naive", "--thread", "t-ck", "--json").stdout)
    assert RunStore(database_url).delete(first["run_id"], CLI_SESSION)  # only the checkpoints hold it now

    follow = json.loads(b("ask", "How is it formed?", "--preset", "naive", "--thread", "t-ck",
                          "--json").stdout)
    assert follow["standalone_question"] == "How is Basalt formed?"
    assert follow["path"][0] == "contextualize_question"
    shown = json.loads(a("threads", "show", "t-ck", "--json").stdout)
    assert [(t["turn"], [r["run_id"] for r in t["runs"]]) for t in shown["turns"]] == [
        (1, [first["run_id"]]), (2, [follow["run_id"]])]
    assert shown["turns"][0]["runs"][0]["answer"] == first["answer"]

    def checkpoints() -> int:
        with psycopg.connect(database_url) as conn:
            row = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 't-ck'").fetchone()
        return row[0] if row else 0

    assert checkpoints() > 0
    b("threads", "delete", "t-ck")  # a conversation deleted on either replica takes its checkpoints along
    assert checkpoints() == 0


def test_bench_replica_delay_times_a_keyword_hit_on_another_process(chroma, database_url, tmp_path):
    """The measure ``bench scale`` reports (figures checked for shape, never for speed)."""
    settings = Settings.from_env({}, data_dir=tmp_path / "here", chroma_host="127.0.0.1",
                                 chroma_port=chroma.port, database_url=database_url)
    corpus = read_jsonl(DATA / "hotpotqa" / "corpus.jsonl")[:200]
    kb = open_knowledge_base(settings, "scale")
    fill_store(kb, corpus, 200)
    result = replica_delay(settings, "scale", corpus, tries=2)
    assert result["shared_index"] and result["tries"] == 2 and result["chunks"] == 200
    assert len(result["rows"]) == 2
    for row in result["rows"]:
        assert row["polls"] >= 1 and row["query_ms"] > 0 and row["ingest_ms"] > 0
        assert row["from_start_ms"] == pytest.approx(row["delay_ms"] + row["ingest_ms"], abs=0.3)
    assert result["delay_ms_max"] == max(r["delay_ms"] for r in result["rows"])
    assert kb.count() == 200 and len(lexical_index(kb).ids) == 200  # the documents added were deleted
    with pytest.raises(ValueError, match="CHROMA_HOST"):
        replica_delay(settings.with_(chroma_host=None), "scale", corpus)
