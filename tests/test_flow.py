"""Document flow inferred from OData metadata alone (sources/odata/flow.py), its lift into the graph
(kg:inferredNext, kg:InferredFlow) and the retrieval signal that walks it (retrieve-flow.rq).

Every input is a real SAP A2X document from ../shared/data/odata/s4-a2x."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import shared, values
from processkg.graph.handle import StoreHandle, open_store
from processkg.graph.store import load_query, select
from processkg.retrieve.retriever import RetrievalSettings, Retriever, routed_results
from processkg.retrieve.routing import KINDS, QUERY_FEATURES, Linear, RoutedModel
from processkg.retrieve.signals import SIGNALS
from processkg.sources.odata import csdl, edm, flow
from processkg.sources.odata.lift_service import ServiceLifter
from processkg.vocab import KGT, RDF_TYPE


def _sets(*names: str | Path) -> tuple[list[flow.KeyedSet], list]:
    """The keyed sets of the named A2X services, and their lifted triples."""
    sets, triples = [], []
    for name in names:
        path = name if isinstance(name, Path) else shared("odata", "s4-a2x", f"{name}.edmx")
        doc = csdl.read_document(path, path.name)
        lifter = ServiceLifter(edm.resolve(doc, []), doc.name, {})
        triples += lifter.lift()
        sets += flow.keyed_sets(doc, doc.name, lifter.set_iris, lifter.inherited_prop_iri)
    return sets, triples


def _copy(name: str, suffix: str, folder: Path) -> Path:
    """An A2X document as another system would serve it: its file stem and schema namespaces suffixed
    (how benchmarks/scale_corpus.py copies a corpus)."""
    text = shared("odata", "s4-a2x", f"{name}.edmx").read_text(encoding="utf-8")
    names = sorted({name, *re.findall(r'Namespace="([^"]+)"', text)}, key=len, reverse=True)
    text = re.sub("|".join(re.escape(n) for n in names), lambda m: m.group(0) + suffix, text)
    path = folder / f"{name}{suffix}.edmx"
    path.write_text(text, encoding="utf-8")
    return path


def _edges(*names: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """{(pred, follow): [(carrier, key property)]} over the named services."""
    sets, _ = _sets(*names)
    return {(e.pred.name, e.follow.name): [(c.name, k.name) for c, k in e.evidence] for e in flow.infer(sets)}


def test_a_property_with_the_key_name_carries_the_purchase_order_to_the_supplier_invoice():
    edges = _edges("API_PURCHASEORDER_PROCESS_SRV", "API_SUPPLIERINVOICE_PROCESS")
    assert edges[("A_PurchaseOrderItem", "A_SuplrInvcItemPurOrdRef")] == [
        ("PurchaseOrder", "PurchaseOrder"),
        ("PurchaseOrderItem", "PurchaseOrderItem"),
    ]
    assert edges[("A_PurchaseOrder", "A_SuplrInvcItemPurOrdRef")] == [("PurchaseOrder", "PurchaseOrder")]
    # the direction is predecessor -> follow-on: the invoice never precedes the order
    assert not any(p.startswith("A_Suplr") and f.startswith("A_PurchaseOrder") for p, f in edges)


def test_reference_sd_document_on_the_delivery_item_carries_the_sales_order_item():
    """ReferenceSDDocument has no key's name: it is matched through the label "SD Document" that a
    property named SalesOrder has in another service of the build (the purchase order's account
    assignment); without that service there is no such label, and no edge."""
    assert ("A_SalesOrderItem", "A_OutbDeliveryItem") not in _edges("API_SALES_ORDER_SRV", "API_OUTBOUND_DELIVERY_SRV")
    edges = _edges("API_SALES_ORDER_SRV", "API_OUTBOUND_DELIVERY_SRV", "API_PURCHASEORDER_PROCESS_SRV")
    assert edges[("A_SalesOrderItem", "A_OutbDeliveryItem")] == [
        ("ReferenceSDDocument", "SalesOrder"),
        ("ReferenceSDDocumentItem", "SalesOrderItem"),
    ]
    assert edges[("A_SalesOrder", "A_OutbDeliveryItem")] == [("ReferenceSDDocument", "SalesOrder")]


def test_the_sales_order_follows_the_quotation():
    edges = _edges("API_SALES_QUOTATION_SRV", "API_SALES_ORDER_SRV")
    assert edges[("A_SalesQuotation", "A_SalesOrder")] == [("ReferenceSDDocument", "SalesQuotation")]


def test_properties_that_only_look_like_keys_give_no_flow():
    """Plant on a purchase order item carries the key of A_Plant, but a plant is master data (no items),
    never a predecessor; A_SlsOrdPaymentPlanItemDetails is keyed (SalesOrder, PaymentPlanItem), and a
    SalesOrderItem property does not carry PaymentPlanItem; an item never follows its own header."""
    sets, _ = _sets("API_SALES_ORDER_SRV", "API_PLANT_SRV", "API_PURCHASEORDER_PROCESS_SRV")
    names = {s.name for s in sets}
    assert {"A_Plant", "A_PurchaseOrderItem", "A_SlsOrdPaymentPlanItemDetails"} <= names
    assert any(f.name == "Plant" for s in sets if s.name == "A_PurchaseOrderItem" for f in s.others)
    edges = {(e.pred.name, e.follow.name) for e in flow.infer(sets)}
    assert not [e for e in edges if e[0] == "A_Plant"]
    assert not [e for e in edges if e[0] == "A_SlsOrdPaymentPlanItemDetails"]
    assert ("A_SalesOrder", "A_SalesOrderItem") not in edges
    assert ("A_PurchaseOrder", "A_PurchaseOrderItem") not in edges


def test_a_follow_on_in_one_system_follows_the_copy_of_its_predecessor_in_the_same_system(tmp_path):
    """Two systems serve the same purchase order and supplier invoice services (the second with its
    namespaces suffixed _ZAB1): each invoice follows the order of its own system only, not both."""
    sets, _ = _sets(
        "API_PURCHASEORDER_PROCESS_SRV",
        "API_SUPPLIERINVOICE_PROCESS",
        _copy("API_PURCHASEORDER_PROCESS_SRV", "_ZAB1", tmp_path),
        _copy("API_SUPPLIERINVOICE_PROCESS", "_ZAB1", tmp_path),
    )
    pairs = {(e.pred.service, e.pred.name, e.follow.service, e.follow.name) for e in flow.infer(sets)}
    assert (
        "API_PURCHASEORDER_PROCESS_SRV",
        "A_PurchaseOrderItem",
        "API_SUPPLIERINVOICE_PROCESS",
        "A_SuplrInvcItemPurOrdRef",
    ) in pairs
    assert (
        "API_PURCHASEORDER_PROCESS_SRV_ZAB1",
        "A_PurchaseOrderItem",
        "API_SUPPLIERINVOICE_PROCESS_ZAB1",
        "A_SuplrInvcItemPurOrdRef",
    ) in pairs
    crossing = [p for p in pairs if p[0].endswith("_ZAB1") != p[2].endswith("_ZAB1")]
    assert crossing == []
    # one system alone has as many edges as each of the two
    alone = _edges("API_PURCHASEORDER_PROCESS_SRV", "API_SUPPLIERINVOICE_PROCESS")
    assert len(pairs) == 2 * len(alone)


def test_service_names_are_closest_to_their_own_system():
    assert flow.distance("API_X_SRV", "API_X_SRV") == 0
    assert flow.distance("API_X_SRV", "API_Y_SRV") < flow.distance("API_X_SRV", "API_Y_SRV_ZAB3")
    assert flow.distance("API_X_SRV_ZAB3", "API_Y_SRV_ZAB3") < flow.distance("API_X_SRV_ZAB3", "API_Y_SRV")
    assert flow.distance("API_X_SRV_ZAB3", "API_Y_SRV_ZAB3") < flow.distance("API_X_SRV_ZAB3", "API_Y_SRV_ZCD4")
    assert flow.distance("AB", "ABAB") == flow.distance("ABAB", "AB") == 2  # prefix and suffix overlap


def test_the_lift_names_the_evidence_with_the_lifted_property_iris():
    sets, triples = _sets("API_SALES_ORDER_SRV", "API_OUTBOUND_DELIVERY_SRV", "API_PURCHASEORDER_PROCESS_SRV")
    properties = {t.subject for t in triples if t.predicate == RDF_TYPE and t.object == KGT.Property}
    edge = next(
        e for e in flow.infer(sets) if (e.pred.name, e.follow.name) == ("A_SalesOrderItem", "A_OutbDeliveryItem")
    )
    lifted = flow.lift([edge])
    assert (edge.pred.iri, edge.follow.iri) in {
        (t.subject, t.object) for t in lifted if t.predicate == KGT.inferredNext
    }
    node = next(t.subject for t in lifted if t.predicate == RDF_TYPE and t.object == KGT.InferredFlow)
    carriers = {t.object for t in lifted if t.subject == node and t.predicate == KGT.carrierProperty}
    keys = {t.object for t in lifted if t.subject == node and t.predicate == KGT.carriedKey}
    assert len(carriers) == 2 and carriers <= properties
    assert len(keys) == 2 and keys <= properties
    assert flow.lift([edge]) == lifted  # deterministic


# ---------------------------------------------------------------- in a built store, in retrieval


@pytest.fixture(scope="module")
def retriever(sap_store) -> Retriever:
    return Retriever(StoreHandle.open(sap_store))


def _row(r: Retriever, service: str, name: str) -> int:
    return next(i for i, s in enumerate(r.sets) if s["service"] == service and s["name"] == name)


def test_the_build_lifts_the_flow_and_retrieval_lifts_it_to_the_documents_headers(sap_store, retriever):
    store = open_store(sap_store)
    _, rows = select(store, load_query("retrieve-flow"))
    assert rows
    order = _row(retriever, "API_SALES_ORDER_SRV", "A_SalesOrder")
    delivery = _row(retriever, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader")
    purchase = _row(retriever, "API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrder")
    invoice = _row(retriever, "API_SUPPLIERINVOICE_PROCESS", "A_SupplierInvoice")
    # the edges are between the items; the headers are reached through their navigations to them
    assert delivery in retriever.flows[order]
    assert invoice in retriever.flows[purchase]
    assert purchase not in retriever.flows.get(invoice, [])
    # a quotation's partners navigate to it (to-one) but are part of it, not the document: no lift
    partner = _row(retriever, "API_SALES_QUOTATION_SRV", "A_SalesQuotationPartner")
    quotation = _row(retriever, "API_SALES_QUOTATION_SRV", "A_SalesQuotation")
    sales_order = _row(retriever, "API_SALES_ORDER_SRV", "A_SalesOrder")
    assert sales_order in retriever.flows[quotation]
    assert partner not in retriever.flows
    assert not any(partner in follows for follows in retriever.flows.values())
    assert len(rows) < 4 * 259  # header and item at both ends at most, where the old lift gave 4,147


def test_the_flow_signal_follows_the_set_that_matches_the_query(retriever):
    query = "the sales order for the customer has been entered"
    vector = retriever.embed([query])[0]
    sig = retriever.signals(query, vector)
    order = _row(retriever, "API_SALES_ORDER_SRV", "A_SalesOrder")
    delivery = _row(retriever, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader")
    column = sig.features[:, SIGNALS.index("flow")]
    assert column[delivery] >= sig.set_sims[order] - 1e-6
    assert int(sig.paths.flow[delivery]) >= 0
    assert column[order] == -1.0 or int(sig.paths.flow[order]) != order


def test_a_model_that_weighs_the_flow_returns_follow_on_documents_as_inferred(retriever):
    """A ranking model over flow_chain alone (both ends of an inferred edge match the query): the
    goods left the warehouse (the delivery), now bill them (the billing document follows it)."""
    ranker = Linear(("flow_chain",), np.zeros(1), np.ones(1), np.ones((1, 1)), np.zeros(1))
    n = len(QUERY_FEATURES)
    classifier = Linear(QUERY_FEATURES, np.zeros(n), np.ones(n), np.zeros((len(KINDS), n)), np.zeros(len(KINDS)))
    model = RoutedModel(classifier, dict.fromkeys(KINDS, ranker), False, {})
    query = "the outbound delivery has left the warehouse, now create the billing document"
    results = routed_results(retriever, model, query, retriever.embed([query])[0], 5, RetrievalSettings())
    assert results and all(r.source == "inferred" for r in results)
    assert any("Billing" in r.entity_set for r in results)
    assert all(r.via for r in results)


def test_the_a2x_build_has_the_number_of_flow_edges_the_ontology_docs_state(sap_store):
    """docs/ontology.md: "On the 45 A2X services this gives 259 edges"."""
    edges = values(open_store(sap_store), "SELECT (COUNT(*) AS ?n) WHERE { ?a kg:inferredNext ?b }")
    assert edges == [259]
    assert "this gives 259 edges" in (Path(__file__).resolve().parents[1] / "docs" / "ontology.md").read_text()
