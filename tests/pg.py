"""A throwaway PostgreSQL 15 for tests: Debian's server, run by ``initdb`` and ``pg_ctl`` in a temp folder.

As root the server runs as the ``postgres`` user (``runuser``), in a folder that user owns; as anyone else it
runs as that user. It listens on 127.0.0.1 at a free port only (no Unix socket), trusts local connections and
is stopped and deleted after use. Use the ``postgres`` fixture (tests/conftest.py) for the server and
``database_url`` for a fresh, empty database per test; :func:`unavailable` says why a machine cannot run one.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

PG_BIN = Path(os.environ.get("RETRACE_PG_BIN", "/usr/lib/postgresql/15/bin"))
"""Where ``initdb``, ``pg_ctl`` and ``postgres`` are (Debian's PostgreSQL 15)."""


def unavailable() -> str | None:
    """Why no throwaway server can start here (a sentence for ``pytest.skip``), or None when one can."""
    missing = [n for n in ("initdb", "pg_ctl", "postgres") if not (PG_BIN / n).is_file()]
    if missing:
        return f"PostgreSQL 15 is not installed ({', '.join(missing)} missing in {PG_BIN})"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (needed to run PostgreSQL as postgres)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One ``postgres`` process on 127.0.0.1:``port`` with its cluster in a temporary folder.

    ``start()`` raises RuntimeError (with the server's log) when it does not come up.
    """

    def __init__(self) -> None:
        """Choose a folder and a free port; nothing runs until :meth:`start`."""
        self.root = Path(tempfile.mkdtemp(prefix="retrace-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120, cwd=self.root)

    def start(self) -> PostgresServer:
        """Make the cluster and start the server; returns self once it accepts connections."""
        made = self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                         "-E", "UTF8", "--no-instructions")
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()}")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
                   "-c fsync=off -c synchronous_commit=off -c max_connections=200")
        started = self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
                            "-t", "60", "-o", options, "start")
        if started.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()}\n{log}")
        return self

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this server, as ``RAG_DATABASE_URL`` takes it."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new, empty database; returns its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (immediately) and delete its folder."""
        if (self.data / "postmaster.pid").exists():
            self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
