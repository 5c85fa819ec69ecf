#!/usr/bin/env python3
"""Set everything up and start Retrace, or run its tests.

Needs only python3.

    python3 run.py app     # create .venv, install, start the app on http://localhost:8501
    python3 run.py test    # create .venv, install test tools and chromium, run ruff, mypy and the whole suite
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
CHROMIUM = Path("/usr/bin/chromium")


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


def main(argv: list[str]) -> int:
    """Run ``app`` or ``test`` with the rest of ``argv``; returns the exit code."""
    command = argv[0] if argv else "app"
    rest = argv[1:]
    os.chdir(ROOT)
    if command == "app":
        ensure_venv("requirements.txt")
        port = os.environ.get("PORT", "8501")
        say(f"starting Retrace on http://localhost:{port} "
            f"({'OpenAI engine' if os.environ.get('OPENAI_API_KEY') else 'offline engine'})")
        args = [str(PY), "-m", "streamlit", "run", "app.py", "--server.port", port, *rest]
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
