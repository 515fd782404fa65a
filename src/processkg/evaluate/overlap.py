"""How much of a query was written from our activity names: its word overlap with the nearest one.

The overlap of a query with an activity name is the fraction of the name's content words (the
tokenizer of ``kg retrieve``: lower-cased, stop words dropped, plurals reduced) that occur in the
query; the query's figure is the largest over all activity names of the store, and that name is
its *nearest* one. A query written from an activity name reuses most of it (the benchmark's
workflow queries: 0.886 on average); a query written about an object, without the process layer
in view, shares about as many words with some activity name by chance (the benchmark's single
and navigation queries: about 0.47). ``kg eval retrieval`` reports the mean per query type and,
in ``results.json``, every query's figure and nearest name.
"""

from __future__ import annotations

from statistics import mean

from processkg.aliases import JSONObject
from processkg.evaluate.metrics import Query
from processkg.retrieve.lexical import tokenize


def overlap(query_words: set[str], name: str) -> float:
    words = set(tokenize(name))
    return len(words & query_words) / len(words) if words else 0.0


def nearest(query: str, names: list[str]) -> tuple[float, str]:
    """The largest overlap of ``query`` with one of ``names``, and that name (the first on ties)."""
    words = set(tokenize(query))
    best, best_name = 0.0, ""
    for name in names:
        value = overlap(words, name)
        if value > best:
            best, best_name = value, name
    return best, best_name


def activity_overlap(queries: list[Query], names: list[str]) -> JSONObject:
    """{"per_query": {id: {"overlap", "activity"}}, "by_type": {type: {"n", "mean"}}} over ``queries``."""
    found = {q.id: nearest(q.text, names) for q in queries}
    groups: dict[str, list[float]] = {"all": [round(v, 3) for v, _ in found.values()]}
    for q in queries:
        groups.setdefault(q.type or "untyped", []).append(round(found[q.id][0], 3))
    per_query = {qid: {"overlap": round(v, 3), "activity": name} for qid, (v, name) in found.items()}
    by_type = {g: {"n": len(v), "mean": round(mean(v), 3) if v else 0.0} for g, v in sorted(groups.items())}
    return {"per_query": per_query, "by_type": by_type}
