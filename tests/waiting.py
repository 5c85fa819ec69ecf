"""Waiting in tests for an event, never for a fixed time.

:func:`wait_for` checks a condition until a deadline and ends at once when the process it depends on exits;
:func:`wait_exited` waits on the processes themselves (Linux pidfds), woken the moment each one ends.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

CHECK_EVERY_S = 0.05
"""How often :func:`wait_for` checks its condition when no process can wake it sooner, in seconds."""


class ProcessExited(RuntimeError):
    """The process a wait depended on ended before the awaited event."""


def wait_for(condition: Callable[[], T], *, timeout_s: float, what: str,
             proc: subprocess.Popen | None = None) -> T:
    """The first truthy value of ``condition()``, checked until ``timeout_s`` seconds have passed.

    Between checks it waits on ``proc`` (so its exit ends the wait at once), else on an event nobody sets.
    Raises ProcessExited when ``proc`` ends first, TimeoutError (naming ``what``) at the deadline.
    """
    deadline = time.monotonic() + timeout_s
    idle = threading.Event()
    while True:
        found = condition()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            raise ProcessExited(f"{what}: the process ended (exit code {proc.returncode})")
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{what}: not within {timeout_s:g} s")
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=min(CHECK_EVERY_S, left))
        else:
            idle.wait(min(CHECK_EVERY_S, left))


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts a TCP connection on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def http_ok(url: str) -> bool:
    """True when ``url`` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def wait_exited(pids: Iterable[int], timeout_s: float) -> set[int]:
    """Wait until every process of ``pids`` has ended (a zombie counts as ended); those still running.

    Woken by each process's pidfd the moment it ends, so no time is spent after the last one.
    """
    fds: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # already gone
            fds[os.pidfd_open(pid)] = pid
    deadline = time.monotonic() + timeout_s
    # poll(), not select(): a long test session holds over 1,024 descriptors, past select()'s limit
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        while fds and (left := deadline - time.monotonic()) > 0:
            for fd, _ in poller.poll(left * 1000):
                poller.unregister(fd)
                os.close(fd)
                del fds[fd]
        return set(fds.values())
    finally:
        for fd in fds:
            os.close(fd)


def stop_process(proc: subprocess.Popen, timeout_s: float = 15) -> None:
    """Terminate ``proc``, wait up to ``timeout_s`` for it, then kill it and reap it."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
