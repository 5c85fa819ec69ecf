"""Benchmarks on real data, as a library (``python -m rag bench`` prints what these return).

- :mod:`rag.bench.data`: BEIR datasets, the shared data location, scoring, tables and ratios;
- :mod:`rag.bench.qa`: question answering over a BEIR corpus through the graph, per preset;
- :mod:`rag.bench.retrieval`: recall@k of each retrieval mode alone;
- :mod:`rag.bench.ingest`: ingestion throughput against pypdf and a LangChain reference pipeline;
- :mod:`rag.bench.ocr`: OCR throughput and character error rate against a plain RapidOCR script;
- :mod:`rag.bench.harness`: CPU time, peak memory and a fresh process for each contender;
- :mod:`rag.bench.scale`: retrieval latency in a store of many chunks.

Every figure comes with a baseline measured in the same run. Nothing is imported here, so
loading one benchmark does not load the others.
"""
