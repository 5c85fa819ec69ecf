"""The self-correcting RAG graph: state, nodes, routing and wiring (LangGraph)."""
