"""The run history: runs, comparisons and threads.

In SQLite at ``data_dir/runs.sqlite``, or in the database ``RAG_DATABASE_URL`` names (shared by replicas).
A conversation's turns are read from its LangGraph checkpoints (:mod:`rag.history.turns`) when they hold
them, else from its run rows.
"""

from rag.history.base import CLI_SESSION, CUSTOM, DB_NAME, RunOwnedElsewhere
from rag.history.runs import (
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    ComparisonSummary,
    RunStore,
    RunSummary,
    location,
    merge_summaries,
)
from rag.history.threads import TITLE_CHARS, Thread, ThreadNotFound, ThreadSummary, ThreadTurn, thread_title
from rag.history.turns import SavedTurn, thread_turns

__all__ = ["CLI_SESSION", "CUSTOM", "DB_NAME", "FEEDBACK_DOWN", "FEEDBACK_UP", "TITLE_CHARS",
           "ComparisonSummary", "RunOwnedElsewhere", "RunStore", "RunSummary", "SavedTurn", "Thread",
           "ThreadNotFound", "ThreadSummary", "ThreadTurn", "location", "merge_summaries", "thread_title",
           "thread_turns"]
