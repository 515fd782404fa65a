"""The routed ``hybrid`` on the SAP store it was trained on: the shipped models load and are
deterministic, real queries go to their kind, the vectorised signals equal a direct computation,
near-duplicates take one slot, a blocked goal walks ``bpmn:next`` backwards, and the two earlier
methods (``hybrid-paper``, ``hybrid-v1``) rank exactly as they did before routing was added.
Real model, real hnswlib, real Oxigraph, no mocks.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from processkg.cli import main
from processkg.errors import RankingModelError
from processkg.evaluate.metrics import read_queries
from processkg.evaluate.train_ranker import examples, fit_classifier, fit_ranker, routing_accuracy, train
from processkg.graph.handle import StoreHandle
from processkg.retrieve.context import render_context
from processkg.retrieve.index import QUERY_BATCH
from processkg.retrieve.retriever import RetrievalSettings, Retriever, _explained
from processkg.retrieve.routing import KINDS, QUERY_FEATURES, RoutedModel, load_model
from processkg.retrieve.signals import SIGNALS, Edges, _masked_max, family_key, steps_of

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ROOT / "tests" / "expected" / "sap-rankings.json"
EXPECTED_HYBRID = ROOT / "tests" / "expected" / "sap-hybrid-rankings.json"
BENCHMARK = ROOT / "data" / "sap" / "benchmark" / "queries.jsonl"
#: Benchmark queries (test split) and the kind each asks for.
ROUTES = [
    ("Is vendor 300045 blocked for posting or for purchasing?", "single"),
    ("Which serial numbers of the pump model are currently in stock?", "single"),
    ("Which purchase order lines does vendor invoice 5100000045 refer to?", "navigation"),
    ("Management refused the 18% rebate on the offer. Bring it back down to what a rep may give.", "process-chain"),
    (
        "The client wants to send back 3 of the 10 pumps we billed on 90001234; log their request for a refund.",
        "process-chain",
    ),
    (
        "For delivery 80000123: confirm the picked quantities, post goods issue, then create the invoice and email the PDF.",
        "workflow",
    ),
    (
        "Give Bike World a quote with 15% off, get it approved, and once they accept, convert it into an order.",
        "workflow",
    ),
]


@pytest.fixture(scope="module")
def sap(sap_store) -> Retriever:
    return Retriever(StoreHandle.open(sap_store))


def names(results) -> list[str]:
    return [r.entity_set for r in results]


# ---------------------------------------------------------------- the shipped model


def test_shipped_model_loads_and_says_what_it_was_trained_on():
    model = load_model()
    assert set(model.rankers) == set(KINDS) and model.classifier.features == QUERY_FEATURES
    assert model.classifier.coef.shape == (len(KINDS), len(QUERY_FEATURES))
    for kind, ranker in model.rankers.items():
        assert ranker.features[0] == "dense" and set(ranker.features) <= set(SIGNALS), kind
        assert ranker.coef.shape == (1, len(ranker.features))
    assert "split train" in model.about["trained_on"] and model.routing in ("soft", "hard")
    assert RoutedModel.from_json(model.as_json()).as_json() == model.as_json()


def test_a_damaged_model_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "routed.json"
    bad.write_text('{"kinds": ["single"]}')
    with pytest.raises(RankingModelError, match="has kinds"):
        load_model(str(bad))
    bad.write_text("{not json")
    with pytest.raises(RankingModelError, match=r"routed\.json: cannot read the routed ranking model"):
        load_model(str(bad))
    shipped = load_model().as_json()
    shipped["rankers"]["single"]["features"][1] = "dense_ranked"  # a signal that does not exist
    bad.write_text(json.dumps(shipped))
    with pytest.raises(RankingModelError, match=r"unknown signals \['dense_ranked'\]"):
        load_model(str(bad))


@pytest.mark.parametrize("query, kind", ROUTES)
def test_real_queries_are_routed_to_their_kind(sap, query, kind):
    vector = sap.embed([query])[0]
    probabilities = load_model().kind_probabilities(query, sap.signals(query, vector))
    assert KINDS[int(probabilities.argmax())] == kind
    assert probabilities.sum() == pytest.approx(1.0)


def test_routing_is_deterministic_and_batch_equals_single(sap):
    queries = [q for q, _ in ROUTES[:4]]
    batch = sap.retrieve_many(queries, 5, RetrievalSettings("hybrid"))
    again = sap.retrieve_many(queries, 5, RetrievalSettings("hybrid"))
    assert batch == again
    for query, results in zip(queries, batch):
        single = sap.retrieve(query, 5)
        assert names(single) == names(results)
        assert [r.score for r in single] == pytest.approx([r.score for r in results], abs=1e-5)


def test_kind_accuracy_is_reported_per_kind(sap):
    queries = [q for q in read_queries(BENCHMARK) if q.split == "test"][::8]
    report = routing_accuracy(sap, queries)
    assert set(report) == set(KINDS) | {"all"}
    assert sum(report[k]["n"] for k in KINDS) == report["all"]["n"] == len(queries)
    for kind in KINDS:
        assert sum(report[kind]["predicted"].values()) == report[kind]["n"]
        assert report[kind]["correct"] == report[kind]["predicted"][kind]


def test_retraining_is_deterministic(sap):
    train_queries = [q for q in read_queries(BENCHMARK) if q.split == "train"]
    few = [q for kind in KINDS for q in [q for q in train_queries if q.type == kind][:8]]
    items = examples(sap, few)
    assert fit_ranker(items, ("dense", "chain_rank")).as_json() == fit_ranker(items, ("dense", "chain_rank")).as_json()
    assert fit_classifier(items, 1.0).as_json() == fit_classifier(items, 1.0).as_json()
    offered = ("dense", "tokens_rank", "chain_rank", "word_activity_rank")  # a few, to keep it fast
    # one cross-validation seed of three: the same selection twice is what is compared, at a third of the fits
    first, second = (train(items, sap.matrices.family, offered=offered, seeds=(0,)).as_json() for _ in range(2))
    assert first == second


# ---------------------------------------------------------------- signals


def test_vectorised_signals_equal_a_direct_computation(sap):
    query = "the goods left the warehouse, now charge the customer"
    vector = sap.embed([query])[0]
    sig = sap.signals(query, vector)
    m = sap.matrices
    a = sap.index.vectors["activity"] @ vector
    s = sap.index.vectors["set"] @ vector
    column = {name: sig.features[:, SIGNALS.index(name)] for name in ("activity", "after", "before", "navigation")}
    for row in range(0, len(sap.sets), 7):
        users = np.flatnonzero(m.uses[:, row])
        expect_activity = max((a[u] for u in users), default=-1.0)
        expect_after = max((a[p] for u in users for p in np.flatnonzero(m.next[:, u])), default=-1.0)
        expect_before = max((a[c] for u in users for c in np.flatnonzero(m.next[u, :])), default=-1.0)
        sources = [x for x, targets in sap.navigations.items() if row in targets]
        expect_navigation = max((s[x] for x in sources), default=-1.0)
        assert column["activity"][row] == pytest.approx(expect_activity, abs=1e-5)
        assert column["after"][row] == pytest.approx(expect_after, abs=1e-5)
        assert column["before"][row] == pytest.approx(expect_before, abs=1e-5)
        assert column["navigation"][row] == pytest.approx(expect_navigation, abs=1e-5)


@pytest.mark.parametrize("query, _kind", ROUTES + [("we cannot bill the customer for the shipment yet", "")])
def test_the_signals_a_model_reads_are_those_of_all_signals(sap, query, _kind):
    """A routed query computes only the signals its model reads (no rank feature nobody weighs):
    those are the same, bit for bit, as when every signal is computed, and so are the paths."""
    model = load_model()
    assert set(model.signals) < set(SIGNALS) and model.signals == tuple(n for n in SIGNALS if n in model.signals)
    vector = sap.embed([query])[0]
    every, read = sap.signals(query, vector), sap.signals(query, vector, names=model.signals)
    assert read.names == model.signals and read.features.shape == (len(sap.sets), len(model.signals))
    assert every.columns(model.signals).tobytes() == read.features.tobytes()
    for field in dataclasses.fields(read.paths):
        mine, theirs = getattr(read.paths, field.name), getattr(every.paths, field.name)
        assert np.array_equal(np.asarray(mine), np.asarray(theirs)), field.name
    assert np.array_equal(model.scores(query, every)[0], model.scores(query, read)[0])


def test_a_blocked_goal_walks_bpmn_next_backwards(sap):
    situation = "we want to bill the customer for the shipment"
    blocked = "we cannot bill the customer for the shipment yet"
    vector = sap.embed([situation])[0]
    forward, backward = sap.signals(situation, vector), sap.signals(blocked, vector)
    assert not forward.paths.backward and backward.paths.backward
    after, before = SIGNALS.index("after"), SIGNALS.index("before")
    assert np.array_equal(backward.features[:, after], forward.features[:, before])
    row = int(np.argmax(backward.features[:, after]))  # the set best reached backwards
    source, via = _explained(sap, row, "after", backward.paths)
    goal, step = (next(i for i, a in enumerate(sap.activities) if a["name"] == name) for name in via)
    assert source == "preceding" and sap.matrices.next[step, goal]  # the step comes before the goal
    assert sap.matrices.uses[step, row]
    assert _explained(sap, row, "after", forward.paths)[0] in ("expanded", "seed")


def test_query_steps_are_its_parts():
    assert steps_of("Receive the goods, enter the invoice and match it with the order.") == [
        "Receive the goods",
        "enter the invoice",
        "match it with the order",
    ]
    assert steps_of("sales order 4711") == []


# ---------------------------------------------------------------- near-duplicates


def test_near_duplicates_take_one_slot_with_alternatives(sap):
    query = "show me sales order 4711 with its items and the business partner who ordered"
    results = sap.retrieve(query, 10)
    keys = [family_key(r.entity_set) for r in results]
    assert len(keys) == len(set(keys))  # one slot per object
    merged = [r for r in results if r.alternatives]
    assert merged
    for r in merged:
        assert all(family_key(name) == family_key(r.entity_set) for _service, name in r.alternatives)
        assert (r.service, r.entity_set) not in r.alternatives
    text = render_context(sap.store, merged[:1])
    service, name = merged[0].alternatives[0]
    assert f"the same object also in: {service}/{name}" in text


def test_cli_json_lists_the_alternatives(sap, sap_store):
    query = "show me sales order 4711 with its items and the business partner who ordered"
    out = CliRunner().invoke(main, ["retrieve", "--store", str(sap_store), query, "-k", "10", "--json"])
    assert out.exit_code == 0, out.output
    results = json.loads(out.output)["results"]
    expected = [[list(a) for a in r.alternatives] for r in sap.retrieve(query, 10)]
    assert [[[a["service"], a["entity_set"]] for a in r["alternatives"]] for r in results] == expected


# ---------------------------------------------------------------- the earlier methods are unchanged


def test_hybrid_paper_and_hybrid_v1_rank_as_before(sap):
    recorded = json.loads(EXPECTED.read_text(encoding="utf-8"))["queries"]
    for method in ("hybrid-paper", "hybrid-v1"):
        answers = sap.retrieve_many([q["query"] for q in recorded], 5, RetrievalSettings(method))
        for q, results in zip(recorded, answers):
            got = [[r.service, r.entity_set, r.source, list(r.via)] for r in results]
            assert got == q[method], (method, q["id"])


def test_routed_hybrid_ranks_every_benchmark_query_as_recorded(sap):
    """With a process layer ``hybrid`` is the routed model, whatever it does without one: its top 5
    (service, entity set, source, via) on all 330 benchmark queries, recorded before the
    no-process branch changed (``tests/expected/sap-hybrid-rankings.json``)."""
    recorded = json.loads(EXPECTED_HYBRID.read_text(encoding="utf-8"))["queries"]
    text = {q["id"]: q["query"] for q in map(json.loads, BENCHMARK.read_text(encoding="utf-8").splitlines())}
    answers = sap.retrieve_many([text[q["id"]] for q in recorded], 5, RetrievalSettings("hybrid"))
    for q, results in zip(recorded, answers, strict=True):
        assert [[r.service, r.entity_set, r.source, list(r.via)] for r in results] == q["hybrid"], q["id"]


@pytest.mark.parametrize("size", [0, 1, 7, 120])
def test_edges_from_lists_are_the_edges_of_the_mask(size):
    """The navigations and the document flow are kept as edge lists, never as a mask (41,100 x 41,100
    sets at 100x is 1.7 GB): edges built from lists equal those of the mask, duplicates and order aside."""
    mask = np.random.default_rng(size).random((size, size)) < 0.08
    rows_of: dict[int, list[int]] = {}
    for i, j in reversed(list(zip(*np.nonzero(mask), strict=True))):  # any order, one pair twice
        rows_of.setdefault(int(j), []).extend([int(i)] * (1 + (i == j)))
    dense, lists = Edges.of_mask(mask), Edges.of_lists(rows_of, size)
    values = np.round(np.random.default_rng(size).normal(size=size), 1).astype(np.float32)  # ties
    values[::5] = -np.inf
    top, rows = _masked_max(lists, values)
    for j in range(size):  # the max over the column's rows, and the first row that holds it
        held = np.flatnonzero(mask[:, j])
        best = max((values[i] for i in held), default=-np.inf)
        assert top[j] == best and rows[j] == (-1 if best == -np.inf else held[values[held] == best][0])
    assert lists.columns == dense.columns == size
    assert np.array_equal(lists.rows, dense.rows) and np.array_equal(lists.column_of, dense.column_of)
    assert np.array_equal(lists.starts, dense.starts) and np.array_equal(lists.nonempty, dense.nonempty)


@pytest.mark.parametrize("size", [1, 7, 120])
def test_weighted_edges_carry_each_value_times_its_weight(size):
    """A proposed use (``kg eval processes --scored-candidates``) carries its activity's value times its
    weight; an edge given twice keeps its largest weight; the max and its row are those of the products."""
    rng = np.random.default_rng(size)
    pairs = rng.integers(0, size, size=(3 * size, 2))
    pairs = np.vstack([pairs, pairs[:2]])  # two edges given twice, with other weights
    weights = rng.uniform(0.05, 1.0, size=len(pairs)).astype(np.float32)
    edges = Edges.of_weighted(pairs, weights, size)
    values = rng.normal(size=size).astype(np.float32)
    values[::4] = -np.inf
    top, rows = _masked_max(edges, values)
    weight: dict[tuple[int, int], float] = {}
    for (i, j), w in zip(pairs.tolist(), weights.tolist(), strict=True):
        weight[(i, j)] = max(weight.get((i, j), 0.0), w)
    for j in range(size):
        held = sorted(i for i, c in weight if c == j)
        scored = [np.float32(values[i]) * np.float32(weight[(i, j)]) for i in held]
        best = max(scored, default=-np.inf)
        assert top[j] == best and rows[j] == (-1 if best == -np.inf else held[scored.index(best)])
    assert len(edges.rows) == len(weight) and edges.weights is not None


def test_proposed_uses_add_weighted_activity_paths(sap_store):
    """A retriever given proposed uses walks them in the routed signals, each as the activity's
    similarity times its weight, beside the mapping's uses (weight 1); the baselines do not see them."""
    plain, given = Retriever(StoreHandle.open(sap_store)), Retriever(StoreHandle.open(sap_store))
    query = "register the supplier warranty for the new press"
    vector = plain.embed([query])[0]
    a = plain.index.vectors["activity"] @ vector
    unused = sorted(set(range(len(plain.sets))) - set(plain.edges("uses")[:, 1].tolist()))[:3]
    pairs = np.array([[int(np.argmax(a)), unused[0]], [int(np.argmax(a)), unused[1]], [0, unused[2]]])
    given.add_proposed_uses(pairs, np.array([0.5, 1.0, 0.25], dtype=np.float32))
    before, after = plain.signals(query, vector).column("activity"), given.signals(query, vector).column("activity")
    assert before[unused].tolist() == [-1.0, -1.0, -1.0]
    assert after[unused] == pytest.approx([0.5 * a.max(), a.max(), 0.25 * a[0]], abs=1e-6)
    others = np.setdiff1d(np.arange(len(plain.sets)), unused)
    assert np.array_equal(before[others], after[others])
    assert given.matrices.has_process and len(given.matrices.proposed_pairs) == 3
    for method in ("dense", "hybrid-paper", "hybrid-v1"):
        settings = RetrievalSettings(method)
        assert names(plain.retrieve(query, 5, settings)) == names(given.retrieve(query, 5, settings))


def test_batch_embedding_ranks_as_one_query_at_a_time(sap):
    """``kg retrieve --queries`` embeds every query and part once, on one torch thread, in batches of
    similar token counts (``Encoder.encode_queries``); ``kg serve`` asks one query at a time. Forty
    benchmark queries (a repeated one among them) and their parts fill several batches: the vectors
    agree with one-at-a-time ones to float noise, a repeated text gets the same vector, and every
    query ranks the same (dense and routed hybrid: top 10 with source, via and alternatives)."""
    texts = [q["query"] for q in map(json.loads, BENCHMARK.read_text(encoding="utf-8").splitlines()[:40])]
    texts.append(texts[3])
    parts = [p for q in texts for p in steps_of(q)]
    assert len(set(texts + parts)) > 2 * QUERY_BATCH
    batch = sap.embed(texts + parts)
    single = np.vstack([sap.embed([t]) for t in texts + parts])
    assert np.abs(batch - single).max() < 1e-6
    assert np.array_equal(batch[3], batch[len(texts) - 1])
    for method in ("dense", "hybrid"):
        settings = RetrievalSettings(method)
        together = sap.retrieve_many(texts, 10, settings)
        for text, results in zip(texts, together, strict=True):
            alone = sap.retrieve_many([text], 10, settings)[0]
            assert [(r.entity_set, r.source, r.via, r.alternatives) for r in alone] == [
                (r.entity_set, r.source, r.via, r.alternatives) for r in results
            ], (method, text)
            assert [r.score for r in alone] == pytest.approx([r.score for r in results], abs=1e-5)
