"""Flow mined from recordings and event logs (``kg build --events``, sources/events.py): the readers of
recorded calls, XES and OCEL 2.0 (JSON and XML), the directly-follows edges with their counts in a
real build (kg:minedNext, kg:MinedFlow), the retrieval signal that walks them, and one line per bad
input.

The logs under tests/data/events are written by hand after the published schemas (IEEE 1849 XES;
OCEL 2.0 JSON and XML); the services are real SAP A2X documents from ../shared/data/odata/s4-a2x."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import graph_of, index_store, shared
from processkg.build.pipeline import BuildOptions, build_store
from processkg.errors import ProcessKGError
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.graph.store import load_query, select
from processkg.retrieve.retriever import RetrievalSettings, Retriever, routed_results
from processkg.retrieve.routing import KINDS, QUERY_FEATURES, Linear, RoutedModel
from processkg.retrieve.signals import SIGNALS
from processkg.sources.events import read_events

EVENTS = Path(__file__).parent / "data" / "events"
GOOD = EVENTS / "good"
SERVICES = (
    "API_SALES_ORDER_SRV",
    "API_SALES_QUOTATION_SRV",
    "CE_SALESORDER_0001",
    "API_OUTBOUND_DELIVERY_SRV",
    "API_BILLING_DOCUMENT_SRV",
    "API_PURCHASEORDER_PROCESS_SRV",
    "API_MATERIAL_DOCUMENT_SRV",
    "API_SUPPLIERINVOICE_PROCESS",
)
KG = "https://w3id.org/processkg/ontology#"

#: (predecessor, follow-on) -> (kg:followCount, kg:caseCount, kg:sourceFile values), worked out by hand
#: from the five files under good/ (see each file's comments and test_the_readers_...).
EXPECTED = {
    ("API_SALES_QUOTATION_SRV/A_SalesQuotation", "API_SALES_ORDER_SRV/A_SalesOrder"): (2, 1, ["good/recording.jsonl"]),
    ("API_SALES_ORDER_SRV/A_SalesOrder", "CE_SALESORDER_0001/SalesOrder"): (1, 1, ["good/recording.jsonl"]),
    ("CE_SALESORDER_0001/SalesOrder", "API_SALES_QUOTATION_SRV/A_SalesQuotation"): (1, 1, ["good/recording.jsonl"]),
    ("API_SALES_ORDER_SRV/A_SalesOrder", "API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader"): (2, 2, ["good/log.xes"]),
    ("API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader", "API_BILLING_DOCUMENT_SRV/A_BillingDocument"): (
        2,
        2,
        ["good/log.xes"],
    ),
    ("API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder", "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentHeader"): (
        4,
        4,
        ["good/log.jsonocel", "good/log.xmlocel"],
    ),
    ("API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentHeader", "API_SUPPLIERINVOICE_PROCESS/A_SupplierInvoice"): (
        2,
        2,
        ["good/log.jsonocel", "good/log.xmlocel"],
    ),
}


def _odata() -> list[Path | str]:
    return [shared("odata", "s4-a2x", f"{name}.edmx") for name in SERVICES]


# ---------------------------------------------------------------- the readers


def test_the_readers_give_each_case_its_writes_in_order():
    events = read_events([GOOD])
    by_name = {c.name: [s.target or s.activity for s in c.steps] for c in events.cases}
    # the recording: one case; GET and the refused POST (400) are no writes; no status is a write
    assert by_name["good/recording.jsonl"] == [
        "/sap/opu/odata/sap/API_SALES_QUOTATION_SRV/A_SalesQuotation",
        "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder",
        "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder('0000000021')",
        "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder('0000000021')/to_Item",
        "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/api_salesorder/0001/SalesOrder",
        "/sap/opu/odata/sap/API_SALES_QUOTATION_SRV/A_SalesQuotation",
        "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder('0000000022')",
    ]
    # XES: the GET event is left out; trace 2 is sorted by time:timestamp, not file order
    assert by_name["case-1"] == [
        "API_SALES_ORDER_SRV/A_SalesOrder",
        "/sap/opu/odata/sap/API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader",
        "API_BILLING_DOCUMENT_SRV/A_BillingDocument",
    ]
    assert by_name["case-2"] == [
        "Create Sales Order",
        "Check credit",
        "Create Outbound Delivery",
        "Create Billing Document",
    ]
    # OCEL 2.0: one case per object, its events by time (e2 comes before e3 although later in the file)
    assert by_name["good/log.jsonocel: object po1"] == [
        "Create Purchase Order",
        "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentHeader",
        "Post Supplier Invoice",
    ]
    assert by_name["good/log.jsonocel: object po2"] == ["Create Purchase Order", "Post Goods Receipt"]
    assert by_name["good/log.jsonocel: object m1"] == [
        "Create Purchase Order",
        "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentHeader",
    ]
    assert by_name["good/log.xmlocel: object po9"] == [
        "Create Purchase Order",
        "Post Goods Receipt",
        "/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS/A_SupplierInvoice",
    ]
    assert events.activities["Post Goods Receipt"] == "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentHeader"
    assert len(events.cases) == 7


def test_a_recording_whose_lines_name_their_case_gives_one_case_per_name(tmp_path):
    lines = [
        '{"method": "POST", "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder", "status": 201, "case": "t1"}',
        '{"method": "POST", "url": "/sap/opu/odata/sap/API_SALES_QUOTATION_SRV/A_SalesQuotation", "status": 201, "case": "t2"}',
        '{"method": "POST", "url": "/sap/opu/odata/sap/API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader", "case": "t1"}',
    ]
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cases = read_events([tmp_path / "calls.jsonl"]).cases
    assert [(c.name, len(c.steps)) for c in cases] == [("t1", 2), ("t2", 1)]


# ---------------------------------------------------------------- in a real build


@pytest.fixture(scope="module")
def mined_store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mined")
    store = StoreLocation(path=folder / "store")
    report = build_store(BuildOptions(odata=_odata(), events=[GOOD], store=store))
    assert report.mined == {"cases": 7, "writes": 22, "unmapped": 1, "unresolved": 1, "edges": 7}
    index_store(tmp_path_factory, store)
    return folder / "store"


def _name(iri: str) -> str:
    """SERVICE/EntitySet of an entity-set IRI (``.../odata/SERVICE/set/NAME``)."""
    service, _set, name = iri.rsplit("/", 3)[-3:]
    return f"{service}/{name}"


def test_the_build_lifts_directly_follows_of_the_writes_with_counts(mined_store):
    store = open_store(mined_store)
    query = f"""PREFIX kg: <{KG}>
        SELECT ?a ?b ?n ?c ?f WHERE {{
          ?a kg:minedNext ?b .
          ?m a kg:MinedFlow ; kg:minedFrom ?a ; kg:minedTo ?b ; kg:followCount ?n ; kg:caseCount ?c ; kg:sourceFile ?f .
        }}"""
    found: dict[tuple[str, str], tuple[int, int, list[str]]] = {}
    for a, b, n, c, f in select(store, query)[1]:
        key = (_name(a.value), _name(b.value))
        files = found.get(key, (0, 0, []))[2]
        found[key] = (int(n.value), int(c.value), sorted([*files, f.value]))
    assert found == EXPECTED
    # a set never follows itself (the PATCH and MERGE of a sales order after its POST)
    assert all(a != b for a, b in found)


def test_without_events_the_build_has_no_mined_flow(sap_store):
    store = open_store(sap_store)
    assert select(store, f"PREFIX kg: <{KG}> SELECT * WHERE {{ ?a kg:minedNext ?b }}")[1] == []
    assert select(store, load_query("retrieve-mined"))[1] == []
    assert len(Retriever(StoreHandle.open(sap_store)).edges("mined")) == 0


@pytest.fixture(scope="module")
def retriever(mined_store) -> Retriever:
    return Retriever(StoreHandle.open(mined_store))


def _row(r: Retriever, service: str, name: str) -> int:
    return next(i for i, s in enumerate(r.sets) if s["service"] == service and s["name"] == name)


def test_the_mined_signal_follows_the_set_that_matches_the_query(retriever):
    query = "the purchase order has been created"
    sig = retriever.signals(query, retriever.embed([query])[0])
    order = _row(retriever, "API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrder")
    receipt = _row(retriever, "API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentHeader")
    invoice = _row(retriever, "API_SUPPLIERINVOICE_PROCESS", "A_SupplierInvoice")
    mined = sig.features[:, SIGNALS.index("mined")]
    assert int(sig.paths.mined[receipt]) == order
    assert mined[receipt] == pytest.approx(sig.set_sims[order])
    assert int(sig.paths.mined[invoice]) == receipt  # the invoice follows the receipt, not the order
    assert mined[order] == -1.0  # nothing written before a purchase order in these logs


def test_a_model_that_weighs_the_mined_flow_returns_follow_ons_as_mined(retriever):
    ranker = Linear(("mined_chain",), np.zeros(1), np.ones(1), np.ones((1, 1)), np.zeros(1))
    n = len(QUERY_FEATURES)
    classifier = Linear(QUERY_FEATURES, np.zeros(n), np.ones(n), np.zeros((len(KINDS), n)), np.zeros(len(KINDS)))
    model = RoutedModel(classifier, dict.fromkeys(KINDS, ranker), False, {})
    query = "goods receipt posted in the material document, now the supplier invoice"
    results = routed_results(retriever, model, query, retriever.embed([query])[0], 5, RetrievalSettings())
    assert results and all(r.source == "mined" for r in results)
    assert results[0].entity_set == "A_SupplierInvoice"
    assert results[0].via == ("A_MaterialDocumentHeader",)


# ---------------------------------------------------------------- one line per bad input

INVALID = {
    "bad-header.csv": "bad-header.csv:1: an activity table starts with the header activity,path",
    "bad-time.xes": "bad-time.xes:4: time 'the fifth of January' is not an ISO 8601 date and time",
    "malformed.xes": "malformed.xes:6:13: malformed XML: Opening and ending tag mismatch: string line 5 and event",
    "no-activity.xes": "no-activity.xes:8: event 2 of trace 1 has no concept:name (its activity)",
    "no-events.jsonocel": 'no-events.jsonocel: not an OCEL 2.0 JSON log: it needs "objects" and "events" lists',
    "no-id.xmlocel": "no-id.xmlocel:10: an <event> needs id, type and time",
    "no-time.jsonocel": 'no-time.jsonocel: events[1] needs "id", "type" and "time" strings',
    "no-url.jsonl": 'no-url.jsonl:2: a recorded call needs "method" and "url" strings',
    "not-a-log.xes": "not-a-log.xes:2: not an XES log: the root element is <trace>, not <log>",
    "not-json.jsonl": "not-json.jsonl:1: not valid JSON",
    "not-json.jsonocel": "not-json.jsonocel: not an OCEL 2.0 JSON log: Expecting value",
    "one-field.csv": "one-field.csv:2: expected two non-empty fields: activity,path",
    "text-status.jsonl": "text-status.jsonl:1: \"status\" is '201'; expected an HTTP status number",
    "twice.csv": "twice.csv:3: activity 'Create Sales Order' is mapped twice (also on twice.csv:2)",
    "unknown-object.jsonocel": "unknown-object.jsonocel: events[1]: event e2 relates to object 'po2', which the log does not declare",
    "unknown-service.xes": "unknown-service.xes:5: 'API_NO_SUCH_SRV/A_SalesOrder' names no service of this build",
    "unknown-set.jsonl": "unknown-set.jsonl:1: '/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrdr': service "
    "API_SALES_ORDER_SRV has no entity set or function import A_SalesOrdr",
}


def test_every_invalid_file_has_an_expected_message():
    assert sorted(INVALID) == sorted(p.name for p in (EVENTS / "invalid").iterdir())


@pytest.mark.parametrize("name", sorted(INVALID))
def test_a_bad_input_stops_the_build_with_one_line_naming_file_and_record(name, tmp_path):
    options = BuildOptions(
        odata=[shared("odata", "s4-a2x", "API_SALES_ORDER_SRV.edmx")],
        events=[EVENTS / "invalid" / name],
        out=tmp_path / "graph.ttl",
    )
    with pytest.raises(ProcessKGError) as raised:
        build_store(options)
    message = str(raised.value)
    assert message.startswith(INVALID[name])
    assert "\n" not in message


def test_operation_imports_write_their_entity_set_and_the_rest_is_left_out(tmp_path):
    """A V2 function import with an EntitySet (ReleaseVersionBOM of the BOM service) writes that set; one
    without (releaseApprovalRequest of the sales order service), a $batch and a navigation are left out
    and counted, and the writes around them follow each other."""
    root = "/sap/opu/odata/sap"
    calls = [
        ("POST", f"{root}/API_SALES_ORDER_SRV/A_SalesOrder"),
        ("POST", f"{root}/API_SALES_ORDER_SRV/releaseApprovalRequest?SalesOrder='1'"),
        ("POST", f"{root}/API_SALES_ORDER_SRV/$batch"),
        ("POST", f"{root}/API_BILL_OF_MATERIAL_SRV/ReleaseVersionBOM?BillOfMaterial='1'"),
        ("POST", f"{root}/API_BILL_OF_MATERIAL_SRV/MaterialBOM(BillOfMaterial='1')/to_BillOfMaterialItem"),
    ]
    lines = [f'{{"method": "{m}", "url": "{u}", "status": 200}}' for m, u in calls]
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = build_store(
        BuildOptions(
            odata=[shared("odata", "s4-a2x", f"{n}.edmx") for n in ("API_SALES_ORDER_SRV", "API_BILL_OF_MATERIAL_SRV")],
            events=[tmp_path / "calls.jsonl"],
            out=tmp_path / "graph.ttl",
        )
    )
    assert report.mined == {"cases": 1, "writes": 2, "unmapped": 0, "unresolved": 3, "edges": 1}
    store = graph_of((tmp_path / "graph.ttl").read_bytes())
    found = [
        (_name(r["a"].value), _name(r["b"].value))
        for r in store.query(f"PREFIX kg: <{KG}> SELECT ?a ?b WHERE {{ ?a kg:minedNext ?b }}")
    ]
    assert found == [("API_SALES_ORDER_SRV/A_SalesOrder", "API_BILL_OF_MATERIAL_SRV/MaterialBOM")]
