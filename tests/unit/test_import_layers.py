"""The import graph of ``rag``: the store sits below ingestion, the engines and the graph, and no cycle.

Read from the source with ``ast``: every import counts, at module level, inside a function (a lazy import)
or under ``if TYPE_CHECKING:``, since each ties the modules together all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

RAG = Path(__file__).resolve().parents[2] / "rag"
ABOVE_THE_STORE = ("rag.ingest", "rag.engines", "rag.graph")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(RAG.rglob("*.py")):
        parts = path.relative_to(RAG.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The ``rag`` modules ``name`` imports (``from pkg import mod`` counts as importing ``pkg.mod``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_store_imports_nothing_above_it():
    graph = _graph()
    assert "rag.store.chroma" in graph["rag.ingest.pipeline"]  # the graph is read: ingestion uses the store
    wrong = {name: sorted(m for m in deps if m.startswith(ABOVE_THE_STORE))
             for name, deps in graph.items() if name.startswith("rag.store")}
    assert {name: deps for name, deps in wrong.items() if deps} == {}


def test_no_two_rag_modules_import_each_other_even_through_others():
    assert _cycles(_graph()) == []


def test_the_checks_see_a_lazy_or_type_checking_import(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rag.store import chroma\n"
                   "def f():\n    from rag.engines.llm import describe_error\n")
    modules = {"rag.store.chroma": src, "rag.engines.llm": src, "rag.store": src, "rag.store.m": src}
    assert _imports("rag.store.m", src, modules) == {"rag.store.chroma", "rag.engines.llm"}


def test_every_module_stays_under_400_lines_and_store_and_ingest_keep_their_public_imports():
    root = RAG.parent  # the library, the app and its pages: a module over 400 lines is two modules
    paths = [*sorted(RAG.rglob("*.py")), root / "app.py", *sorted((root / "app_pages").rglob("*.py"))]
    assert len(paths) > 100
    long = {str(p.relative_to(root)): n for p in paths
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}
    from rag.ingest.parallel import (
        STREAM_MIN_RANGES,
        TEST_HOOK_ENV,
        PrefetchingLoader,
        RangeStream,
        WorkerFailed,
    )
    from rag.store.bm25 import (
        KeywordIndex,
        LexicalIndex,
        LexicalStats,
        index_path,
        keyword_index,
        lexical_stats,
    )
    from rag.store.chroma import KnowledgeBase, StoreUnavailable, document_lines, open_knowledge_base

    assert all((STREAM_MIN_RANGES, TEST_HOOK_ENV, PrefetchingLoader, RangeStream, WorkerFailed, KeywordIndex,
                LexicalIndex, LexicalStats, index_path, keyword_index, lexical_stats, KnowledgeBase,
                StoreUnavailable, document_lines, open_knowledge_base))
