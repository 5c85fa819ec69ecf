"""Evaluation built in.

Run a question set through each preset against a knowledge base and count what self-correction buys (answered,
caveated, abstained, answer and source hits, latency, LLM calls). A library (no UI): ``python -m rag eval``
and the Evaluate page print and draw what :func:`run_eval` returns.

Also :func:`grader_accuracy`, the relevance grader measured on RGB's positive and negative
passages (Chen et al. 2024), with accuracy, precision and recall.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.bench.data import answer_hit, percentile
from rag.config import PRESETS, preset_options
from rag.engines.local import LocalEngine
from rag.models import ABSTAINED, ANSWERED, ANSWERED_ENDS, CAVEAT, Chunk, Turn, node
from rag.run import run_question
from rag.store.bm25 import LexicalStats

Progress = Callable[[int, int], None] | None
"""``on_progress(done, total)``: called after each run."""



@dataclass(frozen=True)
class EvalItem:
    """One question of a set.

    ``answers``: gold answer strings (an answer hits when one of them, SQuAD-normalised, appears in it);
    ``sources``: file names the first citation should come from; ``answerable``: False when the knowledge base
    is known not to answer it.
    """

    id: str
    question: str
    answers: list[str] | None = None
    sources: list[str] | None = None
    answerable: bool | None = None
    conversation: str | None = None
    """The id of the conversation this item is a turn of (conversation files), else None."""
    turn: int | None = None
    """Its 1-based turn in that conversation."""


def _strings(value, what: str, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise ValueError(f"{where}: '{what}' must be a list of strings")
    out: list[str] = []
    for v in value:  # RGB nests alternative spellings one level down
        out += _strings(v, what, where) if isinstance(v, list) else [str(v)]
    return out


def _conversation_items(row: dict, cid: str, where: str) -> list[EvalItem]:
    turns = row["turns"]
    if not isinstance(turns, list) or not turns:
        raise ValueError(f"{where}: 'turns' must be a non-empty list")
    out = []
    for n, t in enumerate(turns, 1):
        question = t.get("question") if isinstance(t, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"{where}: turn {n} has no 'question' text")
        answers = _strings(t["answers"], "answers", where) if t.get("answers") is not None else None
        sources = (_strings(t["source"], "source", where) if t.get("source") is not None
                   else _strings(t["sources"], "sources", where) if t.get("sources") is not None
                   else None)
        out.append(EvalItem(id=f"{cid}.{n}", question=question.strip(), answers=answers,
                            sources=sources, conversation=cid, turn=n))
    return out


def parse_items(lines: Iterable[str], *, name: str = "questions") -> list[EvalItem]:
    """Parse JSONL question lines.

    ``{"id", "question", "answers"?, "sources"?, "answerable"?}`` (``query`` is accepted for ``question``, as
    in RGB; a missing id becomes the line number), or conversations ``{"id", "turns": [{"question",
    "source"?, "answers"?}, ...]}`` (as in ``conversations/dev.jsonl``): each turn is one item ``ID.N``
    with its ``conversation`` and 1-based ``turn``, asked in order in one thread by :func:`run_eval`.
    Blank lines are skipped. Raises ValueError naming the line for malformed JSON, a missing question
    (or turn question), a wrong field type, a duplicate id, or a set with no question.
    """
    items: list[EvalItem] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{name}:{n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object")
        if "turns" in row:
            cid = str(row.get("id", n))
            if cid in seen:
                raise ValueError(f"{where}: duplicate id {cid!r}")
            seen.add(cid)
            items += _conversation_items(row, cid, where)
            continue
        question = row.get("question", row.get("query"))
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"{where}: no 'question' text")
        qid = str(row.get("id", row.get("_id", n)))
        if qid in seen:
            raise ValueError(f"{where}: duplicate id {qid!r}")
        seen.add(qid)
        answerable = row.get("answerable")
        if answerable is not None and not isinstance(answerable, bool):
            raise ValueError(f"{where}: 'answerable' must be true or false")
        items.append(EvalItem(
            id=qid, question=question.strip(),
            answers=_strings(row["answers"], "answers", where) if row.get("answers") is not None else None,
            sources=_strings(row["sources"], "sources", where) if row.get("sources") is not None else None,
            answerable=answerable))
    if not items:
        raise ValueError(f"{name}: no question found")
    return items


def load_items(path: Path | str) -> list[EvalItem]:
    """:func:`parse_items` on the UTF-8 file ``path``. Raises OSError when it cannot be read."""
    path = Path(path)
    with open(path, encoding="utf-8") as f:
        return parse_items(f, name=path.name)


@dataclass
class EvalResult:
    """What :func:`run_eval` returns; :meth:`to_dict` is the ``--json`` shape."""

    presets: dict[str, dict] = field(default_factory=dict)
    items: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The ``rag eval --json`` shape: ``{"presets": {...}, "items": [...]}``."""
        return {"presets": self.presets, "items": self.items}


def _end(run) -> str:
    if run.error:
        return "error"
    return run.path[-1] if run.path else "unfinished"


def _clean(end: str) -> bool:
    """A run that ended committing its answer with no caveat (finalize)."""
    return node(end).commits_answer and node(end).ending == ANSWERED


def _committed(run) -> str:
    """The answer text a run committed to ("" when it abstained or failed)."""
    return run.answer if _end(run) in ANSWERED_ENDS else ""


def summarize(items: Sequence[EvalItem], runs: Sequence) -> dict:
    """The figures of one preset over ``runs`` (one per item, same order).

    ``questions``, ``answered`` (finalize or finalize_with_caveat), ``answered_clean`` (finalize), ``caveat``,
    ``abstained`` (fallback), ``answer_hit`` and ``source_hit`` (shares in [0, 1] over the items that have
    ``answers`` / ``sources``, None when none has), ``clean_precision`` (the share of clean answers, of the
    items with ``answers``, that hold a gold answer; None when there is none), ``clean_with_gold`` (how
    many such clean answers), ``confidently_wrong`` (clean and wrong: how many of them hold no gold
    answer), ``p50_ms`` (median run time in ms) and ``llm_calls_mean``.
    """
    ends = [_end(r) for r in runs]
    with_answers = [(i, r) for i, r in zip(items, runs, strict=False) if i.answers]
    with_sources = [(i, r) for i, r in zip(items, runs, strict=False) if i.sources]

    def source_ok(item: EvalItem, run) -> bool:
        if _end(run) not in ANSWERED_ENDS or not run.citations:
            return False
        first = run.citations[0].source
        return any(first == s or Path(first).name == Path(s).name for s in item.sources or [])

    clean_gold = [(i, r) for i, r in with_answers if _clean(_end(r))]
    clean_right = sum(answer_hit(r.answer, i.answers or []) for i, r in clean_gold)
    n = len(runs)
    out = {
        "questions": n,
        "answered": sum(e in ANSWERED_ENDS for e in ends),
        "answered_clean": sum(_clean(e) for e in ends),
        "caveat": sum(node(e).ending == CAVEAT for e in ends),
        "abstained": sum(node(e).ending == ABSTAINED for e in ends),
        "answer_hit": (round(sum(answer_hit(_committed(r), i.answers or []) for i, r in with_answers)
                             / len(with_answers), 4) if with_answers else None),
        "source_hit": (round(sum(source_ok(i, r) for i, r in with_sources) / len(with_sources), 4)
                       if with_sources else None),
        "clean_precision": round(clean_right / len(clean_gold), 4) if clean_gold else None,
        "clean_with_gold": len(clean_gold),
        "confidently_wrong": len(clean_gold) - clean_right,
        "p50_ms": round(percentile([r.duration_ms for r in runs], 50), 1),
        "llm_calls_mean": round(sum(r.llm_calls for r in runs) / n, 3) if n else 0.0,
    }
    if any(i.turn is not None for i in items):  # a conversation file: first turns vs follow-ups
        for key, follow_up in (("first_turns", False), ("follow_ups", True)):
            part = [(i, r) for i, r in zip(items, runs, strict=False) if ((i.turn or 1) > 1) == follow_up]
            sourced = [(i, r) for i, r in part if i.sources]
            hits = sum(source_ok(i, r) for i, r in sourced)
            out[key] = {"questions": len(part), "source_hits": hits,
                        "source_hit": round(hits / len(sourced), 4) if sourced else None}
    return out


def run_eval(items: Sequence[EvalItem], context, presets: Sequence[str] = tuple(PRESETS), *,
             store=None, session_id: str = "cli", on_progress: Progress = None,
             **overrides) -> EvalResult:
    """Run every item through the graph once per preset.

    (``naive``, ``crag``, ``self-rag``, ``full``) with ``context`` (a RunContext: engine, knowledge base, web
    search) and return per-preset figures (:func:`summarize`) and one row per run: ``id``, ``preset``,
    ``question``, ``end`` (the terminal node, or ``error``), ``answer``, ``citations`` (``source``, 1-based
    ``page``), ``run_id``, ``turn`` (1-based; None outside conversations) and ``standalone_question`` (the
    question as the run used it). For a conversation file, each preset's figures add ``first_turns`` and
    ``follow_ups`` (``questions``, ``source_hits``, ``source_hit``).

    The turns of a conversation (:attr:`EvalItem.conversation`) are asked in order, each with the earlier
    turns of the same preset as its history (one thread per conversation and preset, saved to ``store``
    when given). With ``use_history=False`` in ``overrides`` each turn is asked on its own.

    Each run is saved to ``store`` (a RunStore) under ``session_id`` when given; a failed save
    raises OSError. ``overrides`` are run options for every preset (e.g. ``top_k=6``).
    ``on_progress(done, total)`` follows the runs. Raises ValueError for an unknown preset or
    an empty set.
    """
    if not items:
        raise ValueError("the question set is empty")
    options = {p: preset_options(p, **overrides) for p in presets}  # validates the names first
    total, done = len(items) * len(options), 0
    result = EvalResult()
    for preset, opts in options.items():
        runs = []
        histories: dict[str, list[Turn]] = {}
        threads: dict[str, str] = {}
        for item in items:
            history = histories.setdefault(item.conversation, []) if item.conversation else []
            run = run_question(item.question, context, opts, history=list(history))
            history.append(Turn(question=run.question, answer=run.answer,
                                standalone_question=run.standalone_question))
            if store is not None:
                try:
                    if item.conversation:
                        if item.conversation not in threads:
                            threads[item.conversation] = store.create_thread(
                                session_id, knowledge_base=run.knowledge_base).id
                        store.add_turn(threads[item.conversation], session_id, run)
                    else:
                        store.save(run, session_id)
                except Exception as exc:
                    raise OSError(f"the run could not be saved to the history: {exc}") from exc
            runs.append(run)
            result.items.append({
                "id": item.id, "preset": preset, "question": item.question, "end": _end(run),
                "answer": run.answer,
                "citations": [{"source": c.source, "page": c.page} for c in run.citations],
                "run_id": run.id, "turn": item.turn,
                "standalone_question": run.standalone_question or run.question})
            done += 1
            if on_progress:
                on_progress(done, total)
        result.presets[preset] = summarize(items, runs)
    return result


# -- the grader on RGB ---------------------------------------------------------------------
def grader_accuracy(rows: Sequence[dict], engine_factory: Callable | None = None, *,
                    halves: int | None = 25) -> dict:
    """Measure a relevance grader on RGB rows (``query``, ``positive`` and ``negative`` passages).

    Each positive passage should be graded relevant, each negative one not.

    ``engine_factory(texts) -> engine`` builds the engine over the passage texts (default: the
    offline engine with term statistics of all the passages). Returns, for ``all`` and, when
    ``halves`` is set, ``dev`` (the first ``halves`` questions) and ``report`` (the rest):
    ``questions``, ``passages``, ``tp``, ``fp``, ``tn``, ``fn``, ``accuracy``, ``precision``
    and ``recall`` (positive = relevant; precision is None when nothing was graded relevant).
    """
    if engine_factory is None:
        def engine_factory(texts):
            return LocalEngine(LexicalStats.from_texts(texts))

    texts = [t for r in rows for key in ("positive", "negative") for t in r.get(key, [])]
    engine = engine_factory(texts)
    per_q: list[tuple[int, int, int, int]] = []
    for qn, row in enumerate(rows):
        passages = [(t, True) for t in row.get("positive", [])] + \
                   [(t, False) for t in row.get("negative", [])]
        chunks = [Chunk(id=f"{qn}-{i}", text=t, source="rgb") for i, (t, _) in enumerate(passages)]
        grades = engine.grade(row["query"], chunks) if chunks else []
        tp = sum(g.relevant and gold for g, (_, gold) in zip(grades, passages, strict=False))
        fp = sum(g.relevant and not gold for g, (_, gold) in zip(grades, passages, strict=False))
        fn = sum(not g.relevant and gold for g, (_, gold) in zip(grades, passages, strict=False))
        tn = sum(not g.relevant and not gold for g, (_, gold) in zip(grades, passages, strict=False))
        per_q.append((tp, fp, tn, fn))

    def figures(part: Sequence[tuple[int, int, int, int]]) -> dict:
        tp, fp, tn, fn = (sum(x[i] for x in part) for i in range(4))
        n = tp + fp + tn + fn
        return {"questions": len(part), "passages": n, "tp": tp, "fp": fp, "tn": tn, "fn": fn,
                "accuracy": round((tp + tn) / n, 4) if n else None,
                "precision": round(tp / (tp + fp), 4) if tp + fp else None,
                "recall": round(tp / (tp + fn), 4) if tp + fn else None}

    out = {"all": figures(per_q)}
    if halves:
        out["dev"] = figures(per_q[:halves])
        out["report"] = figures(per_q[halves:])
    return out
