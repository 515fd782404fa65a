"""What ``kg index`` keeps for the routed hybrid (retrieve/tables.py) and the per-query shortcuts of
signals.py and routing.py: each must rank exactly as the computation it replaces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from processkg.graph.handle import StoreHandle
from processkg.retrieve import routing
from processkg.retrieve.retriever import Retriever
from processkg.retrieve.routing import pick, pick_ranked, ranked
from processkg.retrieve.signals import _rank_feature, steps_of
from processkg.retrieve.tables import EDGES, FILE, read_edges, read_lexical

ROOT = Path(__file__).resolve().parents[1]


def _queries(n: int) -> list[str]:
    lines = (ROOT / "data" / "sap" / "benchmark" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()][:n]


def _copy(store: Path, folder: Path) -> Path:
    shutil.copytree(store, folder / "store", symlinks=True)
    return folder / "store"


def _kept(handle: StoreHandle, retriever: Retriever) -> list[bool]:
    items = retriever.index.items
    texts = [a["text"] for a in retriever.activities]
    edges = [read_edges(handle.index_dir, name, items) is not None for name in EDGES]
    return [*edges, read_lexical(handle.index_dir, "set", retriever.set_texts) is not None] + [
        read_lexical(handle.index_dir, "activity", texts) is not None
    ]


def test_kept_tables_rank_as_the_ones_computed_without_them(sap_store, tmp_path):
    kept_handle = StoreHandle.open(sap_store)
    kept = Retriever(kept_handle)
    bare = _copy(sap_store, tmp_path)
    (bare / "index" / FILE).unlink()
    computed = Retriever(StoreHandle.open(bare))
    tables = len(EDGES) + 2  # the edge tables and the two lexical ones
    assert _kept(kept_handle, kept) == [True] * tables
    assert _kept(StoreHandle.open(bare), computed) == [False] * tables
    queries = _queries(60)
    for method in ("hybrid", "tokens"):
        a = [[r.as_json() for r in rs] for rs in kept.retrieve_many(queries, 10, method=method)]
        b = [[r.as_json() for r in rs] for rs in computed.retrieve_many(queries, 10, method=method)]
        assert a == b, method
    for name in EDGES:
        assert np.array_equal(kept.edges(name), computed.edges(name)), name


def test_a_stale_table_is_computed_again(sap_store, tmp_path):
    """A key that is not the one of the current query and items (an index written by an older
    processkg, or a changed retrieve-flow.rq) makes the retriever run the query again."""
    store = _copy(sap_store, tmp_path)
    tables = json.loads((store / "index" / FILE).read_text(encoding="utf-8"))
    tables["keys"]["edges-uses"] = "0" * 64
    (store / "index" / FILE).write_text(json.dumps(tables), encoding="utf-8")
    np.save(store / "index" / "edges-uses.npy", np.zeros((0, 2), dtype=np.int64))  # what a stale table would give
    handle = StoreHandle.open(store)
    retriever = Retriever(handle)
    assert read_edges(handle.index_dir, "uses", retriever.index.items) is None
    assert read_edges(handle.index_dir, "next", retriever.index.items) is not None
    assert np.array_equal(retriever.edges("uses"), Retriever(StoreHandle.open(sap_store)).edges("uses"))
    assert len(retriever.edges("uses")) and retriever.matrices.has_process


def _reference_rank(scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The rank feature as it was: a sort of every row, masked."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    ranks = np.empty(len(scores), dtype=np.float32)
    ranks[order] = np.arange(1, len(scores) + 1)
    return (1.0 / np.log2(ranks + 1.0)).astype(np.float32) * valid


@pytest.mark.parametrize("seed", range(6))
def test_rank_feature_is_the_rank_among_all_rows(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 400))
    scores = np.round(rng.normal(size=size), 1).astype(np.float32)  # many ties
    valid = rng.random(size) < 0.3
    if seed % 2:  # the rows without a path at -1, below every valid one (the usual case)
        scores = np.where(valid, np.abs(scores), -1.0).astype(np.float32)
    got = _rank_feature(scores, valid)
    assert np.array_equal(got, _reference_rank(scores, valid))
    assert np.array_equal(_rank_feature(scores), _reference_rank(scores, np.ones(size, dtype=bool)))


@pytest.mark.parametrize("seed", range(6))
def test_a_ranking_ordered_only_at_its_head_picks_as_the_whole(seed, monkeypatch):
    """Families of 30 near-duplicates with tied scores (as the copies of 100x A2X): the head of the
    ranking is the start of the whole one, and picking from it chooses the same slots, or it orders
    the whole ranking when the head does not fill them."""
    rng = np.random.default_rng(seed)
    family = np.repeat(np.arange(40), 30)
    rng.shuffle(family)
    scores = np.round(rng.random(40), 2)[family] + (rng.random(len(family)) < 0.1) * 0.001
    steps = rng.integers(-1, 3, len(family)) if seed % 2 else None
    monkeypatch.setattr(routing, "HEAD", 25 * (seed + 1))
    whole = ranked(scores)
    assert ranked(scores, routing.HEAD) == whole[: len(ranked(scores, routing.HEAD))]
    for k in (1, 5, 10):
        got = pick_ranked(scores, family, k, steps, lambda order: order[:3][::-1] + order[3:])
        assert got == pick(scores, family, k, steps, whole[:3][::-1] + whole[3:])


def test_the_step_similarities_are_the_products_they_replace_bit_for_bit(sap_store):
    """signals.py takes a one-part query's row of step similarities from its matrix-vector product
    with the activity vectors instead of a second product, and multiplies a query and its steps with
    the activity vectors as the left operand (half the time at 100x): numpy computes the one-row
    matrix product as the matrix-vector one, and both orders of the matrix product sum alike, so
    every signal keeps its bits."""
    retriever = Retriever(StoreHandle.open(sap_store))
    queries = _queries(330)
    single = [q for q in queries if not steps_of(q)]
    assert 50 < len(single) < len(queries) - 50  # both kinds occur
    activities = retriever.index.vectors["activity"]
    for vector in retriever.embed(single):
        assert (vector[None, :] @ activities.T)[0].tobytes() == (activities @ vector).tobytes()
    several = [q for q in queries if steps_of(q)]
    for vector, steps in zip(retriever.embed(several), retriever.embed_steps(several), strict=True):
        parts = np.vstack([vector[None, :], steps])
        assert np.ascontiguousarray((activities @ parts.T).T).tobytes() == (parts @ activities.T).tobytes()
