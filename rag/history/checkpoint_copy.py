"""A data directory's LangGraph checkpoints copied into the shared database's checkpointer (issue 20).

A conversation's turns, and a summary row's trace (:mod:`rag.history.traces`), are read from the checkpoints.
So when ``runs import-local`` copies a data directory's ``runs.sqlite`` into ``RAG_DATABASE_URL``, the
checkpoints of ``checkpoints.sqlite`` beside it go along, through LangGraph's checkpointer interface
(``list`` on the file, ``put`` and ``put_writes`` on the target), ids kept. A checkpoint the target holds
already is left as it is, so copying again adds nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from rag.history.checkpoints import CHECKPOINTS_NAME, sqlite_saver


def copy_checkpoints(data_dir: Path | str, target: BaseCheckpointSaver) -> int:
    """Copy every checkpoint (with its pending writes) of ``data_dir/checkpoints.sqlite`` into ``target``.

    Returns how many checkpoints were copied (those ``target`` lacked); 0 when there is no such file or
    ``target`` is that very file. The file is only read. Raises what the savers raise when a database is
    unavailable; the checkpoints copied by then stay, and the next copy adds the rest.
    """
    path = Path(data_dir) / CHECKPOINTS_NAME
    if not path.is_file() or _same_file(target, path):
        return 0
    source = sqlite_saver(path)
    try:
        have: dict[tuple[str, str], set[str]] = {}
        copied = 0
        for item in source.list(None):
            conf = item.config["configurable"]
            thread = (str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")))
            if thread not in have:  # the checkpoints the target holds, read once per thread
                have[thread] = _ids(target, *thread)
            if item.checkpoint["id"] in have[thread]:
                continue
            _put(target, item)
            have[thread].add(item.checkpoint["id"])
            copied += 1
        return copied
    finally:
        source.conn.close()


def _ids(saver: BaseCheckpointSaver, thread_id: str, checkpoint_ns: str) -> set[str]:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}
    return {t.checkpoint["id"] for t in saver.list(config)}


def _put(target: BaseCheckpointSaver, item: CheckpointTuple) -> None:
    """Write ``item`` to ``target`` as it was: same thread, id, parent, metadata, values and writes."""
    conf = item.config["configurable"]
    parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    config: RunnableConfig = {"configurable": {"thread_id": conf["thread_id"],
                                               "checkpoint_ns": conf.get("checkpoint_ns", ""),
                                               **({"checkpoint_id": parent} if parent else {})}}
    # Every channel's value goes with it: a saver that keeps values apart (PostgreSQL's blobs) writes those
    # named in new_versions.
    saved = target.put(config, item.checkpoint, item.metadata or {},
                       dict(item.checkpoint.get("channel_versions") or {}))
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in item.pending_writes or ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        target.put_writes(saved, writes, task_id)


def _same_file(target: BaseCheckpointSaver, path: Path) -> bool:
    """Whether ``target`` is a SQLite saver on ``path`` itself."""
    conn = getattr(target, "conn", None)
    if not isinstance(conn, sqlite3.Connection):  # e.g. PostgreSQL's pool
        return False
    row = conn.execute("PRAGMA database_list").fetchone()
    return bool(row and row[2]) and Path(row[2]).resolve() == path.resolve()
