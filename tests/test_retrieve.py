"""``kg retrieve``: every method and ablation on the demo data and on the real A2X corpus, the
JSON(L) interface, and the typed context. Real model, real hnswlib, real Oxigraph, no mocks.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from conftest import index_store
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.errors import (
    IndexNotFoundError,
    ProcessKGError,
)
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.retrieve.context import key_predicate, render_context, render_set
from processkg.retrieve.retriever import (
    HYBRID,
    LEXICAL_EVEN,
    METHODS,
    NAVIGATION_SEEDS,
    RRF_K,
    RetrievalSettings,
    Retriever,
    _navigation_list,
    _object_query,
    _subgraph,
    fused_seeds,
    tokenize,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
A2X_CHUNKED = ["API_PLANT_SRV.edmx", "API_COMPANYCODE_SRV.edmx", "API_MATERIAL_STOCK_SRV.edmx"]
#: A process-chain question asked from the business side: the goods issue happened (Pick and
#: post goods issue), the next step is billing (Create billing document -> A_BillingDocument).
CHAIN_QUERY = "the goods left the warehouse, now charge the customer"
#: Another one: the three-way match passed (Perform three-way match), the next step posts the
#: supplier invoice (Post supplier invoice -> SupplierInvoice); the query names neither.
DOWNSTREAM_QUERY = "the bill matches the order and what we received; book what we owe"


@pytest.fixture(scope="module")
def demo_retriever(tmp_path_factory) -> Retriever:
    store = tmp_path_factory.mktemp("retrieve") / "demo"
    build_store(
        BuildOptions(
            odata=[DEMO / "odata"],
            bpmn=[DEMO / "bpmn"],
            mapping=DEMO / "mapping.yaml",
            codes=[DEMO / "codes"],
            store=StoreLocation.parse(store),
        )
    )
    index_store(tmp_path_factory, store, odata=[DEMO / "odata"])
    return Retriever(StoreHandle.open(store))


@pytest.fixture(scope="module")
def a2x_retriever(tmp_path_factory, a2x_store) -> Retriever:
    store = tmp_path_factory.mktemp("retrieve") / "a2x"
    shutil.copytree(a2x_store, store, symlinks=True)  # the session's A2X build (odata only), indexed here
    index_store(tmp_path_factory, store, odata=[A2X / name for name in A2X_CHUNKED])
    return Retriever(StoreHandle.open(store))


def names(results) -> list[str]:
    return [r.entity_set for r in results]


# ---------------------------------------------------------------- process-aware retrieval


def test_hybrid_v1_finds_the_downstream_entity_set_that_dense_misses(demo_retriever):
    dense = demo_retriever.retrieve(DOWNSTREAM_QUERY, 5, method="dense")
    hybrid = demo_retriever.retrieve(DOWNSTREAM_QUERY, 5, method="hybrid-v1")
    assert "SupplierInvoice" not in names(dense)
    invoice = [r for r in hybrid if r.entity_set == "SupplierInvoice"]
    assert invoice and invoice[0].source == "expanded" and invoice[0].service == "DEMO_PROCUREMENT"
    assert invoice[0].via == ("Perform three-way match", "Post supplier invoice")


def test_hybrid_paper_reaches_billing_after_the_goods_issue(demo_retriever):
    dense = demo_retriever.retrieve(CHAIN_QUERY, 5, method="dense")
    paper = demo_retriever.retrieve(CHAIN_QUERY, 5, method="hybrid-paper")
    assert "A_BillingDocument" not in names(dense)
    billing = [r for r in paper if r.entity_set == "A_BillingDocument"]
    assert billing and billing[0].source == "expanded" and billing[0].service == "DEMO_DELIVERY_BILLING_SRV"
    assert billing[0].via == ("Pick and post goods issue", "Create billing document")


def test_hybrid_paper_keeps_dense_seed_order_and_inserts_after_each_seed(demo_retriever):
    dense = demo_retriever.retrieve(CHAIN_QUERY, 5, method="dense")
    paper = demo_retriever.retrieve(CHAIN_QUERY, 5, method="hybrid-paper")
    seeds = [r for r in paper if r.source == "seed"]
    assert names(seeds) == names(dense)[: len(seeds)]
    assert len(paper) == 5 and len(set(names(paper))) == 5
    assert names(paper)[:3] == ["A_GoodsMovement", "A_OutbDeliveryHeader", "A_BillingDocument"]
    for r in paper:
        assert (r.source == "seed") == (r.via == ())
        if r.source == "expanded":
            assert 2 <= len(r.via) <= 3  # bpmn:next{1,2} from the seed's activity


def test_expansion_query_follows_next_and_uses_edges(demo_retriever):
    activity = "https://w3id.org/processkg/id/bpmn/bpmn%2Forder-to-cash.bpmn/Task_PickAndPostGoodsIssue"
    starts, nexts, uses = _subgraph(demo_retriever.store, activity)
    assert starts == {activity}
    assert any(n.endswith("Task_CreateBillingDocument") for n in nexts[activity])
    assert {u.rsplit("/", 1)[-1] for u in uses[activity]} == {"A_GoodsMovement", "A_OutbDeliveryItem"}
    chain = demo_retriever.chain(activity, 1, 1)
    assert sorted(demo_retriever.sets[row]["name"] for row, _ in chain) == ["A_BillingDocument", "A_OutbDeliveryHeader"]


def test_hop_bound_is_respected(demo_retriever):
    for hops in (1, 2, 3):
        results = demo_retriever.retrieve(CHAIN_QUERY, 10, method="hybrid-paper", hops=hops)
        assert max(len(r.via) for r in results) - 1 <= hops
    with pytest.raises(ProcessKGError, match="--hops"):
        demo_retriever.retrieve(CHAIN_QUERY, 5, method="hybrid", hops=7)


def test_no_mapping_edges_turns_expansion_off(demo_retriever):
    dense = demo_retriever.retrieve(CHAIN_QUERY, 5, method="dense")
    paper = demo_retriever.retrieve(CHAIN_QUERY, 5, method="hybrid-paper", mapping_edges=False)
    hybrid = demo_retriever.retrieve(CHAIN_QUERY, 5, method="hybrid-v1", mapping_edges=False)
    assert paper == dense
    assert all(r.source == "seed" and r.via == () for r in hybrid)
    routed = demo_retriever.retrieve(CHAIN_QUERY, 5, method="hybrid", mapping_edges=False)
    assert routed and all(r.source in ("seed", "navigation") for r in routed)  # no activity path left
    assert all(r.via == () for r in routed if r.source == "seed")


def test_no_sequence_edges_keeps_only_the_seeds_own_activities(demo_retriever):
    results = demo_retriever.retrieve(CHAIN_QUERY, 8, method="hybrid-paper", sequence_edges=False)
    expanded = [r for r in results if r.source == "expanded"]
    assert expanded and all(len(r.via) == 1 for r in expanded)
    assert "A_BillingDocument" not in names(results)


def test_verify_seeds_expands_only_supported_seeds(demo_retriever):
    query = "the vendor invoice is booked; transfer the money"
    dense = demo_retriever.retrieve(query, 5, method="dense")
    status = {
        r.entity_set: demo_retriever.verified(query, demo_retriever.set_row[r.iri], r.score, dense[0].score)
        for r in dense
    }
    assert any(status.values()) and not all(status.values())  # the switch matters for this query
    verified = demo_retriever.retrieve(query, 5, method="hybrid-paper", verify_seeds=True)
    plain = demo_retriever.retrieve(query, 5, method="hybrid-paper")
    assert verified != plain
    seed = None
    for r in verified:
        if r.source == "seed":
            seed = r.entity_set
            assert seed in status
        else:
            assert status[seed], f"{r.entity_set} expanded from unverified seed {seed}"


# ---------------------------------------------------------------- baselines


def test_tokens_is_bm25_over_the_summaries(demo_retriever):
    results = demo_retriever.retrieve("supplier invoice payment", 3, method="tokens")
    assert results[0].entity_set == "SupplierInvoice" and results[0].score > 0
    assert demo_retriever.retrieve("zzzz qqqq", 3, method="tokens") == []
    assert tokenize("SupplierInvoices of the dealers") == ["supplier", "invoice", "dealer"]


def test_chunkrag_maps_metadata_chunks_back_to_entity_sets(demo_retriever):
    results = demo_retriever.retrieve("purchase order item net price and order quantity", 5, method="chunkrag")
    assert "PurchaseOrderItem" in names(results)
    assert all(r.source == "seed" for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_every_method_answers_and_is_deterministic(demo_retriever):
    for method in METHODS:
        first = demo_retriever.retrieve("which currencies can we sell in", 4, method=method)
        assert 0 < len(first) <= 4, method
        assert demo_retriever.retrieve("which currencies can we sell in", 4, method=method) == first


def test_batch_equals_single_queries(demo_retriever):
    queries = [CHAIN_QUERY, "a dealer orders ten city bikes", "pay the suppliers whose invoices are due"]
    batch = demo_retriever.retrieve_many(queries, 5, RetrievalSettings("hybrid-v1"))
    assert batch == [demo_retriever.retrieve(q, 5, method="hybrid-v1") for q in queries]
    # the routed hybrid also embeds each query's parts: in a batch they are encoded together (and
    # with more torch threads), which moves similarities in the last float digits, not the ranking
    routed = demo_retriever.retrieve_many(queries, 5, RetrievalSettings("hybrid"))
    for query, results in zip(queries, routed):
        single = demo_retriever.retrieve(query, 5)
        assert [(r.entity_set, r.source, r.via, r.alternatives) for r in single] == [
            (r.entity_set, r.source, r.via, r.alternatives) for r in results
        ]
        assert [r.score for r in single] == pytest.approx([r.score for r in results], abs=1e-5)


def test_index_built_with_another_model_is_refused(demo_retriever, tmp_path):
    with pytest.raises(IndexNotFoundError, match="was built with"):
        Retriever(demo_retriever.handle, model=str(tmp_path))


def test_navigations_are_the_target_entity_sets_of_each_set(demo_retriever):
    nav = {
        demo_retriever.sets[s]["name"]: {demo_retriever.sets[t]["name"] for t in ts}
        for s, ts in demo_retriever.navigations.items()
    }
    assert nav["A_SalesOrder"] == {"A_Customer", "A_SalesOrderItem"}
    assert nav["PurchaseOrder"] == {"PurchaseOrderItem", "Supplier"}
    assert "A_Customer" not in nav  # no navigation properties


def test_hybrid_fuses_navigation_targets_for_object_queries_only(demo_retriever):
    about_object = "the schedule lines of sales order 4711"
    v_object, v_step = demo_retriever.embed([about_object, CHAIN_QUERY])
    assert _object_query(demo_retriever, v_object, HYBRID) and not _object_query(demo_retriever, v_step, HYBRID)
    nearest = [row for row, _ in demo_retriever.dense_sets(v_object, NAVIGATION_SEEDS)]
    navigation = _navigation_list(demo_retriever, about_object, v_object, 20, RetrievalSettings())
    assert {row for row, _ in navigation} == {t for row in nearest for t in demo_retriever.navigations.get(row, ())}
    sims = [demo_retriever.similarity(v_object, row) for row, _ in navigation]
    assert sims == sorted(sims, reverse=True) and "A_SalesOrderItem" in names(
        [demo_retriever.result(row, 0) for row, _ in navigation]
    )
    without = replace(HYBRID, object_lists=())
    plain = {s.row: s.score for s in fused_seeds(demo_retriever, about_object, v_object, RetrievalSettings(), without)}
    fused = {s.row: s.score for s in fused_seeds(demo_retriever, about_object, v_object, RetrievalSettings())}
    for rank, (row, _path) in enumerate(navigation, 1):  # one more reciprocal-rank term per target
        assert fused[row] == pytest.approx(plain.get(row, 0.0) + 1 / (RRF_K + rank))
    steps = [fused_seeds(demo_retriever, CHAIN_QUERY, v_step, RetrievalSettings(), c) for c in (HYBRID, without)]
    assert [(s.row, s.score) for s in steps[0]] == [(s.row, s.score) for s in steps[1]]


# ---------------------------------------------------------------- A2X (no process layer yet)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("items of a sales order", "A_SalesOrderItem"),
        ("outbound delivery header", "A_OutbDeliveryHeader"),
        ("sales pricing condition records", "A_SlsPrcgConditionRecord"),
    ],
)
def test_a2x_dense_and_hybrid_find_the_entity_set(a2x_retriever, query, expected):
    for method in ("dense", "hybrid", "hybrid-paper", "tokens"):
        assert expected in names(a2x_retriever.retrieve(query, 5, method=method)), method


def test_a2x_hybrid_without_process_layer_returns_seeds_only(a2x_retriever):
    results = a2x_retriever.retrieve(CHAIN_QUERY, 5)
    assert len(results) == 5 and all(r.source == "seed" and r.via == () for r in results)
    pool = names(a2x_retriever.retrieve(CHAIN_QUERY, 20, method="dense")) + names(
        a2x_retriever.retrieve(CHAIN_QUERY, 20, method="tokens")
    )
    assert set(names(results)) <= set(pool)  # no activities: dense and BM25 seeds only
    goods_issue = a2x_retriever.retrieve("post the goods issue for the delivery", 5)
    assert {"A_OutbDeliveryHeader", "A_OutbDeliveryItem"} <= set(names(goods_issue))


LONG_QUERY = (
    "the customer orders bikes, we check availability and credit, create the outbound delivery, pick and "
    "post the goods issue, bill the customer and clear the incoming payment against the open item"
)


def test_a2x_hybrid_without_process_layer_weighs_bm25_by_query_length(a2x_retriever):
    """No process layer: BM25 and dense fused, BM25 weighing n² / (n² + LEXICAL_EVEN²) for n
    content words. No content word: dense alone; two words: dense leads (BM25 alone misses the
    header A_SalesOrder); 21 words: BM25's order (dense's top 5 shares nothing with it)."""

    def top(query, method):
        return names(a2x_retriever.retrieve(query, 5, method=method))

    assert (LEXICAL_EVEN, len(tokenize("what is there for me")), len(tokenize(LONG_QUERY))) == (4, 0, 21)
    assert top("what is there for me", "hybrid") == top("what is there for me", "dense")
    assert top("sales order", "hybrid")[0] == top("sales order", "dense")[0] == "A_SalesOrder"
    assert "A_SalesOrder" not in top("sales order", "tokens")
    assert top(LONG_QUERY, "hybrid") == top(LONG_QUERY, "tokens")
    assert not set(top(LONG_QUERY, "dense")) & set(top(LONG_QUERY, "tokens"))
    assert {r.source for r in a2x_retriever.retrieve(LONG_QUERY, 20)} == {"seed"}  # no expansion


def test_a2x_all_methods_and_ablations_run(a2x_retriever):
    for method in METHODS:
        for options in ({}, {"mapping_edges": False}, {"sequence_edges": False}, {"verify_seeds": True}):
            results = a2x_retriever.retrieve("stock of a material in a plant", 5, method=method, **options)
            assert results, (method, options)
    stock = a2x_retriever.retrieve("stock of a material in a plant", 5, method="chunkrag")
    assert {r.service for r in stock} <= {"API_PLANT_SRV", "API_COMPANYCODE_SRV", "API_MATERIAL_STOCK_SRV"}


# ---------------------------------------------------------------- CLI


def test_cli_json_single_query(demo_retriever):
    out = CliRunner().invoke(
        main,
        [
            "retrieve",
            "--store",
            str(demo_retriever.handle),
            CHAIN_QUERY,
            "-k",
            "5",
            "--json",
            "--method",
            "hybrid-paper",
        ],
    )
    assert out.exit_code == 0, out.output
    line = json.loads(out.output)
    keys = {"service", "entity_set", "score", "source", "via", "alternatives"}
    assert [set(r) for r in line["results"]] == [keys] * 5
    assert all(r["alternatives"] == [] for r in line["results"])  # hybrid-paper does not merge near-duplicates
    assert {"service": "DEMO_DELIVERY_BILLING_SRV", "entity_set": "A_BillingDocument"}.items() <= next(
        r for r in line["results"] if r["entity_set"] == "A_BillingDocument"
    ).items()


def test_cli_batch_jsonl(demo_retriever, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "query": CHAIN_QUERY, "gold": ["x"]})
        + "\n\n"
        + json.dumps({"id": 7, "query": "a dealer orders ten city bikes"})
        + "\n"
    )
    out = CliRunner().invoke(
        main,
        [
            "retrieve",
            "--store",
            str(demo_retriever.handle),
            "--queries",
            str(queries),
            "-k",
            "3",
            "--method",
            "hybrid-paper",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    lines = [json.loads(x) for x in out.output.splitlines()]
    assert [x["id"] for x in lines] == ["q1", 7]
    assert [r["entity_set"] for r in lines[0]["results"]] == names(
        demo_retriever.retrieve(CHAIN_QUERY, 3, method="hybrid-paper")
    )


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"id": "a", "query": "x"}\n{"id": "b" "query": "y"}\n', ":2: not valid JSON"),
        ('{"id": "a"}\n', ':1: "query" must be a non-empty string'),
        ('["a", "b"]\n', ":1: expected an object"),
    ],
)
def test_cli_bad_jsonl_names_the_line(demo_retriever, tmp_path, content, message):
    queries = tmp_path / "bad.jsonl"
    queries.write_text(content)
    out = CliRunner().invoke(
        main, ["retrieve", "--store", str(demo_retriever.handle), "--queries", str(queries), "--json"]
    )
    assert out.exit_code == 2
    assert message in out.output and "Traceback" not in out.output


def test_cli_table_and_context(demo_retriever):
    out = CliRunner().invoke(
        main,
        [
            "retrieve",
            "--store",
            str(demo_retriever.handle),
            CHAIN_QUERY,
            "-k",
            "3",
            "--context",
            "--method",
            "hybrid-paper",
        ],
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split() == ["rank", "score", "service", "entity_set", "source", "via"]
    assert "## 3. DEMO_DELIVERY_BILLING_SRV/A_BillingDocument" in out.output


def test_cli_needs_a_query_or_a_file(demo_retriever):
    out = CliRunner().invoke(main, ["retrieve", "--store", str(demo_retriever.handle)])
    assert out.exit_code == 2 and "either a QUERY or --queries" in out.output


def test_cli_refuses_an_empty_query(demo_retriever):
    for query in ("", "   \t "):
        out = CliRunner().invoke(main, ["retrieve", "--store", str(demo_retriever.handle), query])
        assert out.exit_code == 2, out.output
        assert out.output.strip() == "error: the query is empty: give the question to retrieve for"
    with pytest.raises(ProcessKGError, match="the query is empty"):
        demo_retriever.retrieve_many(["bikes", " "], 5)


def test_cli_batch_names_the_line_of_an_empty_query(demo_retriever, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": 1, "query": "bikes"}\n{"id": 2, "query": "  "}\n')
    out = CliRunner().invoke(main, ["retrieve", "--store", str(demo_retriever.handle), "--queries", str(queries)])
    assert out.exit_code == 2
    assert out.output.strip() == f'error: {queries}:2: "query" must be a non-empty string'


# ---------------------------------------------------------------- a damaged index


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    """A store of one small service with its index; tests damage copies of it."""
    store = tmp_path_factory.mktemp("retrieve") / "small"
    build_store(BuildOptions(odata=[ROOT / "tests" / "data" / "retrieve"], store=StoreLocation.parse(store)))
    index_store(tmp_path_factory, store)
    return store


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(
    "name, damage, what",
    [
        ("index.json", lambda p: p.write_text('{"format": 1, "items": '), "cannot be read (JSONDecodeError"),
        ("index.json", lambda p: p.write_bytes(b"\x80\x81 garbage"), "cannot be read (UnicodeDecodeError"),
        ("index.json", lambda p: p.write_text("[1, 2]"), "is not a JSON object"),
        (
            "index.json",
            lambda p: p.write_text('{"format": 1, "model": "m", "dim": 384, "items": {}}'),
            "lacks the items of each kind",
        ),
        ("set.npy", _truncate, "cannot be read (Failed to read all data"),
        ("set.npy", lambda p: p.write_bytes(b""), "cannot be read (No data left in file)"),
        ("set.hnsw", _truncate, "cannot be read (Index seems to be corrupted"),
        ("set.hnsw", Path.unlink, "is missing"),
    ],
)
def test_a_damaged_index_is_one_line_naming_store_file_and_command(small_store, tmp_path, name, damage, what):
    store = tmp_path / "store"
    shutil.copytree(small_store, store)
    index = StoreHandle.open(store).index_dir
    damage(index / name)
    out = CliRunner().invoke(main, ["retrieve", "--store", str(store), "sales orders"])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1 and "Traceback" not in out.output
    assert out.output.startswith(f"error: {store}: the retrieval index is damaged: {index / name} {what}")
    assert out.output.rstrip().endswith(f"rebuild it with `kg index --store {store}`")


def test_vectors_that_disagree_with_the_manifest_are_damage(small_store, tmp_path):
    import numpy as np

    store = tmp_path / "store"
    shutil.copytree(small_store, store)
    np.save(StoreHandle.open(store).index_dir / "set.npy", np.zeros((1, 384), dtype=np.float32))
    with pytest.raises(ProcessKGError, match=r"set\.npy holds \(1, 384\) vectors, not \(2, 384\)"):
        Retriever(StoreHandle.open(store))


# ---------------------------------------------------------------- typed context


def _result(demo_retriever: Retriever, name: str):
    row = next(i for i, s in enumerate(demo_retriever.sets) if s["name"] == name)
    return demo_retriever.result(row, 1.0)


def test_context_of_a_sales_order_is_complete(demo_retriever):
    text = render_set(demo_retriever.store, _result(demo_retriever, "A_SalesOrder"))
    assert (
        "path: /sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/A_SalesOrder; one record: A_SalesOrder('{SalesOrder}')" in text
    )
    # keys are not "required on create": SAP may number the order (the rule kg validate applies)
    assert "- SalesOrder: String(10), key\n" in text
    assert "to_Item -> A_SalesOrderItem (many)" in text
    assert "SalesOrderType from VL_SalesOrderType: " in text and 'OR "Standard Order"' in text
    assert "- Create sales order (Order to Cash, Sales) writes this" in text
    assert "before: Check customer credit uses DEMO_SALES_ORDER_SRV/A_Customer" in text
    assert "after: Create outbound delivery uses DEMO_DELIVERY_BILLING_SRV/A_OutbDeliveryHeader" in text


def test_context_says_when_codes_are_unknown_and_what_is_read_only(demo_retriever):
    text = render_set(demo_retriever.store, _result(demo_retriever, "A_GoodsMovement"))
    assert "- GoodsMovementType from VL_GoodsMovementType: codes unknown" in text
    assert "- CreatedByUser: String(12), read-only" in text
    assert "- GoodsMovementIsCancelled: Boolean, read-only" in text
    assert "entity set does not allow: update, delete" in text


def test_context_of_a_v4_entity_set(demo_retriever):
    text = render_set(demo_retriever.store, _result(demo_retriever, "PurchaseOrder"))
    assert "path: <DEMO_PROCUREMENT service root>/PurchaseOrder" in text
    assert "_PurchaseOrderNote" in text


def test_context_covers_every_result_and_is_compact(demo_retriever):
    results = demo_retriever.retrieve(CHAIN_QUERY, 5)
    text = render_context(demo_retriever.store, results)
    assert text.count("\n## ") + text.startswith("## ") == len(results)
    per_set = [demo_retriever.encoder.count_tokens(render_set(demo_retriever.store, r)) for r in results]
    assert max(per_set) < 900, per_set


def test_key_predicate_literals():
    keys = [{"name": "SalesOrder", "type": "Edm.String"}, {"name": "Item", "type": "Edm.Int32"}]
    assert key_predicate("A_Item", keys, "2.0") == "A_Item(SalesOrder='{SalesOrder}',Item={Item})"
    assert key_predicate("X", [{"name": "ID", "type": "Edm.Guid"}], "2.0") == "X(guid'{ID}')"
    assert key_predicate("X", [{"name": "ID", "type": "Edm.Guid"}], "4.0") == "X({ID})"
