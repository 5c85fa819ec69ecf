"""The Chat page's address and who sees which conversation (issue 20, sections 4 and 5), through AppTest.

``?thread=&kb=&preset=`` reopens a conversation with its knowledge base and preset; the list shows the
selected knowledge base's conversations; "Open trace" keeps the run's knowledge base. With login on (an
``[auth]`` secret and ``AppTest.user``), the owner is ``user:<email>``, and only admins list everyone's.
The real login, through an OpenID provider in the browser, is in test_browser_login.py.
"""

from __future__ import annotations

import uuid

from streamlit.testing.v1 import AppTest

from rag.config import Settings
from rag.history import RunStore
from rag.store import kbs
from rag.store.chroma import make_client
from tests.conftest import ROOT
from tests.e2e.conftest import plain

APP = str(ROOT / "app.py")
AUTH = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "x" * 32,
        "client_id": "retrace", "client_secret": "s", "server_metadata_url":
        "http://127.0.0.1:9/.well-known/openid-configuration"}


def other_kb(data_dir) -> None:
    """Create the empty knowledge base ``other`` beside ``default``."""
    s = Settings.from_env({}, data_dir=data_dir)
    kbs.create(make_client(s), s, "other")


def thread_on(store: RunStore, owner: str, kb: str, run) -> str:
    """A one-turn conversation of ``owner`` on the knowledge base ``kb`` (its run copied onto ``kb``)."""
    t = store.create_thread(owner, knowledge_base=kb)
    store.add_turn(t.id, owner, run.model_copy(update={"id": uuid.uuid4().hex, "knowledge_base": kb}))
    return t.id


def open_app(*, session_id: str | None = None, link: dict | None = None, user: dict | None = None,
             secrets: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    if session_id:
        at.session_state["session_id"] = session_id
    for name, value in (link or {}).items():
        at.query_params[name] = value
    for name, value in (secrets or {}).items():
        at.secrets[name] = value
    if user is not None:
        at.user = user
    at.run()
    assert not at.exception, at.exception
    return at


def thread_buttons(at: AppTest) -> set[str]:
    return {b.key.removeprefix("chat_t_") for b in at.button if b.key and b.key.startswith("chat_t_")}


def test_a_link_reopens_the_conversation_with_its_knowledge_base_and_preset(data_dir, runs):
    other_kb(data_dir)
    store = RunStore(data_dir / "runs.sqlite")
    tid = thread_on(store, "alice", "other", runs["answered"])

    # a refresh (a new session) of /chat?thread=…&kb=default&preset=crag: the conversation's KB wins
    at = open_app(session_id="alice", link={"thread": tid, "kb": "default", "preset": "crag"})
    assert at.session_state["kb_name"] == "other"
    assert at.session_state["chat_thread"] == tid
    assert at.selectbox(key="chat_w_preset").value == "crag"
    assert at.button(key=f"chat_t_{tid}").proto.type == "primary"
    assert runs["answered"].question in [plain(m.value) for m in at.markdown]
    assert (at.query_params["thread"], at.query_params["kb"], at.query_params["preset"]) == (
        tid, "other", "crag")

    # a new conversation drops ?thread=, and another preset is written to the address
    at.button(key="chat_new").click().run()
    at.selectbox(key="chat_w_preset").set_value("naive").run()
    assert "thread" not in at.query_params and at.query_params["preset"] == "naive"

    # without login, a shared link opens another browser's conversation read-only (one local user)
    dave = open_app(session_id="dave", link={"thread": tid})
    assert dave.session_state["chat_thread"] == tid and dave.session_state["kb_name"] == "other"
    assert dave.chat_input[0].proto.disabled
    assert runs["answered"].question in [plain(m.value) for m in dave.markdown]

    # a link to a conversation that is not there opens none, and says so
    gone = open_app(session_id="alice", link={"thread": "f" * 32})
    assert gone.session_state.get("chat_thread") is None
    assert "The link names a conversation that does not exist or is not yours." in [
        plain(e.value) for e in gone.error]


def test_the_list_shows_the_selected_knowledge_bases_conversations_and_opening_one_selects_its_kb(
        data_dir, runs):
    other_kb(data_dir)
    store = RunStore(data_dir / "runs.sqlite")
    here, there = (thread_on(store, "alice", kb, runs["answered"]) for kb in ("default", "other"))

    at = open_app(session_id="alice")
    assert at.session_state["kb_name"] == "default"
    assert thread_buttons(at) == {here}
    at.toggle(key="chat_all_kbs").set_value(True).run()
    assert thread_buttons(at) == {here, there}
    assert plain(at.button(key=f"chat_t_{there}").label).endswith("· other")
    at.button(key=f"chat_t_{there}").click().run()
    assert not at.exception, at.exception
    assert at.session_state["kb_name"] == "other" and at.session_state["chat_thread"] == there
    assert at.query_params["kb"] == "other" and at.query_params["thread"] == there

    # Open trace keeps the run's knowledge base (the Trace page opens with 'other' still selected)
    run_id = store.get_thread(there).turns[0].run.id
    at.button(key=f"chat_trace_{run_id}").click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Trace"]
    assert at.session_state["trace_run_id"] == run_id and at.session_state["kb_name"] == "other"

    # selecting another knowledge base in the sidebar closes the conversation of 'other'
    chat = open_app(session_id="alice", link={"thread": there})
    assert chat.session_state["chat_thread"] == there
    chat.selectbox(key="kb_name").set_value("default").run()
    assert chat.session_state["chat_thread"] is None and "thread" not in chat.query_params


def test_with_login_each_user_owns_their_conversations_and_only_admins_list_everyones(data_dir, runs):
    store = RunStore(data_dir / "runs.sqlite")
    ann = thread_on(store, "user:ann@example.org", "default", runs["answered"])
    bob = thread_on(store, "user:bob@example.org", "default", runs["answered"])
    secrets = {"auth": AUTH, "retrace": {"admins": ["Root@Example.org"]}}

    # not logged in: the login page only
    out = open_app(secrets=secrets, user={"is_logged_in": False})
    assert [b.label for b in out.button] == ["Log in"]
    assert "Chat" not in [t.value for t in out.title]

    # Ann (her e-mail in another case) sees her conversation only; no switch lists everyone's
    at = open_app(secrets=secrets, user={"is_logged_in": True, "email": "Ann@Example.org"})
    assert thread_buttons(at) == {ann}
    assert not [t for t in at.toggle if t.key == "chat_all_threads"]
    assert "Logged in as ann\u2060@example.org" in [c.value.replace("\\", "") for c in at.caption]
    at.chat_input[0].set_value("What is Self-RAG?").run()
    assert not at.exception, at.exception
    mine = [t for t in store.list_threads("user:ann@example.org") if t.id != ann]
    assert len(mine) == 1 and store.owner(store.get_thread(mine[0].id).turns[0].run.id) == (
        "user:ann@example.org")

    # a link to Bob's conversation does not open it for Ann
    peek = open_app(secrets=secrets, user={"is_logged_in": True, "email": "ann@example.org"},
                    link={"thread": bob})
    assert peek.session_state.get("chat_thread") is None
    assert bob not in thread_buttons(peek)
    assert "The link names a conversation that does not exist or is not yours." in [
        plain(e.value) for e in peek.error]

    # the admin lists everyone's with "All users", read-only
    admin = open_app(secrets=secrets, user={"is_logged_in": True, "email": "root@example.org"})
    assert thread_buttons(admin) == set()
    assert admin.toggle(key="chat_all_threads").label == "All users"
    admin.toggle(key="chat_all_threads").set_value(True).run()
    assert thread_buttons(admin) == {ann, bob, mine[0].id}
    assert "read-only" in plain(admin.button(key=f"chat_t_{bob}").label)
