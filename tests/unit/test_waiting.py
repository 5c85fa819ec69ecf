"""The tests' waiting helpers end on the event, not after a fixed time."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.waiting import ProcessExited, wait_exited, wait_for


def test_wait_for_returns_the_first_truthy_value():
    calls = iter([0, "", "found"])
    assert wait_for(lambda: next(calls), timeout_s=5, what="x") == "found"


def test_wait_for_ends_when_its_process_ends_and_at_the_deadline():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    started = time.monotonic()
    with pytest.raises(ProcessExited, match="never: the process ended"):
        wait_for(lambda: False, timeout_s=60, what="never", proc=proc)
    assert time.monotonic() - started < 30  # the exit ended the wait, not the deadline
    with pytest.raises(TimeoutError, match="never: not within 0.2 s"):
        wait_for(lambda: False, timeout_s=0.2, what="never")


def test_wait_exited_is_woken_by_the_exit():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    assert wait_exited([proc.pid], timeout_s=0.1) == {proc.pid}  # still running
    proc.stdin.close()
    assert wait_exited([proc.pid], timeout_s=60) == set()
    proc.wait()


def test_wait_exited_works_with_descriptors_past_1024():
    import os
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"this process may open only {soft} files")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # as in a long test session
    try:
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        assert wait_exited([proc.pid], timeout_s=30) == set()
        proc.wait()
    finally:
        for fd in held:
            os.close(fd)
