"""The app starts private: loopback only, no outside lookup, on the port asked for (issue 20, section 4).

Each test starts the app through run.py's own ``main`` (only the venv setup is skipped: the suite already
runs in it), with a ``sitecustomize`` that records every name lookup and outside connection the server makes
and refuses them, so no test reaches the internet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.conftest import free_port
from tests.waiting import http_ok, stop_process, wait_for

pytestmark = pytest.mark.slow

RECORDER = '''
import os, socket
_LOG = os.environ["NET_RECORD"]
_LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "", None}

def _note(kind, host):
    with open(_LOG, "a") as f:
        f.write(f"{kind} {host}\\n")
    if host not in _LOCAL and not str(host).startswith("127."):
        raise socket.gaierror(f"recorder: no outside host in tests ({host})")

_getaddrinfo, _byname, _connect = socket.getaddrinfo, socket.gethostbyname, socket.socket.connect

def getaddrinfo(host, *a, **k):
    _note("lookup", host.decode() if isinstance(host, bytes) else host)
    return _getaddrinfo(host, *a, **k)

def gethostbyname(host):
    _note("lookup", host)
    return _byname(host)

def connect(self, address):
    if isinstance(address, tuple):
        _note("connect", address[0])
    return _connect(self, address)

socket.getaddrinfo, socket.gethostbyname, socket.socket.connect = getaddrinfo, gethostbyname, connect
'''
LAUNCH = ("import sys, run; run.ensure_venv = lambda requirements: None; run.PY = sys.executable; "
          "sys.exit(run.main(sys.argv[1:]))")


class Started:
    """run.py app with ``args`` and ``env``, watched by the recorder; stop() ends only this process."""

    def __init__(self, tmp: Path, args: list[str], env: dict[str, str], port: int, host: str) -> None:
        (tmp / "rec").mkdir(exist_ok=True)
        (tmp / "rec" / "sitecustomize.py").write_text(RECORDER)
        self.record = tmp / "net.log"
        self.record.write_text("")
        self.out = tmp / "start.log"
        clean = {k: v for k, v in os.environ.items()
                 if k not in ("PORT", "STREAMLIT_SERVER_PORT", "STREAMLIT_SERVER_ADDRESS")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, "app", *args], cwd=ROOT,
            env={**clean, "PYTHONPATH": f"{tmp / 'rec'}{os.pathsep}{ROOT}", "NET_RECORD": str(self.record),
                 "RAG_DATA_DIR": str(tmp / "data"), **env},
            stdout=open(self.out, "w"), stderr=subprocess.STDOUT)  # noqa: SIM115 (closed with the process)
        wait_for(lambda: http_ok(f"http://{host}:{port}/_stcore/health"), timeout_s=90,
                 what="the app", proc=self.proc)
        assert http_ok(f"http://{host}:{port}/")  # the page itself, too

    def output(self) -> str:
        return self.out.read_text()

    def hosts(self) -> set[str]:
        return {line.split(" ", 1)[1] for line in self.record.read_text().splitlines()}

    def stop(self) -> None:
        stop_process(self.proc)


def listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp* shows them) with a socket listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.append(address)
    return found


def outside(hosts: set[str]) -> set[str]:
    return {h for h in hosts if h not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "", "None")
            and not h.startswith("127.")}


LOOPBACK_V4 = "0100007F"  # 127.0.0.1 in /proc/net/tcp's byte order


def test_the_port_flag_wins_over_PORT_and_the_app_stays_on_loopback_without_lookups(tmp_path):
    port, other = free_port(), free_port()
    app = Started(tmp_path, ["--", "--server.port", str(port)], {"PORT": str(other)}, port, "127.0.0.1")
    try:
        out = app.output()
        assert f"[retrace] starting Retrace on http://127.0.0.1:{port} (offline engine)" in out, out
        assert f"URL: http://127.0.0.1:{port}" in out, out  # Streamlit's own line agrees
        assert "8501" not in out and "WARNING" not in out, out
        assert listening(port) == [LOOPBACK_V4], listening(port)  # 127.0.0.1 only: no wildcard, no v6
        assert not listening(other)
        assert not outside(app.hosts()), app.hosts()
    finally:
        app.stop()


def test_PORT_alone_is_honoured(tmp_path):
    port = free_port()
    app = Started(tmp_path, [], {"PORT": str(port)}, port, "127.0.0.1")
    try:
        assert f"starting Retrace on http://127.0.0.1:{port} " in app.output()
        assert listening(port) == [LOOPBACK_V4]
    finally:
        app.stop()


def test_the_recorder_sees_streamlits_external_ip_lookup_when_not_on_loopback(tmp_path):
    # The check above can fail: Streamlit run straight on every interface asks checkip.amazonaws.com.
    port = free_port()
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "sitecustomize.py").write_text(RECORDER)
    record = tmp_path / "net.log"
    record.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "0.0.0.0"], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(rec), "NET_RECORD": str(record),
             "RAG_DATA_DIR": str(tmp_path / "data")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: "checkip.amazonaws.com" in record.read_text(), timeout_s=90,
                 what="the lookup", proc=proc)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_every_interface_needs_the_flag_and_warns_without_login(tmp_path):
    port = free_port()
    app = Started(tmp_path, ["--server.address", "0.0.0.0", "--server.port", str(port)], {}, port,
                  "127.0.0.1")
    try:
        out = app.output()
        assert f"starting Retrace on every network interface, port {port}" in out, out
        assert (f"WARNING: listening beyond this machine (0.0.0.0) without login: anyone who can reach "
                f"port {port} can read every conversation") in out, out
        assert "00000000" in listening(port)  # really on every interface
        assert not outside(app.hosts()), app.hosts()  # and still no External URL lookup
    finally:
        app.stop()
