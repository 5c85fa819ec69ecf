"""Measuring a benchmark contender: CPU time, peak memory, a fresh process and a fresh store of its own.

Shared by :mod:`rag.bench.ingest` and :mod:`rag.bench.ocr`. Where the platform has no ``resource``
module (Windows), CPU seconds are reported as 0.0 and peak memory as None.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag.config import Settings
from rag.store.chroma import KnowledgeBase, open_knowledge_base


def rate(seconds: float, pages: int, chunks: int) -> dict:
    """``seconds`` (rounded), ``pages_per_s`` and ``chunks_per_s`` (None when ``seconds`` is 0)."""
    return {"seconds": round(seconds, 3),
            "pages_per_s": round(pages / seconds, 2) if seconds else None,
            "chunks_per_s": round(chunks / seconds, 2) if seconds else None}


def fresh_kb(root: Path, name: str) -> KnowledgeBase:
    """A new knowledge base ``name`` with its own data directory under ``root``."""
    return open_knowledge_base(Settings.from_env({}, data_dir=root / name), name)


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system), in seconds.

    0.0 where the platform has no ``resource`` module.
    """
    try:
        import resource
    except ImportError:
        return 0.0
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mb() -> dict:
    """Peak resident set size so far, in MB (10^6 bytes).

    Returns:
        ``self`` (this process) and ``largest_child`` (the largest child process reaped so
        far: the ingest workers); None where the ``resource`` module is missing.
    """
    try:
        import resource
    except ImportError:
        return {"self": None, "largest_child": None}
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale
    return {"self": round(own / 1e6, 1), "largest_child": round(kids / 1e6, 1)}


def measured(fn: Callable, *args) -> tuple[Any, float, dict]:
    """``(fn(*args), its CPU seconds, peak memory)``: CPU of this process and its children during the call."""
    c = cpu_seconds()
    out = fn(*args)
    return out, cpu_seconds() - c, peak_rss_mb()


def isolated(fn: Callable, *args) -> tuple[Any, float, dict]:
    """:func:`measured` ``fn(*args)`` in a fresh Python process, ended after.

    Each contender runs in a process of its own, as from the command line: the reference imports
    langchain-community and its dependencies and leaves their threads and state behind, and pypdf's
    floor leaves a large heap; run in one process, they made our next run's CPU time 20-35 % higher
    (4.46-4.84 s against 3.60 s). The CPU time is counted from the call, not the interpreter's start.
    A plain ``python -c`` child (not multiprocessing's spawn, which re-runs the caller's main module,
    a Streamlit page under AppTest for one). ``fn`` must be importable; raises RuntimeError when the
    child fails.
    """
    with tempfile.TemporaryDirectory(prefix="retrace-bench-child-") as tmp:
        job, out = Path(tmp) / "job.pickle", Path(tmp) / "out.pickle"
        job.write_bytes(pickle.dumps((fn, args)))
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)}
        code = "import sys; from rag.bench.harness import child; child(sys.argv[1], sys.argv[2])"
        done = subprocess.run([sys.executable, "-c", code, str(job), str(out)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise RuntimeError(f"benchmark child process failed: {last}")
        return pickle.loads(out.read_bytes())


def child(job: str, out: str) -> None:
    """The body of :func:`isolated`'s child: run the pickled job, pickle what :func:`measured` returns."""
    fn, args = pickle.loads(Path(job).read_bytes())
    Path(out).write_bytes(pickle.dumps(measured(fn, *args)))
