"""Worker processes of an ingest never outlive it (issue 9 §2).

A real `python -m rag ingest` is killed with SIGKILL while its workers are preparing PDFs, and its children
must be gone within a few seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rag.ingest.parallel import TEST_HOOK_ENV
from tests.conftest import PAPERS, ROOT
from tests.waiting import ProcessExited, wait_exited, wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")


def _children(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            kids |= {int(p) for p in (task / "children").read_text().split()}
    return kids


def _alive(pid: int) -> bool:
    """Running and not a zombie (a killed child that nobody has reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
def test_workers_exit_when_the_ingest_is_killed(tmp_path: Path) -> None:
    hook = tmp_path / "workers.pids"
    env = {**os.environ, TEST_HOOK_ENV: str(hook)}
    papers = sorted(str(p) for p in PAPERS.glob("*.pdf"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag", "ingest", *papers, "--data-dir", str(tmp_path / "data")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    workers: set[int] = set()
    try:
        # The hook makes the parent write its workers' ids and pause once they have started.
        # (Code without the hook is caught too: its workers show up as children while parsing.)
        def started() -> set[int]:
            if hook.exists():
                return {int(p) for p in hook.read_text().split()}
            kids = _children(proc.pid)
            return kids if len(kids) >= 2 else set()

        with contextlib.suppress(ProcessExited, TimeoutError):
            workers = wait_for(started, timeout_s=120, what="the ingest's workers", proc=proc)
        said = proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ""
        assert workers, f"no worker processes seen; stderr: {said}"
        assert all(_alive(pid) for pid in workers)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        left = sorted(pid for pid in wait_exited(workers, timeout_s=30) if _alive(pid))
        assert not left, f"worker processes {left} outlived their killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:  # never leave the orphans of a failed run behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


_OCR_THEN_POOL = """
import sys
from pathlib import Path
from rag.ingest.loaders import load_document
from rag.ingest.parallel import PrefetchingLoader
papers = Path(sys.argv[1])
scan = papers.parent / "tricky-pdfs" / "ocrmypdf__c02-22.pdf"
assert load_document(scan.name, scan.read_bytes()).ocr_pages == (1,)  # as the app after one scan
data = [(p.name, p.read_bytes()) for p in (papers / "2005.11401v4_lewis_rag.pdf",
                                          papers / "2310.11511v1_self_rag.pdf")]
with PrefetchingLoader(data, lambda name: None, lambda sha: False, workers=2) as loader:
    assert loader.parallel
    print(sum(len(loader.load(n, d).pages) for n, d in data))
"""


@pytest.mark.slow
def test_workers_start_in_a_process_that_holds_the_ocr_engine() -> None:
    """A forked worker used to free the inherited onnxruntime session and hang forever in its destructor.

    And the ingest with it.
    """
    out = subprocess.run(
        [sys.executable, "-c", _OCR_THEN_POOL, str(PAPERS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "49"
