"""What the routed ``hybrid`` needs of a store and not of a query, computed once by ``kg index`` and
kept in the index folder (``STORE/index/``) instead of on a retriever's first request (43 s at 100x
A2X, most of it these): the edges between index items as row pairs (``uses:entitySet``,
``bpmn:next``, navigations, the inferred and the mined document flow: ``edges-{name}.npy``) and BM25 over the
entity-set and activity texts (``bm25-{kind}/``).

``tables.json`` holds a key per table: a digest of what the table was computed from (the SPARQL
query and the items; the texts, bm25s's version and the tokens of a sample of the texts). A table
whose key differs from the one its inputs give now, or that is missing or unreadable (an index
written before these tables existed), is not used: the retriever computes it as before.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from processkg.aliases import JSONObject
from processkg.graph.store import StoreGraph, load_query, select, write_atomic
from processkg.retrieve.lexical import Lexical, tokenize

FORMAT = 1
FILE = "tables.json"
#: Edge tables: the query, and the kinds of index item of its two columns.
EDGES = {
    "uses": ("retrieve-uses", "activity", "set"),
    "navigations": ("retrieve-set-navigations", "set", "set"),
    "next": ("retrieve-next", "activity", "activity"),
    "flow": ("retrieve-flow", "set", "set"),
    "mined": ("retrieve-mined", "set", "set"),
}
LEXICAL = ("set", "activity")
_SAMPLE = 64  # texts whose tokens go into a BM25 key: a changed tokenizer changes it


def item_rows(items: dict[str, list[JSONObject]]) -> dict[str, dict[str, int]]:
    """Per kind of item (set, activity): IRI -> row."""
    return {kind: {item["iri"]: i for i, item in enumerate(items[kind])} for kind in ("set", "activity")}


def edge_rows(store: StoreGraph, name: str, rows: dict[str, dict[str, int]]) -> np.ndarray:
    """(pairs, 2): the rows of the two ends of each answer of edge ``name``'s query, in its order;
    answers with an end that is no index item are left out."""
    query, left, right = EDGES[name]
    pairs = [
        (rows[left][a.value], rows[right][b.value])
        for a, b in select(store, load_query(query))[1]
        if a.value in rows[left] and b.value in rows[right]
    ]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def edges_key(name: str, items: dict[str, list[JSONObject]]) -> str:
    query, left, right = EDGES[name]
    return _digest(
        [str(FORMAT), load_query(query), *(i["iri"] for i in items[left]), "", *(i["iri"] for i in items[right])]
    )


def lexical_key(texts: list[str]) -> str:
    import bm25s

    sample = texts[:: max(1, len(texts) // _SAMPLE)]
    return _digest([str(FORMAT), bm25s.__version__, *texts, "", *(" ".join(tokenize(t)) for t in sample)])


def _digest(parts: list[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8") + b"\x00")
    return digest.hexdigest()


def write_tables(folder: Path, store: StoreGraph, items: dict[str, list[JSONObject]]) -> None:
    """Compute every table of ``store``'s ``items`` into the index folder being written."""
    rows = item_rows(items)
    keys: dict[str, str] = {}
    for name in EDGES:
        np.save(folder / f"edges-{name}.npy", edge_rows(store, name, rows))
        keys[f"edges-{name}"] = edges_key(name, items)
    for kind in LEXICAL:
        texts = [i["text"] for i in items[kind]]
        Lexical.of_texts(texts).save(folder / f"bm25-{kind}")
        keys[f"bm25-{kind}"] = lexical_key(texts)
    write_atomic(folder / FILE, json.dumps({"format": FORMAT, "keys": keys}, sort_keys=True).encode("utf-8"))


def _keys(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    keys = data.get("keys") if isinstance(data, dict) and data.get("format") == FORMAT else None
    return keys if isinstance(keys, dict) else {}


def read_edges(folder: Path, name: str, items: dict[str, list[JSONObject]]) -> np.ndarray | None:
    """Edge table ``name`` if ``kg index`` wrote it for these items and this query, else None."""
    if _keys(folder).get(f"edges-{name}") != edges_key(name, items):
        return None
    _query, left, right = EDGES[name]
    try:
        pairs = np.load(folder / f"edges-{name}.npy", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    shaped = pairs.ndim == 2 and pairs.shape[1] == 2 and pairs.dtype == np.int64
    if not shaped or (
        len(pairs) and not (pairs.min() >= 0 and (pairs.max(axis=0) < [len(items[left]), len(items[right])]).all())
    ):
        return None
    return pairs


def read_lexical(folder: Path, kind: str, texts: list[str]) -> Lexical | None:
    """BM25 over ``texts`` if ``kg index`` saved it for these texts and this tokenizer, else None."""
    if _keys(folder).get(f"bm25-{kind}") != lexical_key(texts):
        return None
    try:
        return Lexical.load(folder / f"bm25-{kind}", len(texts))
    except (OSError, ValueError, KeyError, TypeError):
        return None
