"""What a newcomer and a bad-input probe meet on the command line (issue 21).

Each test runs the real CLI (``python -m rag ...``) in a temporary data directory.
"""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import zlib

import pytest

from tests.conftest import ROOT, TRICKY

BRK = TRICKY / "darinzRAG__brk_2024_10-k_sec.pdf"  # 143 pages: prepared by the worker processes


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
    assert lines[0] == r"ok   evil\x1b[31mred\nname.md: ingested 1 page, 1 chunk"
    assert lines[1].startswith(r"FAIL evil\x1b[31mred\nname.pdf: ")
    shown = rag_cli("kb", "show", data_dir=data)
    assert shown.returncode == 0 and r"evil\x1b[31mred\nname.md" in shown.stdout
    asked = rag_cli("ask", "At what temperature does tungsten boil?", data_dir=data)
    assert asked.returncode == 0 and r"[1] evil\x1b[31mred\nname.md, page 1" in asked.stdout, asked.stdout
    for text in (out.stdout, out.stderr, shown.stdout, shown.stderr, asked.stdout, asked.stderr):
        assert "\x1b" not in text
    missing = rag_cli("ingest", str(tmp_path / "gone\x1b]0;title\x07.txt"), data_dir=data)
    assert "\x1b" not in missing.stdout + missing.stderr and r"gone\x1b]0;title\x07.txt" in missing.stdout


def _zeros_deflated(size: int) -> bytes:
    """``size`` zero bytes (a multiple of 1 MiB) as zlib data, made in milliseconds and a few MB of memory.

    After a full flush deflate restarts from an empty window, so every further MiB of zeros compresses to
    the same bytes: the unit is repeated instead of compressing 2 GiB. The trailer is their Adler-32.
    """
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    mib = bytes(1 << 20)
    first = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    unit = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH) == unit
    raw = first + unit * ((size >> 20) - 1) + deflate.flush()
    return b"\x78\xda" + raw + struct.pack(">I", ((size % 65521) << 16) | 1)


def _one_page_pdf(content: bytes) -> bytes:
    """A one-page PDF whose page content is the FlateDecode stream ``content``."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(content), content)]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


MEASURED = """
import json, resource, subprocess, sys
out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB: the largest child (the CLI, a worker)
print(json.dumps({"code": out.returncode, "stdout": out.stdout, "stderr": out.stderr, "peak_kib": peak}))
"""


def test_a_deflate_bomb_is_refused_in_one_line_and_memory_stays_bounded(tmp_path):
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(_one_page_pdf(_zeros_deflated(2 << 30)))  # 2 MB that inflate to 2 GiB
    assert bomb.stat().st_size < 3 << 20
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nTungsten boils at a temperature of 5,930 degrees Celsius.\n")
    data = tmp_path / "data"
    # measured in a fresh process, so its peak is that of this ingest (or one of its workers) alone
    ran = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-m", "rag", "ingest", str(notes),
                          str(bomb), str(BRK), "--data-dir", str(data)], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    got = json.loads(ran.stdout)
    print(f"peak RSS of the ingest: {got['peak_kib'] / 1024:.0f} MiB")
    assert got["code"] == 1, got
    lines = got["stdout"].splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("ok   notes.md: ingested")
    assert lines[2].startswith(f"ok   {BRK.name}: ingested 143 pages")
    assert lines[1] == ("FAIL bomb.pdf: refused: a stream of this PDF inflates to more than 256 MB "
                        "(a decompression bomb?)")
    assert got["peak_kib"] < 1 << 20  # under 1 GiB (it took 3.2 GB before)
