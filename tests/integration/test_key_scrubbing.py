"""Keys never leave through error texts: fake OpenAI and Tavily endpoints that echo the caller's
key in their error bodies, and every place such an error can land (the Run, runs.sqlite,
``ask --json``, exports, the ingest FAIL line, health checks, logs)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import uuid

import pytest

from rag.config import Settings, preset_options
from rag.ingest.pipeline import ingest_files
from rag.run import make_context, run_question
from rag.store.chroma import open_knowledge_base
from tests.conftest import LEWIS, ROOT

# Keys of no recognisable shape (a self-hosted server's key), so only the configured-key path
# can remove them; and Tavily's shape.
OPENAI_KEY = f"local-DO-NOT-LEAK-{uuid.uuid4().hex[:12]}"
TAVILY_KEY = f"tvly-DO-NOT-LEAK-{uuid.uuid4().hex[:16]}"
QUESTION = "What is the boiling point of tungsten?"


@pytest.fixture
def echo_openai():
    from tests.fakes.servers import FakeOpenAI

    server = FakeOpenAI(echo_key_status=401).start()
    yield server
    server.stop()


@pytest.fixture
def echo_tavily():
    from tests.fakes.servers import FakeTavily

    server = FakeTavily(status=401, echo_key=True).start()
    yield server
    server.stop()


def test_scrub_removes_configured_remembered_and_key_shaped_tokens(monkeypatch):
    from rag.secrets import REDACTED, remember, scrub

    typed = f"typed-{uuid.uuid4().hex}"
    settings = Settings.from_env({"OPENAI_API_KEY": OPENAI_KEY})
    text = (f"401: bad key {OPENAI_KEY}; header 'Authorization: Bearer abc.DEF-123_x'; "
            f"also sk-proj-{'A1b2' * 6} and {TAVILY_KEY} and {typed}")
    out = scrub(text, settings)
    assert OPENAI_KEY not in out and "abc.DEF-123_x" not in out and "A1b2A1b2" not in out
    assert TAVILY_KEY not in out and out.count(REDACTED) == 4 and typed in out
    remember(typed)  # a key typed into the Settings page, known from then on
    assert typed not in scrub(text)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)  # and the environment's keys, always
    assert OPENAI_KEY not in scrub(text)
    plain = "task-force sk-short disk-usage Bearer"  # ordinary words survive
    assert scrub(plain) == plain
    from rag.trace.export import redact

    assert redact(text, [OPENAI_KEY]) == scrub(text, [OPENAI_KEY])  # one scrubber


def test_echoed_keys_reach_no_run_history_export_or_log(tmp_path, echo_openai, echo_tavily,
                                                       caplog):
    """In process, with keys that exist only in Settings (as typed on the Settings page)."""
    from rag.history import RunStore
    from rag.trace.export import run_html, run_json

    caplog.set_level(logging.DEBUG)
    offline = Settings.from_env({}, data_dir=tmp_path / "data")
    ingest_files(open_knowledge_base(offline), [LEWIS])
    settings = offline.with_(openai_api_key=OPENAI_KEY, openai_base_url=echo_openai.base_url,
                             tavily_api_key=TAVILY_KEY, tavily_api_base_url=echo_tavily.base_url,
                             embedding_model="hashing", llm_max_retries=0)
    kb = open_knowledge_base(settings)
    run = run_question(QUESTION, make_context(settings, kb), preset_options("full"))
    # the keys were really sent and echoed back ...
    assert echo_openai.headers and echo_openai.headers[-1]["authorization"] == f"Bearer {OPENAI_KEY}"
    assert echo_tavily.headers and "web_search" in run.path
    web = next(e for e in run.events if e.node == "web_search")
    assert web.detail.status.startswith("failed: InvalidAPIKeyError"), web.detail
    assert "[redacted]" in web.detail.status
    # ... and appear nowhere we keep or show
    RunStore.for_settings(settings).save(run, "s1")
    texts = {"run": run.model_dump_json(), "log": caplog.text,
             "export json": run_json(run), "export html": run_html(run)}
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_bytes().decode("latin-1")
    for where, text in texts.items():
        assert OPENAI_KEY not in text and TAVILY_KEY not in text, where


def cli(*args, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_ask_json_history_and_ingest_fail_line_hold_no_key(tmp_path, echo_openai,
                                                               echo_tavily):
    base = {"PATH": "/usr/bin:/bin", "RAG_DATA_DIR": str(tmp_path / "data"),
            "ANONYMIZED_TELEMETRY": "False"}
    assert cli("ingest", str(LEWIS), env=base).returncode == 0
    keys = {**base, "OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": echo_openai.base_url,
            "TAVILY_API_KEY": TAVILY_KEY, "TAVILY_API_BASE_URL": echo_tavily.base_url,
            "RAG_LLM_MAX_RETRIES": "0"}
    out = cli("ask", QUESTION, "--json", env={**keys, "RAG_EMBEDDING_MODEL": "hashing"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert "web_search" in result["path"] and result["engine"] == "openai"
    run_id = result["run_id"]
    shown = out.stdout + out.stderr

    exported = tmp_path / "run.json"
    ex = cli("runs", "export", run_id, "--format", "json", "--out", str(exported), env=keys)
    assert ex.returncode == 0, ex.stderr
    shown += exported.read_text()

    # ingest with OpenAI embeddings against the echoing endpoint: one FAIL line, no key
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nTungsten boils at 5,930 degrees Celsius.\n")
    ing = cli("ingest", str(notes), "--collection", "openai-kb", env=keys)
    assert ing.returncode == 1
    fail = [line for line in ing.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fail) == 1 and "notes.md" in fail[0] and "401" in fail[0], ing.stdout
    assert "Traceback" not in ing.stderr
    shown += ing.stdout + ing.stderr

    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            shown += path.read_bytes().decode("latin-1")
    assert OPENAI_KEY not in shown and TAVILY_KEY not in shown


def test_health_checks_hold_no_key(echo_openai, echo_tavily):
    from rag.health import check_embeddings, check_llm, check_web

    settings = Settings.from_env({"OPENAI_API_KEY": OPENAI_KEY,
                                  "OPENAI_BASE_URL": echo_openai.base_url,
                                  "TAVILY_API_KEY": TAVILY_KEY,
                                  "TAVILY_API_BASE_URL": echo_tavily.base_url})
    for check in (check_llm, check_embeddings, check_web):
        ok, line = check(settings)
        assert not ok and line
        assert OPENAI_KEY not in line and TAVILY_KEY not in line, (check.__name__, line)
