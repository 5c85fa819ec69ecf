"""A Chroma server that dies: a real ``chroma run`` killed in the middle of an ingest.

The CLI says so in one line (exit 1, no traceback) for ingest, ask and compare, the library's listing and the
pages do too, and once the server is back the interrupted document is repaired by the next ingest, exactly as
after a SIGKILL of the ingest itself (test_crash_safety.py).

The kill point is deterministic: RETRACE_TEST_HOLD_AFTER_BATCHES=2 makes the ingest wait after
its second upsert batch until the test has killed the server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.test_crash_safety import BATCH, clean_chunk_count, long_text
from tests.waiting import ProcessExited, port_open, wait_for

pytestmark = pytest.mark.server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChromaServer:
    """A real ``chroma run`` on 127.0.0.1 that a test can kill and start again (same data)."""

    def __init__(self, path: Path, log: Path) -> None:
        self.path, self.log, self.port = path, log, free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> ChromaServer:
        exe = Path(sys.executable).parent / "chroma"
        self.proc = subprocess.Popen(
            [str(exe), "run", "--path", str(self.path), "--host", "127.0.0.1",
             "--port", str(self.port)],
            stdout=open(self.log, "a"),  # noqa: SIM115 (the server writes to it while it runs)
            stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: port_open(self.port), timeout_s=60, what="chroma run", proc=self.proc)
        except ProcessExited:
            raise RuntimeError(self.log.read_text()) from None
        except TimeoutError:
            self.kill()
            raise
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def server(tmp_path):
    srv = ChromaServer(tmp_path / "server-data", tmp_path / "chroma.log").start()
    yield srv
    srv.kill()


def env_for(server: ChromaServer, tmp_path: Path, **extra) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("RETRACE_TEST_")}
    e.update(CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(server.port),
             RAG_DATA_DIR=str(tmp_path / "local"), **extra)
    return e


def cli(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def one_line_error(out: subprocess.CompletedProcess, port: int) -> str:
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"error: cannot reach the Chroma server at "
                               f"http://127.0.0.1:{port}"), lines[0]
    assert "chroma run" in lines[0]
    return lines[0]


def test_server_killed_mid_ingest_is_one_line_and_the_document_is_repaired(server, tmp_path,
                                                                           monkeypatch):
    doc = tmp_path / "long-report.txt"
    doc.write_text(long_text())
    clean = clean_chunk_count(doc)
    small = tmp_path / "small.md"
    small.write_text("# Zircon notes\n\nZircon crystals date the oldest rocks on Earth.\n")
    assert cli("ingest", str(small), env=env_for(server, tmp_path)).returncode == 0

    hold = tmp_path / "hold"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag", "ingest", str(doc)], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env_for(server, tmp_path, RETRACE_TEST_HOLD_AFTER_BATCHES="2",
                    RETRACE_TEST_HOLD_FILE=str(hold)))
    try:  # until the ingest has stored two batches
        wait_for(Path(f"{hold}.ready").exists, timeout_s=240, what="the ingest's second batch", proc=proc)
    except ProcessExited:
        pytest.fail(f"the ingest ended before its second batch: {proc.communicate()}")
    server.kill()
    Path(f"{hold}.go").touch()
    stdout, stderr = proc.communicate(timeout=300)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    one_line_error(out, server.port)
    assert f"FAIL {doc.name}" not in stdout  # the error line says it all, once

    # ask and the library's listing with the server down: the same one line
    down = env_for(server, tmp_path)
    one_line_error(cli("ask", "Where do zircon crystals come from?", env=down), server.port)
    one_line_error(cli("ingest", str(small), env=down), server.port)
    one_line_error(cli("compare", "Where do zircon crystals come from?", env=down), server.port)
    one_line_error(cli("kb", "list", env=down), server.port)
    one_line_error(cli("kb", "show", env=down), server.port)

    from rag.config import Settings
    from rag.health import check_store
    from rag.store.chroma import StoreUnavailable, document_lines, open_knowledge_base

    settings = Settings.from_env({"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(server.port)},
                                 data_dir=tmp_path / "local")
    with pytest.raises(StoreUnavailable, match=f"cannot reach the Chroma server at "
                                               f"http://127.0.0.1:{server.port}"):
        document_lines(open_knowledge_base(settings))
    ok, line = check_store(settings)
    assert not ok and line.startswith("cannot reach the Chroma server")

    # the Documents page: one error line, no exception
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(server.port))
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "local"))
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()  # Chat page
        assert not at.exception, at.exception
        side = [e.value for e in at.sidebar.error]
        assert len(side) == 1 and side[0].startswith("cannot reach the Chroma server"), side
        for page in (None, "app_pages/documents.py"):
            if page:
                at.switch_page(page).run()
                assert not at.exception, at.exception
            errors = [e.value for e in at.main.error]
            assert len(errors) == 1 and "cannot reach the Chroma server" in errors[0], errors
            assert "Traceback" not in errors[0] and "ConnectError" not in errors[0]
    finally:
        st.cache_resource.clear()

    # the server comes back: the interrupted document is listed as incomplete, then repaired
    server.start()
    kb = open_knowledge_base(settings)
    lines = document_lines(kb)
    assert any(x.startswith("INCOMPLETE") and doc.name in x and f"{2 * BATCH} chunks" in x
               for x in lines), lines
    assert not kb.has_document(next(d.doc_sha for d in kb.documents() if d.source == doc.name))
    out = cli("ingest", str(doc), env=env_for(server, tmp_path))
    assert out.returncode == 0, out.stderr
    assert f"ingested 1 page, {clean} chunks" in out.stdout and "replaced the incomplete" in out.stdout
    docs = {d.source: (d.chunks, d.status) for d in kb.documents()}
    assert docs == {doc.name: (clean, "complete"), small.name: (1, "complete")}
    assert kb.count() == clean + 1
