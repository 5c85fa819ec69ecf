"""Optional login (Streamlit's ``st.login``, OpenID Connect) and who may see what.

Login is on when ``.streamlit/secrets.toml`` has an ``[auth]`` section (Streamlit's own: ``redirect_uri``,
``cookie_secret``, ``client_id``, ``client_secret``, ``server_metadata_url``). Then every conversation, run
and evaluation is owned by ``user:<email>`` and its user sees only their own; the admins named in
``[retrace] admins = ["ada@example.org"]`` may list everybody's, read-only. Without login the app serves one
local user: whoever reaches it (loopback only, by default) may list every browser session's.

Only Streamlit glue; nothing here is built at import time.
"""

from __future__ import annotations

import streamlit as st

from app_pages._safe import safe

ADMINS_SECTION = "retrace"
"""The secrets.toml table whose ``admins`` list names the users who may list everybody's history."""
USER_PREFIX = "user:"


def _secret(section: str) -> dict:
    try:
        value = st.secrets.get(section)
    except Exception:  # no secrets.toml, or a malformed one (Streamlit says which)
        return {}
    return dict(value) if value else {}


def enabled() -> bool:
    """Whether login is configured (an ``[auth]`` table in secrets.toml)."""
    return bool(_secret("auth"))


def email() -> str | None:
    """The logged-in user's e-mail address (lower-cased), or their OIDC subject when the provider gives none.

    None when login is off or nobody is logged in.
    """
    if not enabled():
        return None
    try:
        if not st.user.is_logged_in:
            return None
        who = st.user.get("email") or st.user.get("sub")
    except Exception:  # no browser context (bare mode)
        return None
    return str(who).strip().lower() if who else None


def owner_id() -> str | None:
    """``user:<email>``, the owner of everything the logged-in user makes; None when login is off."""
    who = email()
    return f"{USER_PREFIX}{who}" if who else None


def admins() -> set[str]:
    """The e-mail addresses listed in ``[retrace] admins`` (lower-cased); empty when none."""
    listed = _secret(ADMINS_SECTION).get("admins") or []
    if isinstance(listed, str):
        listed = [listed]
    return {str(a).strip().lower() for a in listed if str(a).strip()}


def sees_everyone() -> bool:
    """Whether this user may list every owner's conversations and runs (read-only).

    True without login (the one local user), and for an admin with login on.
    """
    if not enabled():
        return True
    who = email()
    return who is not None and who in admins()


def all_label() -> str:
    """The switch that lists everybody's history: ``All users`` with login on, else ``All sessions``."""
    return "All users" if enabled() else "All sessions"


def require() -> None:
    """With login on, stop here with a Log in button until the visitor has logged in; nothing otherwise."""
    if not enabled() or email() is not None:
        return
    st.title("Retrace")
    st.markdown("Log in to see your conversations and runs. Each user sees only their own.")
    st.button("Log in", type="primary", icon=":material/login:", on_click=st.login, key="login")
    st.stop()


def sidebar() -> None:
    """The logged-in user and a Log out button, in the sidebar (nothing when login is off)."""
    who = email()
    if who is None:
        return
    role = " (admin)" if sees_everyone() else ""
    st.caption(f"Logged in as {safe(who)}{role}")
    st.button("Log out", key="logout", icon=":material/logout:", on_click=st.logout, type="tertiary")
