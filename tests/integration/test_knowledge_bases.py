"""Knowledge bases you can manage: each keeps the embedding model that built it; create, delete, re-index.

Real Chroma in temporary dirs, the real papers, the fake OpenAI-compatible server for OpenAI-embedded
knowledge bases, and real ``python -m rag kb reindex`` processes killed with SIGKILL mid-way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rag.config import Settings
from rag.ingest.pipeline import ingest_files
from rag.store import kbs
from rag.store.chroma import list_knowledge_bases, make_client, open_knowledge_base
from rag.store.client import EmbeddingKeyMissing
from rag.store.embeddings import EmbeddingError
from tests.conftest import LEWIS, ROOT, SELF_RAG

TEXT = ("notes.md", b"# Zircon\n\nZircon crystals date the oldest rocks on Earth. Quartz is common.\n")


def online(settings: Settings, fake) -> Settings:
    return settings.with_(openai_api_key="sk-test-kb", openai_base_url=fake.base_url)


def test_a_key_typed_later_keeps_the_hashing_model(settings, fake):
    ingest_files(open_knowledge_base(settings), [TEXT])
    kb = open_knowledge_base(online(settings, fake))
    assert kb.embedding == "retrace-hashing/dim=1024"
    assert [c.source for c in kb.query("zircon rocks", 1)] == ["notes.md"]
    assert fake.requests == []  # the question was embedded offline, with the model that built it
    # ...while a new knowledge base gets the configured model: OpenAI's, now that a key is set
    info = kbs.create(make_client(settings), online(settings, fake), "papers")
    assert (info.embedding, info.base_url) == ("openai/text-embedding-3-small", fake.base_url)


def test_an_openai_knowledge_base_keeps_its_model_and_says_when_the_key_is_missing(settings, fake):
    oa = online(settings, fake)
    client = make_client(settings)
    kbs.create(client, oa, "oa-kb", "openai/text-embedding-3-small")
    [report] = ingest_files(open_knowledge_base(oa, "oa-kb", client=client), [TEXT])
    assert report.status == "ingested"
    assert any("input" in r for r in fake.requests)  # embedded by the server

    with pytest.raises(EmbeddingKeyMissing) as missing:
        open_knowledge_base(settings, "oa-kb", client=client)
    line = str(missing.value)
    assert "\n" not in line and "'oa-kb'" in line and "openai/text-embedding-3-small" in line
    assert "OpenAI key" in line and "Settings" in line

    # a key typed later (with no base URL) reaches the server that built it, recorded with the knowledge base
    fake.requests.clear()
    kb = open_knowledge_base(settings.with_(openai_api_key="sk-later"), "oa-kb", client=client)
    assert [c.source for c in kb.query("zircon rocks", 1)] == ["notes.md"]
    assert fake.requests and fake.headers[-1]["authorization"] == "Bearer sk-later"


def test_create_list_delete_and_names(settings):
    client = make_client(settings)
    for bad in ("x", "bad name", "-dash", "a" * 64, "a..b", "rtx-0123456789ab-reindex", "<b>hi</b>"):
        with pytest.raises(ValueError, match="invalid knowledge base name"):
            kbs.create(client, settings, bad)
    kbs.create(client, settings, "alpha", "hashing/dim=256")
    with pytest.raises(ValueError, match="already exists"):
        kbs.create(client, settings, "alpha")
    ingest_files(open_knowledge_base(settings, "alpha", client=client), [TEXT, LEWIS])
    assert open_knowledge_base(settings, "alpha", client=client).embedding == "retrace-hashing/dim=256"
    derived = [settings.data_dir / "bm25" / "alpha", settings.data_dir / "sources" / "alpha"]
    assert all(d.is_dir() and any(d.iterdir()) for d in derived)  # keyword index, the kept PDF
    [info] = kbs.list_infos(client)
    assert (info.name, info.embedding, info.needs_key) == ("alpha", "retrace-hashing/dim=256", False)
    assert kbs.delete(client, "alpha", settings.data_dir) == info.chunks > 1
    assert list_knowledge_bases(client) == []
    assert not any(d.exists() for d in derived)
    with pytest.raises(ValueError, match="no knowledge base named 'alpha'"):
        kbs.delete(client, "alpha")


def test_reindex_re_embeds_stored_chunks_and_keeps_documents(settings, fake):
    client = make_client(settings)
    kb = open_knowledge_base(settings, "papers", client=client)
    ingest_files(kb, [LEWIS, SELF_RAG])
    before = {(d.source, d.chunks, d.status) for d in kb.documents()}
    texts = {c.id: c.text for c in kb.iter_chunks()}
    assert len(before) == 2 and all(status == "complete" for _, _, status in before)

    seen: list[tuple[int, int]] = []
    n = kbs.reindex(client, online(settings, fake), "papers", "openai/text-embedding-3-small",
                    on_progress=lambda done, total: seen.append((done, total)), batch_size=100)
    assert n == len(texts) and seen[0] == (0, n) and seen[-1] == (n, n) and len(seen) > 2
    assert list_knowledge_bases(client) == ["papers"]  # no internal collection left, none shown
    [live] = client.list_collections()
    assert live.name == "papers" and "retired_from" not in (live.metadata or {})
    again = open_knowledge_base(online(settings, fake), "papers", client=client)
    assert again.embedding == "openai/text-embedding-3-small"
    assert {(d.source, d.chunks, d.status) for d in again.documents()} == before
    assert {c.id: c.text for c in again.iter_chunks()} == texts  # no file parsed again: same chunks
    assert again.query("self-reflection tokens critique", 3)

    # back to the offline model, with no key at all
    kbs.reindex(client, settings, "papers", "hashing")
    back = open_knowledge_base(settings, "papers", client=client)
    assert back.embedding == "retrace-hashing/dim=1024" and back.count() == n


def test_reindex_failing_midway_leaves_the_knowledge_base_intact(settings, fake):
    client = make_client(settings)
    kb = open_knowledge_base(settings, client=client)
    ingest_files(kb, [LEWIS])
    rev = kb.revision()
    fake.echo_key_status = 500  # the embeddings server fails on every call
    with pytest.raises(EmbeddingError):
        kbs.reindex(client, online(settings, fake), "default", "openai/text-embedding-3-small")
    assert [c.name for c in client.list_collections()] == ["default"]
    same = open_knowledge_base(settings, client=client)
    assert same.embedding == "retrace-hashing/dim=1024" and same.revision() == rev
    assert [d.status for d in same.documents()] == ["complete"] and same.query("retriever", 2)


def kb_cli(*args, data_dir, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RETRACE_TEST_")}
    return subprocess.run([sys.executable, "-m", "rag", "kb", *args, "--data-dir", str(data_dir)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env={**clean, **env})


@pytest.mark.parametrize("kill_after, expected", [
    (1, "retrace-hashing/dim=1024"),  # killed while building: the old knowledge base serves on
    (2, "retrace-hashing/dim=64"),    # killed between the two renames: the built one takes over
])
def test_reindex_killed_with_sigkill_never_loses_the_knowledge_base(settings, kill_after, expected):
    kb = open_knowledge_base(settings)
    ingest_files(kb, [LEWIS])  # 88 chunks: one batch, then the switch
    before = {(d.source, d.chunks, d.status) for d in kb.documents()}
    count = kb.count()
    del kb
    killed = kb_cli("reindex", "default", "--embedding", "hashing/dim=64", data_dir=settings.data_dir,
                    RETRACE_TEST_KILL_AFTER_BATCHES=str(kill_after))
    assert killed.returncode == -9, killed.stderr
    listed = kb_cli("list", "--json", data_dir=settings.data_dir)
    assert listed.returncode == 0, listed.stderr
    [info] = json.loads(listed.stdout)
    assert (info["name"], info["embedding"], info["chunks"]) == ("default", expected, count)
    shown = kb_cli("show", "default", "--json", data_dir=settings.data_dir)
    assert shown.returncode == 0, shown.stderr
    assert {(d["source"], d["chunks"], d["status"]) for d in json.loads(shown.stdout)} == before
    # a later re-index completes and clears what the killed one left
    done = kb_cli("reindex", "default", "--embedding", "hashing/dim=128", data_dir=settings.data_dir)
    assert done.returncode == 0, done.stderr
    assert f"re-embedded {count}/{count} chunks" in done.stderr
    assert [c.name for c in make_client(settings).list_collections()] == ["default"]


def test_kb_cli_commands(tmp_path):
    d = tmp_path / "data"
    assert kb_cli("create", "bad name!", data_dir=d).returncode == 2
    bad = kb_cli("create", "bad name!", data_dir=d)
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: invalid knowledge base name")
    made = kb_cli("create", "notes", "--embedding", "hashing", data_dir=d)
    assert made.returncode == 0 and "created 'notes'" in made.stderr
    assert kb_cli("create", "notes", data_dir=d).returncode == 2  # already exists
    assert kb_cli("create", "other", "--embedding", "word2vec", data_dir=d).returncode == 2
    needs = kb_cli("create", "oa-kb", "--embedding", "openai/text-embedding-3-small", data_dir=d)
    assert needs.returncode == 1 and "need an OpenAI key" in needs.stderr and needs.stderr.count("\n") == 1
    ingest = subprocess.run([sys.executable, "-m", "rag", "ingest", str(LEWIS), "--collection", "notes",
                             "--data-dir", str(d)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    listed = kb_cli("list", data_dir=d)
    assert listed.stdout.splitlines() == ["notes  88 chunks  retrace-hashing/dim=1024"]
    shown = kb_cli("show", "notes", data_dir=d)
    assert shown.returncode == 0
    [line] = shown.stdout.splitlines()
    assert line.split() == ["ok", "19", "pages", "88", "chunks", "0", "OCR'd", LEWIS.name, line.split()[-1]]
    assert kb_cli("show", "no such!", data_dir=d).returncode == 2
    assert kb_cli("reindex", "missing", data_dir=d).returncode == 2
    refused = kb_cli("delete", "notes", data_dir=d)  # not a terminal and no --yes: nothing deleted
    assert refused.returncode == 2 and "--yes" in refused.stderr
    gone = kb_cli("delete", "notes", "--yes", "--json", data_dir=d)
    assert json.loads(gone.stdout) == {"name": "notes", "deleted_chunks": 88}
    assert kb_cli("list", "--json", data_dir=d).stdout.strip() == "[]"

    # a knowledge base embedded by OpenAI, seen with no key: the listing says so; show is one line
    keyed = Settings.from_env({}, data_dir=d).with_(openai_api_key="sk-x", openai_base_url="http://127.0.0.1:9/v1")
    kbs.create(make_client(keyed), keyed, "oa-kb", "openai/text-embedding-3-small")
    assert kb_cli("list", data_dir=d).stdout.splitlines() == [
        "oa-kb  0 chunks  openai/text-embedding-3-small  (needs an OpenAI key)"]
    shown = kb_cli("show", "oa-kb", data_dir=d)
    assert shown.returncode == 1 and shown.stderr.count("\n") == 1 and "need an OpenAI key" in shown.stderr
