"""The ingestion pipeline and the CLI on real files: batches, duplicates, passwords, failures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag.ingest.pipeline import ChunkSettings, ingest_files
from tests.conftest import LEWIS, PAPERS, ROOT, SELF_RAG, TRICKY

ENCRYPTED = TRICKY / "pypdf__encryption__r4-aes-user-password.pdf"
SCANNED = TRICKY / "ocrmypdf__c02-22.pdf"
INVALID = TRICKY / "ocrmypdf__invalid.pdf"


def test_one_bad_file_never_stops_the_batch(kb):
    reports = ingest_files(
        kb, [SCANNED, LEWIS, INVALID, ("notes.xlsx", b"PK\x03\x04"), ("empty.txt", b""), ENCRYPTED], ocr=False
    )
    by = {r.filename: r for r in reports}
    assert by[LEWIS.name].status == "ingested" and by[LEWIS.name].pages == 19
    assert by[LEWIS.name].chunks == kb.count()
    assert by[SCANNED.name].code == "no_extractable_text"
    assert "no extractable text" in by[SCANNED.name].message
    assert by[INVALID.name].code == "corrupt_file"
    assert by["notes.xlsx"].code == "unsupported_type"
    assert by["empty.txt"].code == "empty_file"
    assert by[ENCRYPTED.name].code == "password_required"
    assert [d.source for d in kb.documents()] == [LEWIS.name], "a failed file left chunks"


def test_same_bytes_again_adds_nothing(kb):
    dup = PAPERS / "DUPLICATE_of_2312.10997v5_rag_survey.pdf"
    original = PAPERS / "2312.10997v5_rag_survey.pdf"
    first = ingest_files(kb, [original, dup])
    assert first[0].status == "ingested"
    assert first[1].status == "already indexed" and original.name in first[1].message
    count = kb.count()
    again = ingest_files(kb, [original])
    assert again[0].status == "already indexed" and again[0].message == "already indexed"
    assert kb.count() == count


def test_password_retry_ingests_the_encrypted_file(kb):
    assert ingest_files(kb, [ENCRYPTED], password="nope")[0].code == "wrong_password"
    report = ingest_files(kb, [ENCRYPTED], passwords={ENCRYPTED.name: "asdfzxcv"})[0]
    assert report.status == "ingested", report.line()
    assert kb.has_document(report.doc_sha)


@pytest.mark.slow
def test_size_limit_and_chunk_settings(kb):
    too_big = ingest_files(kb, [LEWIS], max_bytes=100_000)[0]
    assert too_big.code == "too_large" and "limit" in too_big.message
    small = ingest_files(kb, [SELF_RAG], chunking=ChunkSettings(400, 50))[0]
    assert small.status == "ingested"
    assert max(len(c.text) for c in kb.document_chunks(small.doc_sha)) <= 400
    with pytest.raises(ValueError):
        ingest_files(kb, [LEWIS], chunking=ChunkSettings(500, 500))


def test_progress_is_reported_per_file(kb):
    seen = []
    ingest_files(
        kb,
        [("a.txt", b"alpha beta gamma"), ("b.md", b"# Title\n\ndelta")],
        on_progress=lambda done, total, name: seen.append((done, total, name)),
    )
    assert seen == [(0, 2, "a.txt"), (1, 2, "b.md"), (2, 2, "")]


@pytest.fixture
def rag_cli(cli):
    """``python -m rag ARGS... --data-dir D``, in this process."""
    return lambda *args, data_dir: cli(*args, "--data-dir", data_dir)


@pytest.mark.slow
def test_cli_ingest_and_ask_json(tmp_path, rag_cli):
    out = rag_cli("ingest", str(LEWIS), str(SELF_RAG), data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"{LEWIS.name}: ingested 19 pages" in out.stdout
    out = rag_cli("ingest", str(LEWIS), str(SCANNED), "--no-ocr", data_dir=tmp_path)
    assert out.returncode == 1
    assert f"{LEWIS.name}: already indexed" in out.stdout
    assert f"{SCANNED.name}: no extractable text (1 page; scanned? turn OCR on)" in out.stdout

    out = rag_cli(
        "ask", "What is the retrieval component of RAG and how is it trained?", "--json", data_dir=tmp_path
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert {"answer", "citations", "path", "events", "stop_reason", "llm_calls"} <= set(result)
    assert result["path"][:3] == ["route_question", "decompose_query", "retrieve"]  # issue 13
    assert result["path"][-1] == "finalize", result["stop_reason"]
    assert result["llm_calls"] == 0
    assert result["citations"] and {"source", "page", "chunk_id"} <= set(result["citations"][0])
    assert any(c["source"] == LEWIS.name and c["page"] >= 1 for c in result["citations"])

    out = rag_cli(
        "ask", "What is the retrieval component of RAG?", "--preset", "naive", "--json", data_dir=tmp_path
    )
    assert json.loads(out.stdout)["path"] == ["retrieve", "generate", "finalize"]
    out = rag_cli(
        "ask",
        "How is it trained?",
        "--no-grading",
        "--no-grounding",
        "--no-answer-check",
        "--no-decomposition",
        "--no-routing",  # issue 13: the last switch of Full
        "--json",
        data_dir=tmp_path,
    )
    assert json.loads(out.stdout)["path"] == ["retrieve", "generate", "finalize"]


def test_cli_password_flag(tmp_path, rag_cli):
    out = rag_cli("ingest", str(ENCRYPTED), "--password", "asdfzxcv", data_dir=tmp_path)
    assert out.returncode == 0 and "ingested" in out.stdout


@pytest.mark.slow
def test_cli_reads_a_scan_by_ocr_and_cites_it(tmp_path, rag_cli):
    out = rag_cli("ingest", str(SCANNED), str(LEWIS), data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"{SCANNED.name}: ingested 1 page (1 by OCR), " in out.stdout
    assert f"{SCANNED.name}: page 1/1 read by OCR" in out.stderr
    out = rag_cli(
        "ask", "Who went tip-toeing towards the end of the widow's garden?", "--json", data_dir=tmp_path
    )
    assert out.returncode == 0, out.stderr
    cited = {c["source"] for c in json.loads(out.stdout)["citations"]}
    assert SCANNED.name in cited


_LOAD_BROKEN = """
import logging, sys
from pathlib import Path
from rag.ingest.errors import CorruptFile
from rag.ingest.loaders import load_document
if sys.argv[1] == "log":
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="LOG %(name)s %(message)s")
tricky = Path(sys.argv[2])
minimal = (tricky / "pypdf-sample-files__001-trivial__minimal-document.pdf").read_bytes()
unreadable = tricky / "pypdf-sample-files__017-unreadable-meta-data__unreadablemetadata.pdf"
files = {"invalid.pdf": (tricky / "ocrmypdf__invalid.pdf").read_bytes(),
         "broken.pdf": b"junk before the header\\n" + minimal[:-40],
         "unreadable.pdf": unreadable.read_bytes()}
for name, data in files.items():
    try:
        load_document(name, data)
        print("OK", name)
    except CorruptFile as exc:
        print("FAIL", name, exc.message)
"""


@pytest.mark.slow
def test_pypdf_warnings_stay_off_stderr():
    """Pypdf's "invalid pdf header" / "EOF marker not found" / xref notes go to the log, not to stderr.

    (in a fresh process: pytest's own log capture would hide Python's last-resort printing); the user sees one
    line per file.
    """
    def run(mode):
        return subprocess.run([sys.executable, "-c", _LOAD_BROKEN, mode, str(TRICKY)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    quiet = run("plain")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    lines = quiet.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("FAIL invalid.pdf corrupt or unreadable PDF")
    logged = run("log")
    assert "LOG pypdf" in logged.stdout and logged.stderr == ""


def test_cli_has_every_command_group_and_shared_arguments(cli):
    """Every module of rag/cli not starting with ``_`` is a command, listed by ``POSITION``.

    The arguments they share are declared once and accepted by each.
    """
    from rag.cli import build_parser, commands

    assert [(c.name, c.help) for c in commands()] == [
        ("ingest", "index PDF, Word (.docx), HTML, .txt and .md files"),
        ("kb", "manage knowledge bases (list, create, delete, reindex) and show their documents and status"),
        ("ask", "ask a question through the graph"),
        ("threads", "list, show and delete saved conversations (threads)"),
        ("runs", "list and export saved runs"),
        ("compare", "run one question under 2 to 4 pipelines at once"),
        ("eval", "run a JSONL question set through each preset (answered, abstained, hits)"),
        ("bench", "benchmarks on real data (qa, retrieval, ingest, scale, grader, latency, cache, "
                  "checkpoints)")]
    assert build_parser().format_help() == build_parser(build=[]).format_help()
    out = cli("--help")
    assert out.returncode == 0 and "{ingest,kb,ask,threads,runs,compare,eval,bench}" in out.stdout
    for command, shared in ((["ingest"], ["--data-dir", "--collection"]),
                            (["kb", "list"], ["--data-dir", "--json"]),
                            (["kb", "show"], ["--data-dir", "--collection", "--json"]),
                            (["kb", "create"], ["--data-dir", "--json", "--embedding"]),
                            (["kb", "delete"], ["--data-dir", "--json", "--yes"]),
                            (["kb", "reindex"], ["--data-dir", "--json", "--embedding"]),
                            (["ask"], ["--data-dir", "--collection", "--json"]),
                            (["threads", "list"], ["--data-dir", "--json"]),
                            (["compare"], ["--data-dir", "--collection", "--json"]),
                            (["eval"], ["--data-dir", "--collection", "--json"]),
                            (["runs", "list"], ["--data-dir", "--json"]),
                            (["runs", "export"], ["--data-dir"]),
                            (["bench", "qa"], ["--data-dir", "--collection", "--json"]),
                            (["bench", "retrieval"], ["--data-dir", "--collection", "--json"]),
                            (["bench", "ingest"], ["--data-dir", "--json"]),
                            (["bench", "grader"], ["--json", "RAG_SHARED_DATA"]),
                            (["bench", "scale"],
                             ["--data-dir", "--collection", "--json", "RAG_SHARED_DATA"])):
        out = cli(*command, "--help")
        assert out.returncode == 0, command
        assert all(arg in out.stdout for arg in shared), (command, out.stdout)
    out = cli("ask")
    assert out.returncode == 2 and "the following arguments are required: question" in out.stderr
