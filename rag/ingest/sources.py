"""Kept copies of PDFs, now in :mod:`rag.store.sources` (the store keeps them); importable here as before."""

from rag.store.sources import SOURCES_DIR, find, forget, forget_knowledge_base, keep, source_path

__all__ = ["SOURCES_DIR", "find", "forget", "forget_knowledge_base", "keep", "source_path"]
