"""The lexical side of retrieval: the tokenizer of ``kg retrieve`` and BM25 over a fixed list of texts.

A :class:`Lexical` is built from its texts, or read from the folder ``kg index`` saved it in
(:mod:`processkg.retrieve.tables`): tokenizing the 57,800 texts of 100x A2X took 8 s of a
retriever's first request.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from processkg.retrieve.texts import singular, words_of

if TYPE_CHECKING:  # a heavy import, done only where BM25 is built or read
    from bm25s import BM25

_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "now",
        "all",
        "any",
        "can",
        "do",
        "does",
        "how",
        "i",
        "me",
        "my",
        "need",
        "needs",
        "should",
        "want",
    ]
)


def tokenize(text: str) -> list[str]:
    """Lower-case content words, camel case split, plural ``s`` stripped."""
    out = []
    for word in words_of(text):
        low = word.lower()
        if low in _STOP or len(low) < 2:
            continue
        out.append(singular(low))
    return out


class Lexical:
    """BM25 (bm25s, Lucene variant) over a fixed list of ``size`` texts (none: no index)."""

    def __init__(self, bm25: BM25 | None, size: int) -> None:
        self.bm25 = bm25
        self.size = size

    @classmethod
    def of_texts(cls, texts: list[str]) -> Lexical:
        import bm25s

        if not texts:
            return cls(None, 0)
        bm25 = bm25s.BM25()
        bm25.index([tokenize(t) or ["_"] for t in texts], show_progress=False)
        return cls(bm25, len(texts))

    @classmethod
    def load(cls, folder: Path, size: int) -> Lexical:
        """The BM25 :meth:`save` wrote into ``folder`` (memory-mapped), over ``size`` texts."""
        import bm25s

        return cls(bm25s.BM25.load(str(folder), mmap=True, show_progress=False) if size else None, size)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.bm25 is not None:
            self.bm25.save(str(folder), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        tokens = tokenize(query)
        if not tokens or self.bm25 is None:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self.bm25.get_scores(tokens), dtype=np.float32)
