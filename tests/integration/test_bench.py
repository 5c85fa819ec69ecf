"""The benchmark harness on small real subsets.

Scoring by hand, recall through the graph, the qa CLI's JSON on HotpotQA, the ingest benchmark on two papers,
the scale benchmark on a small store. Figures are checked for shape and range, never for speed.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

from rag.bench.data import (
    BeirData,
    answer_hit,
    index_corpus,
    load_beir,
    normalize_answer,
    read_jsonl,
    recall,
    shared_data_dir,
)
from rag.bench.harness import isolated
from rag.bench.ingest import after_extraction, bench_ingest
from rag.bench.ocr import bench_ocr, character_error_rate
from rag.bench.qa import run_qa, summarize_qa
from rag.bench.scale import bench_scale, chroma_add_rate, fill_store
from rag.cli._bench_tables import format_ingest
from rag.config import preset_options
from rag.store.bm25 import lexical_index
from rag.store.chroma import open_knowledge_base
from rag.store.client import list_knowledge_bases
from tests.conftest import DATA, LEWIS, ROOT, SELF_RAG, TRICKY

HOTPOT = DATA / "hotpotqa"
BEIR_ARGS = ["--corpus", str(HOTPOT / "corpus.jsonl"), "--queries", str(HOTPOT / "queries.jsonl"),
             "--qrels", str(HOTPOT / "qrels" / "test.tsv")]
QA_KEYS = {"questions", "k", "preset", "recall_all", "recall_any", "answer_hit", "llm_calls_mean",
           "rewrites_mean", "latency_ms_p50", "latency_ms_p95", "graph_overhead_ms_per_step"}


def test_scoring_by_hand():
    assert normalize_answer("The  Chief-of-Protocol!") == "chiefofprotocol"
    assert normalize_answer("An Animorphs series") == "animorphs series"
    # every Unicode punctuation mark, as a PDF's curly quotes: “Retrieve-Read” is "Retrieve-Read"
    assert normalize_answer("a “Retrieve-Read” framework") == normalize_answer('a "Retrieve-Read" framework')
    assert answer_hit("is also characterized as a “Retrieve-Read” framework. [1]", ["Retrieve-Read"])
    assert answer_hit("She served as Chief of Protocol [1] of the United States.", ["Chief of Protocol"])
    assert not answer_hit("It was not released.", ["no"])  # whole words only
    assert answer_hit("No, it was not. [2]", ["no"])
    assert not answer_hit("", ["Animorphs"])
    assert recall(["a", "b", "c"], ["a", "d"]) == (False, True, 0.5)
    assert recall(["d", "a"], ["a", "d"]) == (True, True, 1.0)
    assert recall([], ["a"]) == (False, False, 0.0)


def test_load_beir_reads_the_shared_layout():
    data = load_beir(HOTPOT / "corpus.jsonl", HOTPOT / "queries.jsonl", HOTPOT / "qrels" / "test.tsv",
                     limit=3)
    assert len(data.corpus) == 4858 and len(data.queries) == 3
    first = data.queries[0]
    assert first["answers"] == ["Chief of Protocol"]
    assert data.qrels[first["_id"]] == {"hp_fcc3127cdbde", "hp_0839406d6994"}


def test_recall_counts_the_chunks_given_to_the_generator(settings):
    """Hand-checked.

    The two supporting paragraphs of a HotpotQA question (each shares words with it) and one paragraph that
    shares none. Naive RAG with k=2 hands both supporting ones to the generator; with k=1 only one.
    """
    full = load_beir(HOTPOT / "corpus.jsonl", HOTPOT / "queries.jsonl", HOTPOT / "qrels" / "test.tsv",
                     limit=3)
    rows = {r["_id"]: r for r in full.corpus}
    question = full.queries[2]
    assert question["text"].startswith('The director of the romantic comedy "Big Stone Gap"')
    gold = sorted(full.qrels[question["_id"]])
    assert sorted(rows[g]["title"] for g in gold) == ["Adriana Trigiani", "Big Stone Gap (film)"]
    unrelated = next(r for r in rows.values() if r["title"] == "Animorphs")
    data = BeirData(corpus=[rows[g] for g in gold] + [unrelated], queries=[question],
                    qrels={question["_id"]: frozenset(gold)})
    kb = open_knowledge_base(settings, "tiny")
    index = index_corpus(kb, data.corpus)
    assert index.added == 3 and kb.count() == 3
    assert set(index.chunk_to_doc.values()) == set(gold) | {unrelated["_id"]}

    [two] = run_qa(kb, data, index.chunk_to_doc, preset_options("naive", top_k=2, min_relevant=1),
                   settings=settings)
    assert sorted(two.evidence) == sorted(gold)
    assert (two.recall_all, two.recall_any) == (True, True)
    assert two.steps == 3 and two.latency_ms >= two.engine_ms + two.retrieval_ms - 1e-6
    assert "based in Greenwich Village, New York City. [2]" in two.answer and two.answer_hit

    [one] = run_qa(kb, data, index.chunk_to_doc, preset_options("naive", top_k=1, min_relevant=1),
                   settings=settings)
    assert len(one.evidence) == 1 and one.evidence[0] in gold
    assert (one.recall_all, one.recall_any) == (False, True)

    again = index_corpus(kb, data.corpus)
    assert (again.added, again.already) == (0, 3)
    summary = summarize_qa([two, one], preset="naive", options=preset_options("naive"))
    assert summary["recall_all"] == 0.5 and summary["recall_any"] == 1.0 and summary["questions"] == 2


@pytest.mark.slow
def test_cli_bench_qa_json_on_ten_hotpotqa_questions(tmp_path, cli):
    proc = cli("bench", "qa", *BEIR_ARGS, "--limit", "10", "--preset", "full", "--json",
               "--data-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out.keys() >= QA_KEYS
    assert out["questions"] == 10 and out["k"] == 6 and out["preset"] == "full"
    assert out["baseline"] == "naive" and out["engine"] == "local" and out["errors"] == 0
    for key in ("recall_all", "recall_any", "answer_hit"):
        assert 0.0 <= out[key] <= 1.0
    assert out["recall_all"] <= out["recall_any"]
    assert 0 < out["latency_ms_p50"] <= out["latency_ms_p95"]
    assert out["llm_calls_mean"] == 0  # the offline engine calls no LLM
    assert out["graph_overhead_ms_per_step"] > 0 and out["steps_mean"] >= 3
    table = proc.stderr.splitlines()  # (a first column, the half, since issue 10)
    assert any(line.startswith("| all 1-10 ") and "| naive " in line for line in table)
    assert any(line.startswith("| all 1-10 ") and "| full " in line for line in table)


def test_cli_bench_qa_reports_dev_and_report_halves_in_one_run(tmp_path, cli):
    proc = cli("bench", "qa", *BEIR_ARGS, "--limit", "4", "--preset", "full", "--half", "both",
               "--dev-size", "2", "--json", "--data-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert set(out) == {"dev", "report"}
    assert out["dev"]["half"] == "dev 1-2" and out["report"]["half"] == "report 3-4"
    assert out["dev"]["questions"] == out["report"]["questions"] == 2
    for row in out.values():
        assert row["baseline"] == "naive" and 0.0 <= row["abstained"] <= 1.0
    assert sum(line.startswith("| half ") for line in proc.stderr.splitlines()) == 2


def test_a_contender_runs_in_a_fresh_process_whatever_the_main_module(monkeypatch):
    # Under AppTest, the main module is a Streamlit page; multiprocessing's spawn re-ran it in its child.
    page = types.ModuleType("__main__")
    page.__file__ = str(ROOT / "app.py")
    monkeypatch.setitem(sys.modules, "__main__", page)
    pid, cpu, peak = isolated(os.getpid)
    assert pid != os.getpid() and cpu >= 0.0
    assert peak["self"] is None or peak["self"] > 0
    with pytest.raises(RuntimeError, match="benchmark child process failed"):
        isolated(os.stat, "/no/such/file")


def test_after_extraction_split_in_ms_and_shares():
    split = after_extraction({"parse": 9.0, "chunk": 0.1, "embed": 0.3, "keyword_index": 0.2, "upsert": 1.4})
    assert split == {"total_ms": 2000.0, "stages": {
        "chunk": {"ms": 100.0, "share": 0.05}, "embed": {"ms": 300.0, "share": 0.15},
        "keyword_index": {"ms": 200.0, "share": 0.1}, "upsert": {"ms": 1400.0, "share": 0.7}}}
    assert after_extraction(dict.fromkeys(("chunk", "embed", "keyword_index", "upsert"), 0.0))["stages"][
        "upsert"] == {"ms": 0.0, "share": None}
    result = {"files": 1, "pages": 2, "chunks": 3, "repeat": 1, "skipped_duplicates": [],
              "stages": {}, "after_extraction": split, "ocr": None, "peak_rss_mb": None,
              "pipeline": {"seconds": 1.0, "workers": 2},
              "reingest": {"seconds": 0.1, "hash_only_seconds": 0.1},
              "baselines": {"pypdf_parse": {"seconds": 2.0}, "langchain_reference": None},
              "ratios": {"vs_pypdf_parse": 2.0, "vs_langchain_reference": None}}
    assert ("after extraction (ours, one process): 2000 ms = chunk 100 ms (5.0%), embed 300 ms (15.0%), "
            "keyword index 200 ms (10.0%), upsert 1400 ms (70.0%)") in format_ingest(result).splitlines()


@pytest.mark.slow
def test_bench_ingest_on_two_papers(tmp_path):
    result = bench_ingest([LEWIS, SELF_RAG, LEWIS], workdir=tmp_path)
    assert result["files"] == 2 and result["pages"] == 49 and result["chunks"] == 88 + 133
    assert result["skipped_duplicates"] == [LEWIS.name]
    assert set(result["stages"]) == {"parse", "chunk", "embed", "keyword_index", "upsert"}
    split = result["after_extraction"]
    assert set(split["stages"]) == {"chunk", "embed", "keyword_index", "upsert"}
    for name, stage in split["stages"].items():  # "seconds" is rounded to 1 ms, "ms" to 0.1 ms
        assert stage["ms"] == pytest.approx(result["stages"][name]["seconds"] * 1000, abs=0.6)
    assert split["total_ms"] == pytest.approx(sum(v["ms"] for v in split["stages"].values()), abs=0.3)
    assert sum(v["share"] for v in split["stages"].values()) == pytest.approx(1.0, abs=0.01)
    for rate in [*result["stages"].values(), result["pipeline"],
                 *result["baselines"].values()]:
        assert rate["seconds"] > 0 and rate["pages_per_s"] > 0
    ref = result["baselines"]["langchain_reference"]
    assert ref["pages"] == 49 and ref["chunks"] > 150
    assert result["pipeline"]["failed"] == [] and result["reingest"]["all_already_indexed"]
    assert result["ratios"]["vs_langchain_reference"] > 0 and result["ratios"]["vs_pypdf_parse"] > 0
    assert list(tmp_path.iterdir()) == []  # the temporary stores are gone


def test_bench_scale_on_a_small_store(settings):
    kb = open_knowledge_base(settings, "scale")
    corpus = read_jsonl(HOTPOT / "corpus.jsonl")[:200]
    filled = fill_store(kb, corpus, 300, batch_docs=2, mark=100)  # store calls of 40 chunks
    assert filled["added"] == 300 and kb.count() == 300
    assert filled["mark_added"] == 120 and 0 < filled["mark_seconds"] <= filled["seconds"]
    assert fill_store(kb, corpus, 300)["added"] == 0  # a filled store is reused
    queries = [q["text"] for q in read_jsonl(HOTPOT / "queries.jsonl")[:8]]
    result = bench_scale(kb, queries, k=6, reopen=lambda: open_knowledge_base(settings, "scale"),
                         corpus=corpus)
    assert result["chunks"] == 300 and result["queries"] == 8
    assert set(result["modes"]) == {"dense", "bm25", "hybrid"}
    assert result["modes"]["dense"]["p50_vs_dense"] == 1.0
    for row in result["modes"].values():
        assert 0 < row["latency_ms_p50"] <= row["latency_ms_p95"] <= row["latency_ms_max"]
    assert result["bm25_build_s"] >= 0 and result["bm25_load_s"] > 0
    changes = result["after_change"]
    assert [(r["mode"], r["change"]) for r in changes] == [
        (m, c) for m in ("dense", "bm25", "hybrid") for c in ("add", "delete")]
    for r in changes:
        assert r["first_ms"] > 0 and r["extra_ms"] == pytest.approx(r["first_ms"] - r["p50_ms"], abs=0.02)
    assert kb.count() == 300 and len(lexical_index(kb).ids) == 300  # the store is left as it was
    limit = chroma_add_rate(kb, corpus, 50)  # beside kb's collection on its client
    assert limit["chunks"] == 50 and limit["chunks_per_s"] > 0 and limit["batch"] == kb.max_batch_size()
    assert list_knowledge_bases(kb.client) == ["scale"]  # the scratch collection is gone


def test_cli_bench_qa_refuses_an_unknown_preset(tmp_path, cli):
    proc = cli("bench", "qa", *BEIR_ARGS, "--limit", "1", "--preset", "naive,nonsense",
               "--data-dir", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "error: unknown preset 'nonsense'; choose from naive, crag, self-rag, full or all\n"
    assert list(tmp_path.iterdir()) == []  # refused before anything was indexed


def test_shared_data_dir_comes_from_the_environment(tmp_path):
    assert shared_data_dir({}) == shared_data_dir({"RAG_SHARED_DATA": ""}) == Path("../shared/data")
    assert shared_data_dir({"RAG_SHARED_DATA": str(tmp_path)}) == tmp_path


def test_cli_bench_scale_reads_the_shared_data_from_the_environment(tmp_path, cli, monkeypatch):
    """``bench scale`` without --corpus takes the shared HotpotQA from $RAG_SHARED_DATA.

    Here a copy of its first passages and questions in a temporary directory.
    """
    shared = tmp_path / "shared"
    (shared / "hotpotqa").mkdir(parents=True)
    for name, n in (("corpus.jsonl", 50), ("queries.jsonl", 6)):
        lines = (HOTPOT / name).read_text(encoding="utf-8").splitlines(keepends=True)[:n]
        (shared / "hotpotqa" / name).write_text("".join(lines), encoding="utf-8")
    monkeypatch.setenv("RAG_SHARED_DATA", str(shared))
    proc = cli("bench", "scale", "--chunks", "60", "--queries-limit", "6", "--json",
               "--data-dir", tmp_path / "stores")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["chunks"] == 60 and result["queries"] == 6 and result["fill"]["added"] == 60
    assert set(result["modes"]) == {"dense", "bm25", "hybrid"}
    assert "| dense " in proc.stderr and "60 chunks, k=6, 6 queries per mode" in proc.stderr
    assert "The first question after adding or deleting one document" in proc.stderr
    assert len(result["after_change"]) == 6
    assert result["fill"]["mark_added"] == 60 and result["chroma_add"]["chunks"] == 60  # at most --chunks
    assert result["chroma_add"]["chunks_per_s"] > 0 and result["chroma_add"]["fill_vs_chroma_add"] > 0
    assert result["disk"]["chroma_mb"] > 0 and result["disk"]["keyword_mb"] > 0
    assert result["peak_rss_mb"]["self"] > 0
    assert "Chroma's own add of 60 precomputed vectors" in proc.stderr
    assert "peak resident memory" in proc.stderr
    assert not (tmp_path / "stores" / "chroma-add").exists()  # the scratch store is removed

    monkeypatch.setenv("RAG_SHARED_DATA", str(tmp_path / "nowhere"))
    proc = cli("bench", "scale", "--chunks", "60", "--data-dir", tmp_path / "stores")
    assert proc.returncode == 2
    last = proc.stderr.splitlines()[-1]  # after the progress bar
    assert last.startswith("error: ") and str(tmp_path / "nowhere" / "hotpotqa" / "corpus.jsonl") in last


def test_character_error_rate():
    assert character_error_rate("the  widow's\ngarden", "the widow's garden") == 0.0
    assert character_error_rate("the widdow's garden", "the widow's garden") == 1 / 18
    with pytest.raises(ValueError):
        character_error_rate("x", " \n")


OCR_KEYS = {"files", "pages", "ocr_pages", "seconds", "pages_per_s", "chunks_per_s", "cpu_seconds", "failed",
            "cer", "runs", "runs_cpu_seconds"}


def _scan_with_truth(tmp_path: Path) -> Path:
    """kcs.pdf (one small scanned page, four words) beside its true text."""
    scan = tmp_path / "scans" / "kcs.pdf"
    scan.parent.mkdir()
    scan.write_bytes((TRICKY / "ocrmypdf__kcs.pdf").read_bytes())
    scan.with_suffix(".txt").write_text("Kodak Capture Desktop Test", encoding="utf-8")
    return scan


@pytest.mark.slow
def test_bench_ocr_reports_ours_and_the_baseline_script(tmp_path):
    import shutil

    scan = tmp_path / "c02-22.pdf"
    shutil.copy(TRICKY / "ocrmypdf__c02-22.pdf", scan)
    scan.with_suffix(".txt").write_text("WE went tip-toeing along a path amongst the trees back "
                                        "towards the end of the widow's garden", encoding="utf-8")
    result = bench_ocr([scan], tmp_path / "stores")
    assert result["pages"] == result["ocr_pages"] == 1 and result["failed"] == []
    assert result["pages_per_s"] > 0
    # The true text given is the page's first 95 characters, read right; the other ~1,000
    # characters OCR reads on the page are insertions: CER = about 1,000 / 95.
    assert 8.0 < result["cer"]["c02-22.pdf"] < 13.0
    base = result["baseline"]
    assert base.keys() == OCR_KEYS and base["pages"] == base["ocr_pages"] == 1 and base["failed"] == []
    assert 8.0 < base["cer"]["c02-22.pdf"] < 13.0  # the same page read by the same models
    assert result["vs_baseline"] == pytest.approx(result["pages_per_s"] / base["pages_per_s"], rel=0.05)
    points = result["cer_points_vs_baseline"]["c02-22.pdf"]
    assert points == pytest.approx((result["cer"]["c02-22.pdf"] - base["cer"]["c02-22.pdf"]) * 100, abs=0.01)


@pytest.mark.slow
def test_cli_bench_ingest_json_has_the_ocr_baseline(tmp_path, cli):
    scan = _scan_with_truth(tmp_path)
    note = tmp_path / "note.md"
    note.write_text("# A note\n\nOne paragraph of text to ingest.\n", encoding="utf-8")
    proc = cli("bench", "ingest", note, "--no-reference", "--ocr-files", scan, "--json",
               "--data-dir", tmp_path / "stores")
    assert proc.returncode == 0, proc.stderr[-2000:]
    ocr = json.loads(proc.stdout)["ocr"]
    assert ocr.keys() >= OCR_KEYS and ocr["baseline"].keys() == OCR_KEYS
    assert ocr["ocr_pages"] == ocr["baseline"]["ocr_pages"] == ocr["pages"] == ocr["baseline"]["pages"] == 1
    assert set(ocr["cer"]) == set(ocr["baseline"]["cer"]) == {"kcs.pdf"}
    assert ocr["vs_baseline"] > 0 and ocr["page_set"] == {"kcs.pdf": [1]} and set(ocr["target"]) == {
        "min_vs_baseline", "max_cer_points", "met"}
    assert "| OCR baseline (pypdfium2 300 dpi + RapidOCR(), 1 pages) " in proc.stderr
    assert "OCR: both sides timed over the same 1 pages" in proc.stderr
