"""Embeddings and vector storage: the local llama.cpp embedder, remote embedding sources, the
memory-mapped vector store, and SillyTavern's Vector API semantics on top of them."""
