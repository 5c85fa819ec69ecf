"""Storage: the Chroma knowledge base, its embeddings, its BM25 index, and retrieval over them."""
