"""What a newcomer and a bad-input probe meet on the command line (issue 21).

Each test runs the real CLI (``python -m rag ...``) in a temporary data directory.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

from tests.conftest import ROOT


def rag_cli(*args: str, data_dir, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag", *args, "--data-dir", str(data_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _words(n: int, seed: int) -> str:
    rnd = random.Random(seed)
    vocab = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 9)))
             for _ in range(2000)]
    return " ".join(rnd.choice(vocab) for _ in range(n))


def test_a_group_write_past_chromas_batch_limit_loses_no_file(tmp_path):
    small, large = tmp_path / "a-small.txt", tmp_path / "b-large.txt"
    small.write_text(_words(6_500, 1))  # about 400 chunks of 100 characters
    large.write_text(_words(100_000, 2))  # about 6,000: together more than one upsert may hold (5,461)
    data = tmp_path / "data"
    out = rag_cli("ingest", "--chunk-size", "100", "--chunk-overlap", "0", str(small), str(large),
                  data_dir=data)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("ok") for line in lines), lines
    shown = rag_cli("kb", "show", "default", "--json", data_dir=data)
    docs = {d["source"]: d for d in json.loads(shown.stdout)}
    assert set(docs) == {"a-small.txt", "b-large.txt"}
    assert all(d["status"] == "complete" for d in docs.values())
    assert 300 < docs["a-small.txt"]["chunks"] < 600 and docs["b-large.txt"]["chunks"] > 5_461
    total = sum(d["chunks"] for d in docs.values())
    assert f"({total} chunks in total)" in out.stderr
