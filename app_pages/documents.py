"""Documents page: upload and index files, retry encrypted PDFs with a password, browse and delete."""

import math

import streamlit as st

from app_pages import _docs, _kb, _samples, _session
from app_pages._safe import safe
from rag.ingest import sources
from rag.ingest.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, MIN_CHUNK_SIZE
from rag.ingest.pipeline import ChunkSettings, FileReport, ingest_files
from rag.store.chroma import StoreError
from rag.trace import formats

LOCKED_CODES = _docs.LOCKED_CODES

settings = _session.settings()
reports: list[FileReport] = st.session_state.setdefault(_docs.REPORTS, [])
locked: dict[str, bytes] = st.session_state.setdefault(_docs.LOCKED, {})

st.title("Documents")
_samples.notice()
_kb.manage()  # create, switch, delete and re-index knowledge bases (pages/_kb.py)
with _session.stop_on_store_error(_session.current_kb_name()):
    kb = _session.knowledge_base()
    n_chunks = kb.count()
    docs = kb.documents()

c1, c2, c3 = st.columns([1, 1, 1.4], vertical_alignment="center")
c1.metric("Documents", formats.count(len(docs)))
c2.metric("Chunks in the knowledge base", formats.count(n_chunks))
with c3:  # one click to the samples, whatever is selected
    _samples.load_button("docs_samples", primary=False)

if notice := st.session_state.pop("docs_notice", None):
    st.success(safe(notice))


def _merge(new: list[FileReport]) -> None:
    """Replace earlier reports of the same files by the new ones, keep the order of upload."""
    by_name = {r.filename: r for r in new}
    merged = [by_name.pop(r.filename, r) for r in reports]
    reports[:] = merged + list(by_name.values())
    for r in new:
        if r.code not in LOCKED_CODES:
            locked.pop(r.filename, None)


# -- upload and index ----------------------------------------------------------------------
st.subheader("Add documents")
with st.expander("Chunking", expanded=False):
    a, b = st.columns(2)
    chunk_size = a.number_input("Chunk size (characters)", min_value=MIN_CHUNK_SIZE,
                                max_value=20_000, value=DEFAULT_CHUNK_SIZE, step=50,
                                key="docs_chunk_size")
    chunk_overlap = b.number_input("Overlap (characters)", min_value=0, max_value=10_000,
                                   value=DEFAULT_CHUNK_OVERLAP, step=10, key="docs_chunk_overlap")
    st.caption("Chunks never span two pages. Changing these affects files indexed from now on; "
               "a file already indexed stays as it is until you delete it and index it again.")
chunking = ChunkSettings(int(chunk_size), int(chunk_overlap))

# A new key after each indexing empties the uploader (its chips would otherwise stay).
batch = st.session_state.get("docs_batch", 0)
uploaded = st.file_uploader(
    "PDF, Word, HTML, text or Markdown files", accept_multiple_files=True,
    type=["pdf", "docx", "html", "htm", "txt", "md", "markdown"],
    key=f"docs_uploader_{batch}" if batch else "docs_uploader", on_change=_docs.forget_reports,
    max_upload_size=max(1, math.ceil(settings.max_upload_mb)),
    help=f"Up to {settings.max_upload_mb:g} MB per file. Re-uploading the same bytes is a no-op.")

if uploaded:  # the chips cut long names short: every chosen file, named in full
    st.caption("Chosen: " + " · ".join(f"{safe(f.name)} ({formats.size(f.size)})" for f in uploaded))

use_ocr = st.toggle("Read scanned pages (OCR)", value=True, key="docs_ocr",
                    help="Pages with no text layer are read by OCR on this machine, "
                         "a few seconds per page. Nothing is sent anywhere.")

if st.button("Index files", type="primary", disabled=not uploaded, key="docs_index"):
    files = [(f.name, f.getvalue()) for f in uploaded]
    bar = st.progress(0.0, text="Starting…")
    position = {"file": 0, "files": len(files)}

    def on_progress(done: int, total: int, name: str) -> None:
        """Move the bar to file ``done`` of ``total`` (0-based), named ``name``."""
        position["file"] = done
        label = f"Indexing {safe(name)} ({done + 1} of {total})" if name else \
            f"Indexed {formats.plural(total, 'file')}"
        bar.progress(done / total if total else 1.0, text=label)

    on_page = _docs.page_progress(bar, position)  # page by page, with the expected time left
    _docs.forget_reports()  # this upload's lines replace the earlier one's, whatever happens
    try:
        new = ingest_files(kb, files, chunking=chunking, max_bytes=settings.max_upload_bytes,
                           on_progress=on_progress, ocr=use_ocr, on_page=on_page)
    except (ValueError, StoreError) as exc:  # bad chunk settings, other embedding model:
        bar.empty()  # nothing was touched
        st.error(safe(f"Invalid chunk settings: {exc}" if isinstance(exc, ValueError)
                      else exc))
    else:
        data = dict(files)
        locked.clear()  # the reports of earlier batches are replaced below
        locked.update({r.filename: data[r.filename] for r in new if r.code in LOCKED_CODES})
        reports.clear()
        _merge(new)
        st.session_state["docs_batch"] = batch + 1
        st.rerun()

for report in reports:
    _docs.file_report(report)

# -- encrypted PDFs ------------------------------------------------------------------------
waiting = [r.filename for r in reports if r.code in LOCKED_CODES and r.filename in locked]
if waiting:
    st.markdown("**Encrypted PDFs** need their password to be read. The password is used "
                "once for this retry and not kept.")
    with st.form("docs_pw_form", border=False):  # a form: Enter in a password field submits it
        for name in waiting:  # an input's label is its accessible name too: the file name goes beside it
            st.markdown(f"**{safe(name)}**")
            st.text_input("Password", type="password", key=f"docs_pw_{name}",
                          placeholder="the password of the file named above")
        retry = st.form_submit_button("Retry with password", key="docs_retry")
    if retry:
        passwords = {n: st.session_state.get(f"docs_pw_{n}", "") for n in waiting}
        passwords = {n: pw for n, pw in passwords.items() if pw}
        if not passwords:
            st.warning("Type a password first.")
        else:
            with st.spinner("Indexing…"), _session.stop_on_store_error(kb.name):  # server lost
                new = ingest_files(kb, [(n, locked[n]) for n in passwords], chunking=chunking,
                                   passwords=passwords, max_bytes=settings.max_upload_bytes)
            del passwords
            for n in waiting:
                st.session_state.pop(f"docs_pw_{n}", None)
            _merge(new)
            st.rerun()

# -- what is indexed -----------------------------------------------------------------------
st.subheader(f"Indexed in '{safe(kb.name)}'")
if not docs:
    st.info(f"Nothing is indexed yet. Upload files above, or load {_samples.ABOUT} (button above).")
    st.stop()

st.dataframe(  # cells are plain text (never Markdown)
    _docs.table_rows(docs), hide_index=True,
    column_config={"OCR pages": st.column_config.NumberColumn(help="Pages read by OCR (no text layer)."),
                   "Added": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})

by_sha = {d.doc_sha: d for d in docs}
sha = st.selectbox("Preview a document", list(by_sha), key="docs_preview",  # options: plain text
                   format_func=lambda s: by_sha[s].source)
doc = by_sha[sha]
name = safe(doc.source)
try:
    chunks = kb.document_chunks(sha)
except Exception as exc:
    st.error(f"Cannot read the chunks of {name}: {safe(type(exc).__name__)}: {safe(exc)}")
    chunks = []
if chunks:
    st.caption(f"{name}: {formats.plural(len(chunks), 'chunk')} over {formats.plural(doc.pages, 'page')}")
    st.dataframe(
        [{"Page": c.page, "Chunk": c.index, "Characters": len(c.text), "Text": c.text}
         for c in chunks],
        hide_index=True, column_config={"Text": st.column_config.TextColumn(width="large")})
    # The table shows one line per chunk: one chunk in full, line by line, to read it.
    pick = st.selectbox("Read a chunk", range(len(chunks)), key=f"docs_chunk_{sha}",
                        format_func=lambda i: f"Chunk {chunks[i].index} · page {chunks[i].page}")
    with st.container(border=True):
        st.markdown(safe(chunks[pick].text, multiline=True))

with st.popover(f"Delete {name}", icon=":material/delete:"):
    st.warning(f"This removes {name} and its {formats.plural(doc.chunks, 'chunk')} from '{safe(kb.name)}'. "
               "Runs that cited it keep their trace.")
    sure = _docs.confirm(f"docs_delete_sure_{sha}")
    if st.button("Delete permanently", type="primary", key="docs_delete_confirm", disabled=not sure):
        try:
            n = kb.delete_document(sha)
            sources.forget(kb.data_dir, kb.name, sha)  # the kept PDF of its page views
        except Exception as exc:
            st.error(f"Could not delete {name}: {safe(type(exc).__name__)}: {safe(exc)}")
        else:
            st.session_state["docs_notice"] = f"Deleted {doc.source} ({formats.plural(n, 'chunk')})."
            st.rerun()
