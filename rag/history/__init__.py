"""The run history: runs, comparisons and threads in SQLite at ``data_dir/runs.sqlite``."""

from rag.history.base import CLI_SESSION, CUSTOM, DB_NAME, RunOwnedElsewhere
from rag.history.runs import (
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    ComparisonSummary,
    RunStore,
    RunSummary,
    merge_summaries,
)
from rag.history.threads import TITLE_CHARS, Thread, ThreadNotFound, ThreadSummary, ThreadTurn, thread_title

__all__ = ["CLI_SESSION", "CUSTOM", "DB_NAME", "FEEDBACK_DOWN", "FEEDBACK_UP", "TITLE_CHARS",
           "ComparisonSummary", "RunOwnedElsewhere", "RunStore", "RunSummary", "Thread", "ThreadNotFound",
           "ThreadSummary", "ThreadTurn", "merge_summaries", "thread_title"]
