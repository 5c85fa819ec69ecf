"""What a newcomer and a bad-input probe meet on the command line (issue 21).

Each test runs the real CLI (``python -m rag ...``) in a temporary data directory.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

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


def test_asking_an_unknown_knowledge_base_never_creates_it(tmp_path):
    data = tmp_path / "data"
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nTungsten boils at a temperature of 5,930 degrees Celsius.\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "At what temperature does tungsten boil?"}\n')
    for args in (["ask", "--collection", "no-such-kb", "At what temperature does tungsten boil?"],
                 ["compare", "--collection", "no-such-kb", "At what temperature does tungsten boil?"],
                 ["eval", "--collection", "no-such-kb", str(questions)]):
        out = rag_cli(*args, data_dir=data)
        assert out.returncode == 2, out.stdout + out.stderr
        assert out.stderr.count("\n") == 1 and "'no-such-kb' does not exist" in out.stderr, out.stderr
        assert "ingest" in out.stderr  # no knowledge base at all yet: says how to make one
    made = rag_cli("ingest", str(notes), "--collection", "notes", data_dir=data)  # ingest still creates
    assert made.returncode == 0, made.stderr
    out = rag_cli("ask", "--collection", "no-such-kb", "At what temperature does tungsten boil?",
                  data_dir=data)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == "error: knowledge base 'no-such-kb' does not exist; the knowledge bases are: notes\n"
    listed = rag_cli("kb", "list", data_dir=data)
    assert listed.stdout.split()[0] == "notes" and "no-such-kb" not in listed.stdout
    assert rag_cli("ask", "--collection", "notes", "At what temperature does tungsten boil?",
                   data_dir=data).returncode == 0


@pytest.mark.parametrize("args, option, allowed", [
    (["ask", "Q", "--top-k", "0"], "--top-k", "from 1 to 50"),
    (["ask", "Q", "--top-k", "-5"], "--top-k", "from 1 to 50"),
    (["ask", "Q", "--top-k", "100000"], "--top-k", "from 1 to 50"),
    (["ask", "Q", "--deadline", "0"], "--deadline", "above 0 and at most 3600"),
    (["ask", "Q", "--deadline", "-1"], "--deadline", "above 0 and at most 3600"),
    (["ask", "Q", "--deadline", "nan"], "--deadline", "above 0 and at most 3600"),
    (["compare", "Q", "--top-k", "0"], "--top-k", "from 1 to 50"),
    (["compare", "Q", "--max-rewrites", "6"], "--max-rewrites", "from 0 to 5"),
    (["eval", "q.jsonl", "--top-k", "51"], "--top-k", "from 1 to 50"),
    (["ingest", "x.txt", "--chunk-size", "10"], "--chunk-size", "50 or more"),
    (["ingest", "x.txt", "--chunk-overlap", "-1"], "--chunk-overlap", "0 or more"),
    (["ingest", "x.txt", "--chunk-size", "100", "--chunk-overlap", "100"], "--chunk-overlap",
     "less than --chunk-size (100)"),
])
def test_an_option_out_of_range_is_one_line_naming_it_and_its_range(tmp_path, args, option, allowed):
    out = rag_cli(*args, data_dir=tmp_path / "data")
    assert out.returncode == 2 and out.stdout == ""
    errors = [line for line in out.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, out.stderr
    assert f"argument {option}: must be" in errors[0] and allowed in errors[0], out.stderr
    assert not (tmp_path / "data" / "chroma").exists()  # refused before the store is opened


def test_top_k_below_the_default_min_relevant_is_a_valid_run(tmp_path):
    data = tmp_path / "data"
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nTungsten boils at a temperature of 5,930 degrees Celsius.\n")
    assert rag_cli("ingest", str(notes), data_dir=data).returncode == 0
    out = rag_cli("ask", "At what temperature does tungsten boil?", "--top-k", "1", "--json", data_dir=data)
    assert out.returncode == 0, out.stderr
    run = json.loads(out.stdout)
    assert "5,930" in run["answer"]
    assert [e["detail"]["top_k"] for e in run["events"] if e["node"] == "retrieve"] == [1]


def test_control_characters_in_names_never_reach_the_terminal(tmp_path):
    data = tmp_path / "data"
    evil = "evil\x1b[31mred\nname"
    good, bad = tmp_path / f"{evil}.md", tmp_path / f"{evil}.pdf"
    good.write_text("# Notes\n\nTungsten boils at a temperature of 5,930 degrees Celsius.\n")
    bad.write_bytes(b"%PDF-1.4 not really")
    out = rag_cli("ingest", str(good), str(bad), data_dir=data)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stdout
    assert lines[0] == r"ok   evil\x1b[31mred\nname.md: ingested 1 page, 1 chunks"
    assert lines[1].startswith(r"FAIL evil\x1b[31mred\nname.pdf: ")
    shown = rag_cli("kb", "show", data_dir=data)
    assert shown.returncode == 0 and r"evil\x1b[31mred\nname.md" in shown.stdout
    asked = rag_cli("ask", "At what temperature does tungsten boil?", data_dir=data)
    assert asked.returncode == 0 and r"[1] evil\x1b[31mred\nname.md, page 1" in asked.stdout, asked.stdout
    for text in (out.stdout, out.stderr, shown.stdout, shown.stderr, asked.stdout, asked.stderr):
        assert "\x1b" not in text
    missing = rag_cli("ingest", str(tmp_path / "gone\x1b]0;title\x07.txt"), data_dir=data)
    assert "\x1b" not in missing.stdout + missing.stderr and r"gone\x1b]0;title\x07.txt" in missing.stdout
