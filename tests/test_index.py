"""The retrieval index: real all-MiniLM-L6-v2 (bundled, offline), real hnswlib, real Oxigraph.

Covers the model loading, the embedding cache (a rebuild encodes only changed texts), the
summaries (SAP abbreviations expanded with the metadata's own labels), the raw-metadata
chunks of the ChunkRAG baseline, HNSW recall against exact search, and ``kg index``.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from conftest import FIORI_SERVICES, demo_options, index_store, shared
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.retrieve import texts
from processkg.retrieve.index import (
    DEFAULT_MODEL,
    EmbeddingCache,
    Encoder,
    IndexNotFoundError,
    VectorIndex,
    build_index,
    bundled_model_dir,
    exact_search,
    load_index,
    model_id,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    enc = Encoder()
    assert enc.dim  # load the model once for the session
    return enc


@pytest.fixture(scope="module")
def demo_indexed(tmp_path_factory, demo_indexed_store, encoder) -> Path:
    """A copy of the session's demo with its index and metadata chunks (conftest.demo_indexed_store: the
    demo built, then indexed with ``odata=[data/demo/odata]``, as this module built it itself before):
    the tests below write its index again, so they get a store of their own."""
    store = tmp_path_factory.mktemp("embed") / "demo"
    shutil.copytree(demo_indexed_store, store, symlinks=True)
    return store


@pytest.fixture(scope="module")
def a2x_indexed(tmp_path_factory, a2x_store) -> Path:
    store = tmp_path_factory.mktemp("embed") / "a2x"
    shutil.copytree(a2x_store, store, symlinks=True)  # the session's A2X build (odata only), indexed here
    index_store(tmp_path_factory, store)
    return store


# ---------------------------------------------------------------- model


def test_default_model_is_the_bundled_package(encoder):
    assert (bundled_model_dir() / "model.safetensors").is_file()
    assert model_id(None) == model_id("all-MiniLM-L6-v2") == DEFAULT_MODEL
    vectors = encoder.encode(
        ["create the customer invoice", "billing document header", "purchase requisition approval"]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]  # invoice is nearer to billing


def test_a_missing_model_is_a_clear_error(tmp_path):
    from processkg.errors import ModelError

    with pytest.raises(ModelError, match="cannot load embedding model"):
        Encoder(str(tmp_path / "no-such-model")).encode(["x"])


# ---------------------------------------------------------------- cache


def test_shared_cache_survives_a_store_rebuild(demo_indexed, tmp_path_factory, tmp_path):
    store = tmp_path / "again"
    build_store(BuildOptions(store=StoreLocation.parse(store), **demo_options()))
    report = index_store(tmp_path_factory, store, odata=[DEMO / "odata"])
    assert report.encoded == 0 and report.counts == {"set": 23, "activity": 27, "chunk": 84}
    own = EmbeddingCache.load(store / "index")  # the index also keeps its own vectors
    assert len(own.vectors) == 134


def test_cache_encodes_only_new_texts(encoder, tmp_path):
    cache = EmbeddingCache()
    first = cache.embed(encoder, ["sales order", "outbound delivery"])
    assert cache.encoded == 2
    again = cache.embed(encoder, ["outbound delivery", "billing document"])
    assert cache.encoded == 3  # only "billing document" was new
    assert np.array_equal(first[1], again[0])
    cache.save(tmp_path, keep=set(cache.vectors))
    loaded = EmbeddingCache.load(tmp_path)
    loaded.embed(encoder, ["sales order", "billing document"])
    assert loaded.encoded == 0


def test_rebuild_reencodes_nothing_and_is_identical(demo_indexed):
    before = (demo_indexed / "index" / "index.json").read_bytes()
    vectors = np.load(demo_indexed / "index" / "set.npy")
    report = build_index(StoreLocation.parse(demo_indexed), odata=[DEMO / "odata"])
    assert report.encoded == 0 and report.cached == sum(report.counts.values())
    assert (demo_indexed / "index" / "index.json").read_bytes() == before
    assert np.array_equal(np.load(demo_indexed / "index" / "set.npy"), vectors)


def test_index_holds_every_entity_set_and_activity(demo_indexed):
    index = load_index(StoreHandle.open(demo_indexed))
    assert len(index.items["set"]) == 23 and len(index.items["activity"]) == 27
    assert index.vectors["set"].shape == (23, 384)
    names = {(s["service"], s["name"]) for s in index.items["set"]}
    assert ("DEMO_DELIVERY_BILLING_SRV", "A_BillingDocument") in names
    assert ("DEMO_PROCUREMENT", "PurchaseOrder") in names


def test_missing_index_is_a_clear_error(demo_store):
    with pytest.raises(IndexNotFoundError, match="kg index --store"):
        load_index(StoreHandle.open(demo_store))


# ---------------------------------------------------------------- summaries


def test_names_are_split_and_labels_used(demo_indexed):
    store = open_store(demo_indexed)
    items = {i.name: i for i in texts.set_items(store)}
    text = items["A_OutbDeliveryHeader"].text
    assert text.startswith("outbound delivery header (A_OutbDeliveryHeader).")
    assert "Service: demo delivery billing." in text
    assert "Key: Delivery (delivery document)." in text
    assert "Links to: outbound delivery item." in text


def test_sap_abbreviations_are_expanded_from_the_metadata(a2x_indexed):
    lex = texts.lexicon(open_store(a2x_indexed))
    assert lex.phrase("A_SlsPrcgCndnRecd") == "sales pricing condition record"
    assert lex.phrase("A_OutbDeliveryHeader") == "outbound delivery header"
    assert lex.phrase("API_PURCHASEORDER_PROCESS_SRV") == "purchase order process"
    assert lex.expand("Billg") == "billing" and lex.expand("Gds") == "goods"
    assert lex.expand("Order") == "order"  # a dictionary word is left alone


@pytest.mark.parametrize(
    "name, words",
    [
        ("SALESORDERSET", "sales order set"),
        ("VL_SH_RELIFNRCN", "value list sh relifnrcn"),
        ("X" * 400, "x" * 400),
    ],
)
def test_run_together_names_are_segmented_without_recursing(name, words):
    """Regression: an unsplittable run came back whole from ``segment`` and was segmented again,
    forever (RecursionError in ``kg build`` on the s4-fiori corpus)."""
    lex = texts.Lexicon(["SalesOrder", name], ["Sales Order"])
    assert lex.phrase(name) == words


def test_kg_build_indexes_a_service_with_run_together_names(tmp_path):
    """``kg build`` (index on by default) on one service with SALESORDERSET and VL_SH_RELIFNRCN."""
    from processkg.cli import main

    store = tmp_path / "store"
    result = CliRunner().invoke(
        main, ["build", "--odata", str(ROOT / "tests" / "data" / "retrieve"), "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    texts = {s["name"]: s["text"] for s in load_index(StoreHandle.open(store)).items["set"]}
    assert texts["SALESORDERSET"].startswith("sales order set (SALESORDERSET). Sales Order.")
    assert texts["VL_SH_RELIFNRCN"].startswith("value list sh relifnrcn (VL_SH_RELIFNRCN).")


#: Fiori services for the index of a store built without one: the session's ``fiori`` slice (V2 with
#: separate annotation files, both V4 services) and FAP_SUPPLIER_LIST_SRV, whose value-list set
#: VL_SH_RELIFNRCN once sent the set summaries into endless recursion. Indexing reads each service's
#: sets alike, so this slice shows what the whole corpus (63 services, over 3000 sets) showed, at a
#: fraction of the encoding time; the whole corpus's build itself stays covered by tests/test_audit.py.
FIORI_INDEXED = (*FIORI_SERVICES, "FAP_SUPPLIER_LIST_SRV")


@pytest.fixture(scope="module")
def fiori_plain(tmp_path_factory) -> Path:
    """The Fiori slice built without index, once for the module."""
    store = tmp_path_factory.mktemp("fiori-plain") / "store"
    build_store(
        BuildOptions(
            odata=[shared("odata", "s4-fiori", name) for name in FIORI_INDEXED], store=StoreLocation.parse(store)
        )
    )
    return store


@pytest.fixture(scope="module")
def fiori_indexed(tmp_path_factory, fiori_plain):
    """The Fiori slice, copied and indexed by ``build_index`` once for the module, its embeddings kept
    in a cache of its own for the re-index below."""
    tmp = tmp_path_factory.mktemp("fiori-indexed")
    shutil.copytree(fiori_plain, tmp / "store", symlinks=True)
    report = build_index(StoreLocation.parse(tmp / "store"), cache_dir=tmp / "cache", progress=None)
    return tmp, report


def test_fiori_services_build_with_their_index(fiori_indexed):
    tmp, report = fiori_indexed
    index = load_index(StoreHandle.open(tmp / "store"))
    names = {s["name"] for s in index.items["set"]}
    assert "VL_SH_RELIFNRCN" in names  # the set whose name recursed without end
    assert report.counts["set"] == len(index.items["set"]) == index.vectors["set"].shape[0] > 300


def test_kg_index_on_a_store_built_without_index(fiori_indexed, fiori_plain):
    tmp, _report = fiori_indexed
    store = tmp / "plain"
    shutil.copytree(fiori_plain, store, symlinks=True)  # the module's build of the slice without index
    assert not (store / "index").exists()
    cache = tmp / "cache"  # the first index's cache: nothing needs encoding again
    result = CliRunner().invoke(main, ["index", "--store", str(store), "--cache", str(cache)])
    assert result.exit_code == 0, result.output
    assert "(0 encoded," in result.output, result.output
    assert load_index(StoreHandle.open(store)).items["set"] == load_index(StoreHandle.open(tmp / "store")).items["set"]
    assert np.array_equal(
        load_index(StoreHandle.open(store)).vectors["set"], load_index(StoreHandle.open(tmp / "store")).vectors["set"]
    )


def test_activity_texts_carry_documentation_lane_and_process(demo_indexed):
    acts = {a.name: a.text for a in texts.activity_items(open_store(demo_indexed))}
    text = acts["Create billing document"]
    assert "customer invoice" in text and "Lane: Billing." in text and "Process: Order to Cash." in text


def test_chunks_map_back_to_the_entity_sets_they_describe(demo_indexed):
    index = load_index(StoreHandle.open(demo_indexed))
    chunks = index.items["chunk"]
    assert chunks, "the demo metadata was given, so chunks exist"
    covered = {iri for c in chunks for iri in c["sets"]}
    assert covered == {s["iri"] for s in index.items["set"]}
    text = (DEMO / "odata" / "DEMO_SALES_ORDER_SRV.edmx").read_text(encoding="utf-8")
    start = text.index('<EntityType Name="A_SalesOrderType"')
    hit = [c for c in chunks if c["file"].endswith("DEMO_SALES_ORDER_SRV.edmx") and c["start"] <= start < c["end"]]
    assert [i.rsplit("/", 1)[-1] for i in hit[0]["sets"]] == ["A_SalesOrder"]


def test_chunk_spans_cover_the_text_and_end_after_tags():
    text = "<a>" + "<b x='1'/>" * 300 + "</a>"
    spans = texts.chunk_spans(text, 200)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert all(text[e - 1] == ">" for _, e in spans)


# ---------------------------------------------------------------- HNSW


def test_hnsw_recall_against_exact_search(a2x_indexed, encoder):
    loaded = load_index(StoreHandle.open(a2x_indexed))
    vectors, index = loaded.vectors["set"], loaded.hnsw["set"]  # the persisted index, reloaded
    queries = encoder.encode(
        [
            "create a sales order for a customer",
            "post goods issue for an outbound delivery",
            "supplier invoice payment block",
            "bill of material components",
            "cost centre master data",
            "maintenance order operations",
            "purchase requisition release",
            "business partner address",
            "product plant data",
            "billing document items",
            "sales quotation validity",
            "material stock in a storage location",
            "journal entry line items",
            "equipment classification",
            "customer return reason",
            "pricing condition scales",
            "inbound delivery from supplier",
            "production order confirmation",
            "bank master data",
            "credit memo request items",
        ]
    )
    hits = total = 0
    for q in queries:
        approx, _ = index.search(q, 10)
        exact, _ = exact_search(vectors, q, 10)
        hits += len(set(approx.tolist()) & set(exact.tolist()))
        total += 10
    assert len(vectors) == 411
    assert hits / total >= 0.95, f"HNSW recall@10 {hits / total:.3f}"


def test_hnsw_is_deterministic(encoder):
    vectors = encoder.encode([f"entity set number {i} for orders and deliveries" for i in range(60)])
    a = VectorIndex.build(vectors).search(vectors[7], 5)
    b = VectorIndex.build(vectors).search(vectors[7], 5)
    assert a[0].tolist() == b[0].tolist() and a[0][0] == 7


# ---------------------------------------------------------------- CLI


def test_kg_index_command(demo_indexed):
    result = CliRunner().invoke(main, ["index", "--store", str(demo_indexed), "--odata", str(DEMO / "odata")])
    assert result.exit_code == 0, result.output
    assert "indexed 23 entity sets, 27 activities, 84 metadata chunks" in result.output
    assert "(0 encoded, 134 from cache)" in result.output  # nothing changed, nothing re-encoded
    manifest = json.loads((demo_indexed / "index" / "index.json").read_text())
    assert manifest["model"] == DEFAULT_MODEL and len(manifest["items"]["chunk"]) == 84


def test_encoding_reports_progress_to_a_callback(demo_indexed, tmp_path):
    calls = []
    report = build_index(
        StoreLocation.parse(demo_indexed),
        cache_dir=tmp_path / "empty-cache",
        progress=lambda d, t: calls.append((d, t)),
    )
    total = report.encoded
    assert total > 0 and calls[0] == (0, total) and calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and {t for _, t in calls} == {total}


def test_kg_index_shows_progress_on_a_terminal_only(demo_indexed, tmp_path, monkeypatch):
    """Encoding a large corpus ran minutes without a sign of life; on a terminal it now reports. The
    command runs in this process with its standard error on a real pseudo-terminal (a ``kg index``
    process loaded torch and the embedding model again, 8 s of CPU, for the same check)."""
    import pty

    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", encoding="utf-8") as terminal:  # closes the follower
            monkeypatch.setattr(sys, "stderr", terminal)
            main(["index", "--store", str(demo_indexed), "--cache", str(tmp_path / "c1")], standalone_mode=False)
            monkeypatch.undo()
        err = _read_all(leader)
    finally:
        os.close(leader)
    assert "index: encoded 0 of 50 texts" in err and "index: encoded 50 of 50 texts" in err
    quiet = CliRunner().invoke(main, ["index", "--store", str(demo_indexed), "--cache", str(tmp_path / "c2")])
    assert quiet.exit_code == 0 and "index: encoded" not in quiet.output


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_kg_index_without_store_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["index", "--store", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert "no processkg store here" in result.output
