#!/usr/bin/env python3
"""Set everything up and start Retrace, or run its tests.

Needs only python3.

    python3 run.py app     # create .venv, install, start the app on http://127.0.0.1:8501
    python3 run.py test    # create .venv, install test tools and chromium, run ruff, mypy and the whole suite

Streamlit's own options follow ``--``: ``python3 run.py app -- --server.port 8600``. The port is the
``--server.port`` flag, else ``PORT``, else ``STREAMLIT_SERVER_PORT``, else .streamlit/config.toml's (8501).
The app listens on 127.0.0.1 only (config.toml); ``--server.address 0.0.0.0`` opens it to the network.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
CHROMIUM = Path("/usr/bin/chromium")
CONFIG = ROOT / ".streamlit" / "config.toml"
SECRETS = ROOT / ".streamlit" / "secrets.toml"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("", "0.0.0.0", "::")


def say(msg: str) -> None:
    """Print one progress line."""
    print(f"[retrace] {msg}", flush=True)


def ensure_venv(requirements: str) -> None:
    """Create .venv and install ``requirements`` unless the same files were installed before."""
    if not PY.exists():
        say("creating .venv")
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    files = [ROOT / "requirements.txt", ROOT / requirements]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
    stamp = VENV / f".installed-{Path(requirements).stem}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    say(f"installing {requirements} (about 2 minutes the first time)")
    subprocess.run([str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    "-r", str(ROOT / requirements)], check=True)
    stamp.write_text(digest)


def ensure_chromium() -> None:
    """Debian's chromium drives the browser test (Playwright cannot download its own here)."""
    if CHROMIUM.exists():
        return
    apt = shutil.which("apt-get")
    if apt is None:
        say("chromium not found and no apt-get: the browser test will be skipped")
        return
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    say("installing Debian's chromium for the browser test")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(sudo + [apt, "update", "-qq"], check=True, env=env)
    subprocess.run(sudo + [apt, "install", "-y", "-qq", "chromium"], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def flag(args: list[str], name: str) -> str | None:
    """The value of the last ``--name VALUE`` or ``--name=VALUE`` in ``args``; None when absent."""
    value = None
    for i, arg in enumerate(args):
        if arg == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
    return value


def _toml(path: Path) -> dict:
    """The tables of a TOML file ({} when it is missing or malformed: Streamlit reports the latter)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    try:
        import tomllib
    except ImportError:  # Python 3.10: the plain `key = "text"` or `key = 123` lines of each [table]
        tables: dict = {}
        table: dict = {}
        for line in text.splitlines():
            if m := re.fullmatch(r"\s*\[([\w.]+)\]\s*(#.*)?", line):
                table = tables.setdefault(m.group(1).split(".")[0], {})
            elif m := re.fullmatch(r'\s*(\w+)\s*=\s*(?:"([^"]*)"|(\d+))\s*(#.*)?', line):
                table[m.group(1)] = m.group(2) if m.group(2) is not None else int(m.group(3))
        return tables
    try:
        return tomllib.loads(text)
    except ValueError:
        return {}


def where(args: list[str], env: dict[str, str]) -> tuple[str, str]:
    """``(address, port)`` the app will listen on, as Streamlit decides it.

    The command-line flag, then the environment (``PORT`` for the port, then ``STREAMLIT_SERVER_*``), then
    .streamlit/config.toml; an empty address means every interface.
    """
    server = _toml(CONFIG).get("server", {})
    port = (flag(args, "server.port") or env.get("PORT") or env.get("STREAMLIT_SERVER_PORT")
            or str(server.get("port", 8501)))
    address = flag(args, "server.address")
    if address is None:
        address = env.get("STREAMLIT_SERVER_ADDRESS", str(server.get("address", "")))
    return address, port


def login_configured() -> bool:
    """Whether .streamlit/secrets.toml has an ``[auth]`` section (Streamlit's login, ``st.login``)."""
    return bool(_toml(SECRETS).get("auth"))


def app_command(args: list[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
    """The command that starts the app with the user's ``args``, and the lines to print first."""
    address, port = where(args, env)
    extra: list[str] = []
    if env.get("PORT") and flag(args, "server.port") is None:  # the flag, when given, wins over PORT
        extra += ["--server.port", port]
    engine = "OpenAI engine" if env.get("OPENAI_API_KEY") else "offline engine"
    if address in WILDCARD:
        lines = [f"starting Retrace on every network interface, port {port}: http://127.0.0.1:{port} "
                 f"here ({engine})"]
        if flag(args, "browser.serverAddress") is None:
            # Otherwise Streamlit asks an outside host for this machine's address to print an External URL.
            extra += ["--browser.serverAddress", socket.gethostname() or "localhost"]
    else:
        host = f"[{address}]" if ":" in address else address
        lines = [f"starting Retrace on http://{host}:{port} ({engine})"]
    if address not in LOOPBACK and not login_configured():
        lines.append(f"WARNING: listening beyond this machine ({address or 'every interface'}) without "
                     "login: anyone who can reach port " + port + " can read every conversation. Set up "
                     "login in .streamlit/secrets.toml [auth] (see README), or drop --server.address.")
    return [str(PY), "-m", "streamlit", "run", "app.py", *extra, *args], lines


def main(argv: list[str]) -> int:
    """Run ``app`` or ``test`` with the rest of ``argv``; returns the exit code."""
    command = argv[0] if argv else "app"
    rest = argv[1:]
    os.chdir(ROOT)
    if command == "app":
        ensure_venv("requirements.txt")
        if rest[:1] == ["--"]:  # `run.py app -- --server.port N`: Streamlit's options (after its own "--"
            rest = rest[1:]     # they would be app.py's arguments, and the port flag would be ignored)
        args, lines = app_command(rest, dict(os.environ))
        for line in lines:
            say(line)
        os.execv(args[0], args)
    if command == "test":
        ensure_venv("requirements-dev.txt")
        ensure_chromium()
        for tool in (["ruff", "check", "."], ["mypy"]):
            say(" ".join(tool))
            if subprocess.run([str(PY), "-m", *tool]).returncode != 0:
                say(f"{tool[0]} found problems (see above); fix them before the tests run")
                return 1
        return subprocess.run([str(PY), "-m", "pytest", *rest]).returncode
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
