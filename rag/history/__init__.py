"""The run history: runs, comparisons and threads.

In SQLite at ``data_dir/runs.sqlite``, or in the database ``RAG_DATABASE_URL`` names (shared by replicas).
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

__all__ = ["CLI_SESSION", "CUSTOM", "DB_NAME", "FEEDBACK_DOWN", "FEEDBACK_UP", "TITLE_CHARS",
           "ComparisonSummary", "RunOwnedElsewhere", "RunStore", "RunSummary", "Thread", "ThreadNotFound",
           "ThreadSummary", "ThreadTurn", "location", "merge_summaries", "thread_title"]
