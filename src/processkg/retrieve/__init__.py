"""Retrieval: the texts the index embeds, the embedding models, the HNSW index, the ranking methods and the
typed context (``kg index``, ``kg retrieve``)."""
