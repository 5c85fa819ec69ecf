"""Settings page: what is active, keys for this session only, and connection tests."""

import streamlit as st

from app_pages import _session
from app_pages._safe import safe
from rag import health

st.title("Settings")
server = _session.settings()
typed: dict = st.session_state.setdefault(_session.SESSION_KEYS, {})
active = _session.session_settings()

st.subheader("Active")
rows = {
    "Engine": _session.engine_label(active),
    "Grader model (grading, answer check)": active.grader_model if active.openai_api_key else "—",
    "Generator model (generate, rewrite, grounding)": (active.generator_model
                                                       if active.openai_api_key else "—"),
    "Base URL": active.openai_base_url or ("api.openai.com" if active.openai_api_key else "—"),
    "Embeddings of new knowledge bases": (f"OpenAI-compatible: {active.embedding_model}"
                                          if active.embedding_backend == "openai"
                                          else "offline hashing embeddings"),
    "Web search": "Tavily" if active.web_search_enabled else "off (no Tavily key)",
    "Store": (f"Chroma server {active.chroma_host}:{active.chroma_port}" if active.chroma_host
              else f"embedded Chroma in {active.data_dir.resolve()}"),
}
rows["Selected knowledge base"] = _session.kb_model_line(active)
st.table({"setting": list(rows), "value": [safe(v) for v in rows.values()]})  # cells are Markdown
if typed:
    st.caption("Some of these come from keys typed below for this browser session.")

st.subheader("Keys for this session")
st.caption("What you type here serves only your browser session: it is kept in memory, never "
           "written to disk, the environment, a trace, a log or an export, and it is gone "
           "when the session ends. Server-wide keys belong in the environment or "
           "`.streamlit/secrets.toml`.")
with st.form("settings_keys_form"):
    openai_key = st.text_input("OpenAI API key", type="password",
                               placeholder="set on the server" if server.openai_api_key else "sk-…")
    base_url = st.text_input("OpenAI-compatible base URL (optional)",
                             value=typed.get("openai_base_url") or "",
                             placeholder="e.g. http://localhost:11434/v1 for Ollama")
    tavily_key = st.text_input("Tavily API key", type="password",
                               placeholder="set on the server" if server.tavily_api_key else "tvly-…")
    save, forget = st.columns(2)
    saved = save.form_submit_button("Use for this session", type="primary")
    forgotten = forget.form_submit_button("Forget session keys")
if saved:
    for name, value in (("openai_api_key", openai_key), ("openai_base_url", base_url),
                        ("tavily_api_key", tavily_key)):
        if value.strip():
            typed[name] = value.strip()
    st.rerun()
if forgotten:
    typed.clear()
    st.rerun()

st.subheader("Test connection")
checks = {"LLM server": health.check_llm, "Embeddings": health.check_embeddings,
          "Web search (Tavily)": health.check_web, "Vector store (Chroma)": health.check_store}
for column, (label, check) in zip(st.columns(len(checks)), checks.items(), strict=True):
    if column.button(f"Test {label}", key=f"settings_test_{label}"):
        with st.spinner(f"Testing {label}…"):
            ok, message = check(active)
        st.session_state[f"settings_result_{label}"] = (ok, message)
    if result := st.session_state.get(f"settings_result_{label}"):
        ok, message = result  # nothing configured to test (no key) is a notice, not an error
        alert = column.success if ok else column.info if message in health.NOT_CONFIGURED else column.error
        alert(safe(message))
