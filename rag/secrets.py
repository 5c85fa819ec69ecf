"""The one scrubber for every error text that can reach a trace, the run history, a log.

CLI output or an export: it removes API keys.

:func:`scrub` removes every key given to it, every key this process was configured with or
that was typed in (each component that receives a key calls :func:`remember`), the keys in
the environment (OPENAI_API_KEY, TAVILY_API_KEY), and any token shaped like a key:
``Bearer …``, ``sk-…``, ``tvly-…``. Keys are held in memory only, like the settings that
carry them.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_LEN = 4
"""Shorter strings are never treated as secrets (they would blank out ordinary words)."""

_TOKEN = re.compile(
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+"        # an Authorization header value
    r"|\b(?:sk|tvly)-[A-Za-z0-9_-]{16,}"           # OpenAI (sk-, sk-proj-…) and Tavily keys
)
_ENV_KEYS = ("OPENAI_API_KEY", "TAVILY_API_KEY")
_known: set[str] = set()
_lock = threading.Lock()


def remember(*secrets: str | None) -> None:
    """Add keys to those :func:`scrub` always removes (in memory, for this process)."""
    with _lock:
        _known.update(s for s in secrets if s and len(s) >= MIN_SECRET_LEN)


def settings_secrets(settings) -> list[str]:
    """The keys ``settings`` carries (OpenAI, Tavily), for :func:`scrub`."""
    return [s for s in (getattr(settings, "openai_api_key", None),
                        getattr(settings, "tavily_api_key", None)) if s]


def scrub(text: object, secrets: Iterable[str | None] | Any = ()) -> str:
    """``text`` (made a str) with every key replaced by ``[redacted]``.

    ``secrets`` is an iterable of keys or a Settings object (its keys are taken). The keys
    :func:`remember`-ed and those in the environment are always removed too, then any
    ``Bearer …``, ``sk-…`` or ``tvly-…`` token. Longer keys go first, so a key containing
    another is removed whole.
    """
    text = str(text)
    if secrets is None:
        secrets = ()
    elif hasattr(secrets, "openai_api_key"):
        secrets = settings_secrets(secrets)
    with _lock:
        keys = set(_known)
    keys.update(s for s in secrets if s and len(s) >= MIN_SECRET_LEN)
    keys.update(v.strip() for v in (os.environ.get(k, "") for k in _ENV_KEYS)
                if len(v.strip()) >= MIN_SECRET_LEN)
    for key in sorted(keys, key=len, reverse=True):
        if key in text:
            text = text.replace(key, REDACTED)
    return _TOKEN.sub(lambda m: ("Bearer " + REDACTED) if m.group(0)[:1] in "bB" else REDACTED,
                      text)
