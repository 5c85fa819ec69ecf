"""Ingestion: loaders (PDF, text, Markdown -> pages), chunking, and the pipeline into the store."""
