"""``rag eval --no-checkpoints``: the runs are saved, their checkpoints are not (round 9)."""

from __future__ import annotations

import json
import sqlite3

from rag.cli import main
from rag.history import CLI_SESSION, RunStore


def _checkpoints(data_dir) -> int:
    path = data_dir / "checkpoints.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM checkpoints").fetchone()[0]


def test_eval_without_checkpoints_saves_the_runs_but_no_checkpoint(papers_kb, tmp_path, capsys):
    data_dir = papers_kb.settings.data_dir
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "What is Self-RAG?"}) + "\n")
    args = ["eval", "--data-dir", str(data_dir), "--collection", papers_kb.name, str(questions),
            "--preset", "naive"]
    runs = RunStore.for_settings(papers_kb.settings)
    before, saved = _checkpoints(data_dir), runs.count(CLI_SESSION)
    assert main([*args, "--no-checkpoints"]) == 0
    assert _checkpoints(data_dir) == before and runs.count(CLI_SESSION) == saved + 1
    assert main(args) == 0  # by default every step is checkpointed, so a run can be re-run from a step
    assert _checkpoints(data_dir) > before and runs.count(CLI_SESSION) == saved + 2
    assert "runs saved to the history" in capsys.readouterr().err
