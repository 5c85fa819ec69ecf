"""``bench cache`` and ``bench retrieval --embedding`` on a small HotpotQA subset."""

from __future__ import annotations

import json

from rag.bench.data import read_jsonl
from tests.conftest import DATA, ROOT

HOTPOT = DATA / "hotpotqa"


def _subset(tmp_path, items: list[dict]) -> list[str]:
    """The gold passages of ``items`` and 150 others, those questions and 5 others: BEIR files in tmp."""
    ids = {item["id"] for item in items}
    qrels = (HOTPOT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    queries = read_jsonl(HOTPOT / "queries.jsonl")
    asked = [q for q in queries if q["_id"] in ids] + [q for q in queries if q["_id"] not in ids][:5]
    kept = [line for line in qrels[1:] if line.split("\t")[0] in {q["_id"] for q in asked}]
    gold = {line.split("\t")[1] for line in kept}
    corpus = read_jsonl(HOTPOT / "corpus.jsonl")
    rows = [r for r in corpus if r["_id"] in gold] + [r for r in corpus if r["_id"] not in gold][:150]
    files = {"corpus.jsonl": rows, "queries.jsonl": asked, "paraphrases.jsonl": items}
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("\n".join([qrels[0], *kept]) + "\n", encoding="utf-8")
    return ["--corpus", str(tmp_path / "corpus.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
            "--qrels", str(tmp_path / "qrels.tsv"), "--paraphrases", str(tmp_path / "paraphrases.jsonl")]


def test_cli_bench_cache_reuses_surface_paraphrases_and_serves_nothing_stale(tmp_path, cli):
    items = read_jsonl(ROOT / "tests" / "data" / "paraphrases.jsonl")[:4]
    args = _subset(tmp_path, items)
    proc = cli("bench", "cache", *args, "--modes", "bm25,dense", "--json", "--data-dir", tmp_path / "stores")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["threshold"] == 0.97 and [r["mode"] for r in out["modes"]] == ["bm25", "dense"]
    for row in out["modes"]:
        assert row["paraphrases"] == sum(len(i["paraphrases"]) for i in items) and row["others"] == 5
        assert row["hit_rate_surface"] > 0.5 and row["hits"] > 0 and row["false_hits"] == 0
        assert row["same_top_k"] == 1.0  # surface paraphrases: the same terms, the same chunks
        assert row["hit_ms_p50"] > 0 and row["fresh_ms_p50"] > 0
    for mode, phases in out["stale"].items():
        assert phases["after_add"]["new_document_first"], mode  # the change did change the answer
        for phase in phases.values():
            assert phase["asked"] == len(items) + sum(len(i["paraphrases"]) for i in items)
            assert phase["stale"] == 0 and phase["reused_from_before"] == 0, (mode, phase)
    assert "| bm25 " in proc.stderr and "0/0 of" in proc.stderr


def test_cli_bench_retrieval_embeds_with_the_model_asked_for_in_a_store_of_its_own(tmp_path, cli):
    args = _subset(tmp_path, read_jsonl(ROOT / "tests" / "data" / "paraphrases.jsonl")[:2])[:6]
    proc = cli("bench", "retrieval", *args, "--embedding", "hashing/dim=64", "--modes", "dense", "--json",
               "--data-dir", tmp_path / "stores")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "-hashing-dim-64' (" in proc.stderr  # the store's name ends with the model
    (row,) = json.loads(proc.stdout)
    assert row["mode"] == "dense" and row["questions"] == 7 and 0.0 <= row["recall_all"] <= row["recall_any"]
    proc = cli("bench", "retrieval", *args, "--embedding", "nonsense", "--data-dir", tmp_path / "stores")
    assert proc.returncode == 2 and "unknown embedding model 'nonsense'" in proc.stderr
