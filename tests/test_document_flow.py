"""The curated document flow (data/sap/flow, kg build --flow; issue 21 §3) in the graph, the tools and kg serve.

The reader refuses each broken CSV of tests/invalid/flow-* with one line naming file and row; every
row of the SAP file resolves against the A2X services of the task store (``tasks_built``), is linked
to the process steps that write its documents, and shows in the typed context, ``describe`` and
``next_steps``. kg serve (the real server over HTTP, on the task store) refuses each kind of flow
violation with a repair hint, accepts order to cash in order (order, delivery, goods issue, billing)
and refuses it out of order, and every record it generates passes its own checks.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from conftest import A2X_ORDER, INVALID, ROOT
from processkg.build.pipeline import BuildOptions, build_store
from processkg.errors import DocumentFlowError
from processkg.graph.handle import StoreHandle
from processkg.graph.store import records
from processkg.retrieve.context import document_flow, render_set
from processkg.retrieve.retriever import Result
from processkg.sources.document_flow import read_flows
from processkg.tools.toolbox import Toolbox

SAP_FLOW = ROOT / "data" / "sap" / "flow"
DATA = ROOT / "tests" / "data"
SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
OD = "/sap/opu/odata/sap/API_OUTBOUND_DELIVERY_SRV/"
MD = "/sap/opu/odata/sap/API_MATERIAL_DOCUMENT_SRV/"
CE = "/sap/opu/odata4/sap/api_billingdocument/srvd_a2x/sap/api_billingdocument/0001/"
CREATE_BILLING = CE + "BillingDocument/com.sap.gateway.srvd_a2x.api_billingdocument.v0001.CreateFromSDDocument"
#: The same header in the reference organisation's German sales area, for customer 1.
ORDER_1010 = {k: v for k, v in A2X_ORDER.items() if k != "to_Item"} | {
    "SalesOrganization": "1010",
    "SoldToParty": "0000000001",
}


# ---------------------------------------------------------------- the reader
@pytest.mark.parametrize(
    ("folder", "message"),
    [
        ("flow-bad-carrier", r"carrier 'ReferenceSDDocument' is not FollowOnProperty=PredecessorKey"),
        ("flow-bad-required", r"required is 'maybe'; expected yes or no"),
        ("flow-empty-source", r"row has an empty source"),
        ("flow-bad-set", r"predecessor is 'A_OutbDeliveryHeader'; expected SERVICE/EntitySet"),
        ("flow-bad-precondition", r"precondition 'OverallGoodsMovementStatus' is not Property=Value"),
        ("flow-bad-quantity", r"quantity 'QuantityInEntryUnit>OrderQuantity' is not FollowOnQuantity<=Predecessor"),
        (
            "flow-repeated",
            r"API_SALES_ORDER_SRV/A_SalesOrderItem -> API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryItem repeats flow-repeated/flow\.csv:2",
        ),
    ],
)
def test_a_broken_row_stops_the_build_with_one_line_naming_file_and_row(tmp_path, folder, message):
    with pytest.raises(DocumentFlowError, match=rf"{folder}/flow\.csv:3: {message}") as caught:
        build_store(BuildOptions(flow=INVALID / folder, out=tmp_path / "g.ttl"))
    assert "\n" not in str(caught.value)


def test_the_sap_file_reads_every_row_with_its_source():
    rows = read_flows(SAP_FLOW)
    assert len(rows) >= 14
    assert all(r.source and r.file == "flow/flow.csv" for r in rows)
    delivery = next(r for r in rows if r.follow_on.entity_set == "A_OutbDeliveryItem")
    assert delivery.carriers == (("ReferenceSDDocument", "SalesOrder"), ("ReferenceSDDocumentItem", "SalesOrderItem"))
    assert delivery.required and delivery.process == "Process_OrderToCash"
    processes = {r.process for r in rows}
    assert {
        "Process_SalesQuotation",
        "Process_OrderToCash",
        "Process_ProcureToPay",
        "Process_SupplierInvoiceProcessing",
        "Process_CustomerReturns",
    } <= processes


def test_a_row_that_does_not_resolve_is_a_warning_naming_file_row_and_why(tmp_path):
    """Against the hand-made sales service: a set it does not have, a property its set does not have,
    and carriers that leave out a key property of the predecessor; the one good row is lifted."""
    folder = tmp_path / "flow"
    folder.mkdir()
    (folder / "flow.csv").write_text(
        "process,predecessor,follow_on,carriers,required,applies_when,precondition,quantity,source,note\n"
        "P,HANDMADE_SALES_SRV/Quotes,HANDMADE_SALES_SRV/Orders,Order=Quote,no,,,,test,\n"
        "P,HANDMADE_SALES_SRV/Orders,HANDMADE_SALES_SRV/Items,Material=Order,no,,Stage=C,,test,\n"
        "P,HANDMADE_SALES_SRV/Items,HANDMADE_SALES_SRV/Orders,OrderType=Order,no,,,,test,\n"
        "P,HANDMADE_SALES_SRV/Orders,HANDMADE_SALES_SRV/Customers,Customer=Order,no,,Status=C,,test,\n",
        encoding="utf-8",
    )
    report = build_store(
        BuildOptions(odata=[DATA / "odata" / "HANDMADE_SALES_SRV"], flow=folder, out=tmp_path / "g.ttl")
    )
    warnings = [w for w in report.warnings if "document flow" in w]
    assert warnings == [
        "flow/flow.csv:2: document flow HANDMADE_SALES_SRV/Quotes -> HANDMADE_SALES_SRV/Orders: "
        "names no entity set HANDMADE_SALES_SRV/Quotes of this build",
        "flow/flow.csv:3: document flow HANDMADE_SALES_SRV/Orders -> HANDMADE_SALES_SRV/Items: "
        "Orders has no property Stage",
        "flow/flow.csv:4: document flow HANDMADE_SALES_SRV/Items -> HANDMADE_SALES_SRV/Orders: "
        "the carriers must carry every key property of Items (Order, Item)",
    ]
    assert report.turtle.count(b"kg:DocumentFlow") == 1


# ---------------------------------------------------------------- the graph
def test_every_row_of_the_sap_file_resolves_against_a2x(tasks_built):
    report, store = tasks_built
    assert [w for w in report.warnings if "document flow" in w] == []
    assert "flow/flow.csv" in report.files
    flows = {r["flow"] for r in records(StoreHandle.open(store).graph, "serve-document-flow")}
    assert len(flows) == len(read_flows(SAP_FLOW))


def _iri(graph, service: str, entity_set: str) -> str:
    return next(r["set"] for r in records(graph, "retrieve-sets") if (r["service"], r["name"]) == (service, entity_set))


def test_the_flow_names_the_steps_that_make_each_document(tasks_store):
    graph = StoreHandle.open(tasks_store).graph
    flow = document_flow(graph, _iri(graph, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryItem"))
    (made_from,) = flow["predecessors"]
    assert (made_from["service"], made_from["entity_set"]) == ("API_SALES_ORDER_SRV", "A_SalesOrderItem")
    assert made_from["carriers"] == {"ReferenceSDDocument": "SalesOrder", "ReferenceSDDocumentItem": "SalesOrderItem"}
    assert "Create the sales order" in made_from["steps"] and made_from["required"]
    billed = [f for f in flow["follow_ons"] if f["entity_set"] == "BillingDocumentItem"]
    assert billed and all("Create the invoice" in f["steps"] for f in billed)
    header = document_flow(graph, _iri(graph, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader"))
    assert {f["precondition"] for f in header["follow_ons"]} == {"OverallGoodsMovementStatus = C"}


def test_the_typed_context_shows_the_predecessors_and_their_carriers(tasks_store):
    graph = StoreHandle.open(tasks_store).graph
    iri = _iri(graph, "API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentItem")
    text = render_set(graph, Result("API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentItem", 1.0, iri=iri))
    section = text[text.index("document flow: made from") :]
    assert "API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrderItem" in section
    assert "PurchaseOrder = its PurchaseOrder, PurchaseOrderItem = its PurchaseOrderItem" in section
    assert "quantity QuantityInEntryUnit <= OrderQuantity summed" in section
    assert "when GoodsMovementType = 101 or 103" in section


@pytest.fixture(scope="module")
def box(tasks_store):
    toolbox = Toolbox(StoreHandle.open(tasks_store))
    yield toolbox
    toolbox.close()


def test_describe_gives_one_short_line_per_predecessor(box):
    answer = box.describe("sap-s4-CE_BILLINGDOCUMENT_0001-v1", "BillingDocumentItem")
    assert answer["made_from"] == [
        "A_OutbDeliveryHeader (API_OUTBOUND_DELIVERY_SRV), required: ReferenceSDDocument=DeliveryDocument; "
        "it must have OverallGoodsMovementStatus=C",
        "A_OutbDeliveryItem (API_OUTBOUND_DELIVERY_SRV), required: ReferenceSDDocument=DeliveryDocument, "
        "ReferenceSDDocumentItem=DeliveryDocumentItem; BillingQuantity summed <= its ActualDeliveryQuantity",
    ]
    assert len(json.dumps(answer)) < 4000
    assert "made_from" not in box.describe("API_SALES_ORDER_SRV", "A_SalesOrderHeaderPartner")


def test_next_steps_fills_the_payload_template_from_a_record(box):
    answer = box.handlers["next_steps"](
        {"service": "API_SALES_ORDER_SRV", "entity_set": "A_SalesOrder", "record": {"SalesOrder": "0000000004"}}
    )
    (delivery,) = [f for f in answer["follow_ons"] if f["entity_set"] == "A_OutbDeliveryItem"]
    assert delivery["payload"] == {"ReferenceSDDocument": "0000000004", "ReferenceSDDocumentItem": "<SalesOrderItem>"}
    item = box.next_steps("API_SALES_ORDER_SRV", "A_SalesOrderItem", {"SalesOrder": "4", "SalesOrderItem": "10"})
    assert item["follow_ons"][0]["payload"] == {"ReferenceSDDocument": "4", "ReferenceSDDocumentItem": "10"}
    plain = box.next_steps("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader")
    billing = [f for f in plain["follow_ons"] if f["from"] == "A_OutbDeliveryHeader"]
    assert billing and all(f["payload"] == {"ReferenceSDDocument": "<DeliveryDocument>"} for f in billing)
    assert all(f["first"] == "the A_OutbDeliveryHeader must have OverallGoodsMovementStatus=C" for f in billing)


# ---------------------------------------------------------------- kg serve
def _delivery(order: str, item: str = "000010", quantity: str = "2") -> dict[str, object]:
    return {
        "ShippingPoint": "1710",
        "to_DeliveryDocumentItem": [
            {"ReferenceSDDocument": order, "ReferenceSDDocumentItem": item, "ActualDeliveryQuantity": quantity}
        ],
    }


def _open_order(client, quantity: str = "2") -> str:
    """A new sales order of one item of ``quantity`` pieces (nothing delivered yet), its number: most
    generated order items are delivered in full, and a test needs an order whose open quantity it knows."""
    item = {"Material": "0000000001", "RequestedQuantity": quantity, "RequestedQuantityUnit": "PC"}
    created = client.post(SO + "A_SalesOrder", json={**A2X_ORDER, "to_Item": [item]})
    assert created.status_code == 201, created.text
    return created.json()["d"]["SalesOrder"]


def _error(answer) -> dict[str, object]:
    assert answer.status_code == 400, answer.text
    return answer.json()["error"]


def _detail(answer) -> dict[str, str]:
    error = _error(answer)
    details = error["innererror"]["errordetails"] if "innererror" in error else error["details"]
    return details[0]


def test_a_follow_on_without_its_predecessor_is_missing_predecessor_with_existing_ones_named(tasks_client):
    answer = tasks_client.post(
        OD + "A_OutbDeliveryHeader", json={"ShippingPoint": "1710", "to_DeliveryDocumentItem": [{}]}
    )
    detail = _detail(answer)
    assert detail["code"] == "missing-predecessor"
    assert detail["target"] == "/to_DeliveryDocumentItem/0/ReferenceSDDocumentItem"
    assert (
        "A_OutbDeliveryItem lacks ReferenceSDDocument, ReferenceSDDocumentItem: in Process_OrderToCash its records "
        "are made from A_SalesOrderItem records" in detail["message"]
    )
    assert "or create the A_SalesOrderItem first (the step 'Create the sales order')" in detail["message"]
    named = re.search(r"A_SalesOrderItem records with RequestedQuantity left: ([0-9/, ]+)", detail["message"])
    assert named, detail["message"]
    items = [tuple(n.split("/")) for n in named.group(1).split(", ")]
    assert 1 <= len(items) <= 5, items
    for order, item in items:  # generated orders partly delivered: each one named takes a delivery of a piece
        answer = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(order, item, "1"))
        assert answer.status_code == 201, (order, item, answer.text)
    assert "give the key of an existing A_SalesOrderItem" in detail["message"]


def test_a_follow_on_naming_no_record_is_unknown_predecessor(tasks_client):
    detail = _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery("0000009999")))
    assert detail["code"] == "unknown-predecessor"
    assert (
        "ReferenceSDDocument='0000009999', ReferenceSDDocumentItem='000010' names no A_SalesOrderItem"
        in (detail["message"])
    )
    assert "or create the A_SalesOrderItem first" in detail["message"]


def test_a_valid_follow_on_is_accepted_and_stored_with_its_carriers(tasks_client):
    number = _open_order(tasks_client)
    answer = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number))
    assert answer.status_code == 201, answer.text
    delivery = answer.json()["d"]["DeliveryDocument"]
    items = tasks_client.get(OD + f"A_OutbDeliveryHeader('{delivery}')/to_DeliveryDocumentItem").json()["d"]["results"]
    assert [(i["ReferenceSDDocument"], i["ReferenceSDDocumentItem"]) for i in items] == [(number, "000010")]
    assert items[0]["Material"] == "0000000001", "a delivery item takes its order item's material, as SAP copies it"


def test_a_created_delivery_item_takes_its_order_item_s_material_and_plant(tasks_client):
    """SAP derives a delivery item's material and plant (read-only in A_OutbDeliveryItem) from the order
    item it ships: kg serve stores them from the order item the references name."""
    item = {
        "Material": "0000000001",
        "RequestedQuantity": "2",
        "RequestedQuantityUnit": "PC",
        "ProductionPlant": "1710",
    }
    created = tasks_client.post(SO + "A_SalesOrder", json={**A2X_ORDER, "to_Item": [item]})
    assert created.status_code == 201, created.text
    number = created.json()["d"]["SalesOrder"]
    body = _delivery(number)
    answer = tasks_client.post(OD + "A_OutbDeliveryHeader", json=body)
    assert answer.status_code == 201, answer.text
    delivery = answer.json()["d"]["DeliveryDocument"]
    (item,) = tasks_client.get(OD + f"A_OutbDeliveryHeader('{delivery}')/to_DeliveryDocumentItem").json()["d"][
        "results"
    ]
    assert (item["Material"], item["Plant"]) == ("0000000001", "1710"), "its material; its ProductionPlant as Plant"


def test_order_to_cash_is_accepted_in_order_and_refused_out_of_order(tasks_client):
    # a delivery for an order that does not exist yet is refused
    assert _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery("0000000021")))["code"] == (
        "unknown-predecessor"
    )
    order = tasks_client.post(SO + "A_SalesOrder", json=A2X_ORDER)
    assert order.status_code == 201, order.text
    number = order.json()["d"]["SalesOrder"]
    assert number == "0000000021"
    delivery = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number))
    assert delivery.status_code == 201, delivery.text
    shipped = delivery.json()["d"]["DeliveryDocument"]
    bill = {"_Reference": [{"SDDocument": shipped, "SDDocumentCategory": "J"}]}
    # billing before the goods issue is refused, naming the step to do first
    early = _detail(tasks_client.post(CREATE_BILLING, json=bill))
    assert early["code"] == "predecessor-not-ready"
    assert early["target"] == "/_Reference/0/SDDocument"
    assert f"A_OutbDeliveryHeader {shipped} has OverallGoodsMovementStatus empty" in early["message"]
    assert "call PostGoodsIssue on it first" in early["message"]
    issued = tasks_client.post(OD + f"PostGoodsIssue?DeliveryDocument='{shipped}'")
    assert issued.status_code == 200, issued.text
    billed = tasks_client.post(CREATE_BILLING, json={**bill, "_Control": {"DefaultBillingDocumentType": "F2"}})
    assert billed.status_code == 200, billed.text
    (document,) = billed.json()["value"]
    assert document["BillingDocumentType"] == "F2"
    number = document["BillingDocument"]
    assert number == "0000000021", "numbered on from the generated billing documents"
    items = tasks_client.get(CE + f"BillingDocument('{number}')/_Item").json()["value"]
    assert [(i["BillingDocumentItem"], i["ReferenceSDDocument"], i["ReferenceSDDocumentItem"]) for i in items] == [
        ("000010", shipped, "000010")
    ]
    # the billing document is a real predecessor of the next step
    posted = tasks_client.post(
        CE + f"BillingDocument('{number}')/com.sap.gateway.srvd_a2x.api_billingdocument.v0001.PostToAccounting"
    )
    assert posted.status_code in (200, 204), posted.text
    assert tasks_client.get(CE + f"BillingDocument('{number}')").json()["AccountingPostingStatus"] == "C"


def test_billing_a_delivery_that_does_not_exist_is_unknown_predecessor(tasks_client):
    detail = _detail(tasks_client.post(CREATE_BILLING, json={"_Reference": [{"SDDocument": "0000009999"}]}))
    assert detail["code"] == "unknown-predecessor"
    assert "names no A_OutbDeliveryHeader" in detail["message"]


def _receipt(order: str, item: str, quantity: str) -> dict[str, object]:
    return {
        "MaterialDocumentHeaderText": "flow test",
        "to_MaterialDocumentItem": [
            {
                "GoodsMovementType": "101",
                "PurchaseOrder": order,
                "PurchaseOrderItem": item,
                "Material": "0000000019",
                "Plant": "1710",
                "StorageLocation": "171A",
                "QuantityInEntryUnit": quantity,
                "EntryUnit": "PC",
            }
        ],
    }


def test_a_second_full_goods_receipt_is_predecessor_fully_referenced(tasks_client, tasks_server):
    key = ("0000000005", "00010")
    flow = next(f for f in tasks_server.flow.flows if f.quantity and f.follow[1] == "A_MaterialDocumentItem")
    item = tasks_server.data.table(*flow.pred).rows[key]
    receipts = tasks_server.data.table(*flow.follow).rows
    left = Decimal(str(item["OrderQuantity"])) - tasks_server.flow.referenced(flow, receipts, key)
    assert left > 0
    full = tasks_client.post(MD + "A_MaterialDocumentHeader", json=_receipt(*key, str(left)))
    assert full.status_code == 201, full.text
    detail = _detail(tasks_client.post(MD + "A_MaterialDocumentHeader", json=_receipt(*key, str(left))))
    assert detail["code"] == "predecessor-fully-referenced"
    assert detail["target"] == "/to_MaterialDocumentItem/0/PurchaseOrderItem"
    assert (
        "is more than the 0.00 left; it is fully referenced: choose another A_PurchaseOrderItem" in (detail["message"])
    )


def test_receipts_in_one_deep_insert_are_summed(tasks_client, tasks_server):
    key = ("0000000006", "00010")
    flow = next(f for f in tasks_server.flow.flows if f.quantity and f.follow[1] == "A_MaterialDocumentItem")
    item = tasks_server.data.table(*flow.pred).rows[key]
    left = Decimal(str(item["OrderQuantity"])) - tasks_server.flow.referenced(
        flow, tasks_server.data.table(*flow.follow).rows, key
    )
    body = _receipt(*key, str(left))
    body["to_MaterialDocumentItem"] = body["to_MaterialDocumentItem"] * 2
    assert _detail(tasks_client.post(MD + "A_MaterialDocumentHeader", json=body))["target"] == (
        "/to_MaterialDocumentItem/1/PurchaseOrderItem"
    )


def test_a_transfer_posting_needs_no_purchase_order(tasks_client):
    body = _receipt("", "", "4")
    item = body["to_MaterialDocumentItem"][0]
    item.update(GoodsMovementType="311", IssuingOrReceivingStorageLoc="171B")
    del item["PurchaseOrder"], item["PurchaseOrderItem"]
    assert tasks_client.post(MD + "A_MaterialDocumentHeader", json=body).status_code == 201


def test_a_goods_receipt_without_its_purchase_order_is_missing_predecessor(tasks_client):
    body = _receipt("", "", "4")
    del body["to_MaterialDocumentItem"][0]["PurchaseOrder"], body["to_MaterialDocumentItem"][0]["PurchaseOrderItem"]
    detail = _detail(tasks_client.post(MD + "A_MaterialDocumentHeader", json=body))
    assert detail["code"] == "missing-predecessor"
    assert "A_MaterialDocumentItem lacks PurchaseOrder" in detail["message"]


def test_a_change_set_with_a_bad_follow_on_is_refused_as_a_whole(tasks_client):
    number = _open_order(tasks_client)
    requests = {
        "requests": [
            {"id": "1", "method": "POST", "url": "A_OutbDeliveryHeader", "body": _delivery(number)},
            {"id": "2", "method": "POST", "url": "A_OutbDeliveryHeader", "body": _delivery("0000009999")},
        ]
    }
    boundary = "batch_flow"
    parts = "".join(
        f"--{boundary}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        f"POST {r['url']} HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{json.dumps(r['body'])}\r\n"
        for r in requests["requests"]
    )
    change_set = f"Content-Type: multipart/mixed; boundary={boundary}\r\n\r\n{parts}--{boundary}--\r\n"
    body = f"--batch\r\n{change_set}--batch--\r\n".encode()
    before = tasks_client.get(OD + "A_OutbDeliveryHeader/$count").text
    answer = tasks_client.post(OD + "$batch", content=body, headers={"content-type": "multipart/mixed; boundary=batch"})
    assert answer.status_code == 202 and "unknown-predecessor" in answer.text
    assert tasks_client.get(OD + "A_OutbDeliveryHeader/$count").text == before


def test_every_generated_record_passes_the_reference_and_flow_checks(tasks_server):
    """The seed data is consistent with the flow: follow-ons name existing, ready predecessors with
    quantity left (each record checked as its own create), and the process-read tasks' links hold."""
    rejected = [
        (t.service, t.name, d["code"], d["message"][:200])
        for t in tasks_server.data.all_tables()
        for record in t.rows.values()
        for d in tasks_server.references.check(t, record) + tasks_server.flow.check(t, record)
    ]
    assert rejected == []
    items = tasks_server.data.table("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryItem").rows.values()
    first = next(iter(items))
    assert (first["DeliveryDocument"], first["ReferenceSDDocument"], first["ReferenceSDDocumentItem"]) == (
        "0000000001",
        "0000000001",
        "000010",
    )
    headers = tasks_server.data.table("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader").rows.values()
    assert {h["OverallGoodsMovementStatus"] for h in headers} == {"C"}


def test_an_update_that_names_another_predecessor_is_checked_and_one_that_does_not_is_not(tasks_client):
    url = "/sap/opu/odata/sap/API_CUSTOMER_RETURN_SRV/A_CustomerReturn('0000000001')"
    etag = tasks_client.get(url).headers["etag"]
    detail = _detail(tasks_client.patch(url, json={"ReferenceSDDocument": "0000009999"}, headers={"if-match": etag}))
    assert (detail["code"], detail["target"]) == ("unknown-predecessor", "/ReferenceSDDocument")
    assert "names no A_BillingDocument (API_BILLING_DOCUMENT_SRV)" in detail["message"]
    changed = tasks_client.patch(url, json={"PurchaseOrderByCustomer": "FLOW"}, headers={"if-match": etag})
    assert changed.status_code == 204, changed.text
    moved = tasks_client.patch(
        url, json={"ReferenceSDDocument": "0000000002"}, headers={"if-match": changed.headers["etag"]}
    )
    assert moved.status_code == 204, moved.text


def test_an_item_added_through_its_order_is_checked_against_the_quotation_it_names(tasks_client):
    item = {"Material": "0000000001", "RequestedQuantity": "1", "RequestedQuantityUnit": "PC"}
    url = SO + "A_SalesOrder('0000000001')/to_Item"
    refused = tasks_client.post(
        url, json={**item, "ReferenceSDDocument": "0000009999", "ReferenceSDDocumentItem": "000010"}
    )
    detail = _detail(refused)
    assert (detail["code"], detail["target"]) == ("unknown-predecessor", "/ReferenceSDDocumentItem")
    assert "names no A_SalesQuotationItem (API_SALES_QUOTATION_SRV)" in detail["message"]
    quoted = tasks_client.post(
        url, json={**item, "ReferenceSDDocument": "0000000001", "ReferenceSDDocumentItem": "000010"}
    )
    assert quoted.status_code == 201, quoted.text
    assert tasks_client.post(url, json=item).status_code == 201, "an order item needs no quotation"


def test_an_order_item_calling_off_a_contract_item_is_accepted(tasks_client, tasks_server):
    """A release order names the contract (header) and contract item (item) it calls off, in the same
    properties a quotation would use: the two flows into A_SalesOrderItem are alternatives."""
    contract = next(iter(tasks_server.data.table("CE_SALESCONTRACT_0001", "SalesContractItem").rows.values()))
    number, position = str(contract["SalesContract"]), str(contract["SalesContractItem"])
    item = {"Material": "0000000001", "RequestedQuantity": "1", "RequestedQuantityUnit": "PC"}
    order = {
        **ORDER_1010,
        "ReferenceSDDocument": number,
        "to_Item": [{**item, "ReferenceSDDocument": number, "ReferenceSDDocumentItem": position}],
    }
    created = tasks_client.post(SO + "A_SalesOrder", json=order)
    assert created.status_code == 201, created.text
    url = SO + "A_SalesOrder('0000000001')/to_Item"
    added = tasks_client.post(url, json={**item, "ReferenceSDDocument": number, "ReferenceSDDocumentItem": position})
    assert added.status_code == 201, added.text
    refused = tasks_client.post(
        url, json={**item, "ReferenceSDDocument": "0000009999", "ReferenceSDDocumentItem": "000010"}
    )
    detail = _detail(refused)
    assert detail["code"] == "unknown-predecessor"
    assert "A_SalesQuotationItem" in detail["message"] and "SalesContractItem" in detail["message"]


def test_generated_follow_on_items_carry_their_predecessor_item_s_content(tasks_server):
    """A goods receipt for a purchase order item has that item's material and plant; a delivery item is
    in its order item's plant; a supplier invoice's gross amount and a sales order's net value are the
    sums of their items' amounts."""
    tasks_server.data.reset()
    data = tasks_server.data
    po_items = data.table("API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrderItem").rows
    receipts = [
        r
        for r in data.table("API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentItem").rows.values()
        if r.get("GoodsMovementType") in ("101", "103") and r.get("PurchaseOrderItem")
    ]
    assert receipts
    for r in receipts:
        ordered = po_items[(str(r["PurchaseOrder"]), str(r["PurchaseOrderItem"]))]
        assert (r["Material"], r["Plant"]) == (ordered["Material"], ordered["Plant"]), r
    so_items = data.table("API_SALES_ORDER_SRV", "A_SalesOrderItem").rows
    for r in data.table("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryItem").rows.values():
        ordered = so_items[(str(r["ReferenceSDDocument"]), str(r["ReferenceSDDocumentItem"]))]
        assert r["Plant"] == ordered["ProductionPlant"], r
    for head_set, item_sets, head_amount, item_amount, keys in [
        ("A_SupplierInvoice", ("A_SuplrInvcItemPurOrdRef",), "InvoiceGrossAmount", "SupplierInvoiceItemAmount", 2),
        ("A_SalesOrder", ("A_SalesOrderItem",), "TotalNetAmount", "NetAmount", 1),
    ]:
        service = "API_SUPPLIERINVOICE_PROCESS" if head_set == "A_SupplierInvoice" else "API_SALES_ORDER_SRV"
        tables = data.tables_of(service)
        items = [t for t in tables.values() if item_amount in t.type.props and t.keys[:keys] == tables[head_set].keys]
        assert {t.name for t in items} >= set(item_sets)
        for key, head in tables[head_set].rows.items():
            total = sum(
                (Decimal(str(r[item_amount])) for t in items for r in t.rows.values() if t.key_of(r)[:keys] == key),
                Decimal(0),
            )
            assert Decimal(str(head[head_amount])) == total, (head_set, key)


def test_created_documents_are_numbered_per_entity_set(tasks_client):
    """SAP's number ranges: each set counts on from its own highest number (every set starts with 20
    generated documents, so each set's first created one is 0000000021), not one counter for all."""
    body = {**ORDER_1010, "to_Item": [{**A2X_ORDER["to_Item"][0], "RequestedQuantity": "1"}]}
    first = tasks_client.post(SO + "A_SalesOrder", json=body).json()["d"]
    second = tasks_client.post(SO + "A_SalesOrder", json=body).json()["d"]
    assert (first["SalesOrder"], second["SalesOrder"]) == ("0000000021", "0000000022")
    assert first["to_Item"]["results"][0]["SalesOrderItem"] == "000010"
    delivery = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery("0000000021", quantity="1"))
    assert delivery.status_code == 201, delivery.text
    assert delivery.json()["d"]["DeliveryDocument"] == "0000000021", "the delivery set counts on its own"


# ---------------------------------------------------------------- quantities: no over-delivery, no double billing
def test_a_delivery_ships_at_most_the_order_item_s_open_quantity(tasks_client):
    """SAP delivers what an order item has open: its requested quantity less what earlier deliveries took.
    More is predecessor-fully-referenced with what is left as the hint; the rest is accepted; once nothing
    is left, a delivery item is refused even without a quantity, and a generated order item (delivered in
    full by the generated delivery) takes no second delivery."""
    number = _open_order(tasks_client, quantity="5")
    over = _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="6")))
    assert (over["code"], over["target"]) == (
        "predecessor-fully-referenced",
        "/to_DeliveryDocumentItem/0/ReferenceSDDocumentItem",
    )
    assert f"A_SalesOrderItem {number}, 000010 has RequestedQuantity 5, of which 0 is referenced" in over["message"]
    assert "ActualDeliveryQuantity 6 is more than the 5 left; reference at most 5" in over["message"]
    first = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="3"))
    assert first.status_code == 201, first.text
    rest = _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="3")))
    assert "of which 3 is referenced already" in rest["message"] and "reference at most 2" in rest["message"]
    second = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="2"))
    assert second.status_code == 201, second.text
    body = _delivery(number)
    del body["to_DeliveryDocumentItem"][0]["ActualDeliveryQuantity"]  # type: ignore[index]
    done = _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=body))
    assert done["code"] == "predecessor-fully-referenced" and "nothing is left" in done["message"]
    assert "choose another A_SalesOrderItem" in done["message"]
    generated = _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery("0000000001", quantity="1")))
    assert generated["code"] == "predecessor-fully-referenced"
    assert "A_SalesOrderItem 0000000001, 000010 has RequestedQuantity 10.00, of which 10.00" in generated["message"]


def test_two_delivery_items_of_one_order_item_in_one_request_are_summed(tasks_client):
    number = _open_order(tasks_client, quantity="4")
    body = _delivery(number, quantity="3")
    body["to_DeliveryDocumentItem"] = body["to_DeliveryDocumentItem"] * 2  # type: ignore[operator]
    detail = _detail(tasks_client.post(OD + "A_OutbDeliveryHeader", json=body))
    assert detail["target"] == "/to_DeliveryDocumentItem/1/ReferenceSDDocumentItem"
    assert "reference at most 1" in detail["message"]


def test_raising_a_delivery_item_s_quantity_past_the_open_quantity_is_refused(tasks_client):
    number = _open_order(tasks_client, quantity="4")
    created = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="3"))
    assert created.status_code == 201, created.text
    url = (
        OD
        + f"A_OutbDeliveryItem(DeliveryDocument='{created.json()['d']['DeliveryDocument']}',DeliveryDocumentItem='000010')"
    )
    etag = tasks_client.get(url).headers["etag"]
    detail = _detail(tasks_client.patch(url, json={"ActualDeliveryQuantity": "5"}, headers={"if-match": etag}))
    assert detail["code"] == "predecessor-fully-referenced" and "reference at most 4" in detail["message"]
    lowered = tasks_client.patch(url, json={"ActualDeliveryQuantity": "4"}, headers={"if-match": etag})
    assert lowered.status_code == 204, lowered.text


def test_lowering_an_order_item_below_what_was_delivered_is_follow_ons_exist(tasks_client):
    number = _open_order(tasks_client, quantity="5")
    delivered = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="3"))
    assert delivered.status_code == 201, delivered.text
    delivery = delivered.json()["d"]["DeliveryDocument"]
    url = SO + f"A_SalesOrderItem(SalesOrder='{number}',SalesOrderItem='000010')"
    detail = _detail(tasks_client.patch(url, json={"RequestedQuantity": "2"}))
    assert detail["code"] == "follow-ons-exist" and detail["target"] == "/RequestedQuantity"
    assert "RequestedQuantity 2 is less than the 3 that its A_OutbDeliveryItem records reference" in detail["message"]
    assert f"({delivery}/000010)" in detail["message"] and "set at least 3" in detail["message"]
    assert tasks_client.get(url).json()["d"]["RequestedQuantity"] == "5", "the refused change changed nothing"
    kept = tasks_client.patch(url, json={"RequestedQuantity": "3"})
    assert kept.status_code == 204, "down to what was delivered is accepted"
    untouched = tasks_client.patch(url, json={"PurchaseOrderByCustomer": "PO-1"})
    assert untouched.status_code == 204, "a change that leaves the quantity alone is not checked against it"


def test_deleting_an_order_that_was_delivered_is_follow_ons_exist(tasks_client):
    number = _open_order(tasks_client, quantity="2")
    order = SO + f"A_SalesOrder('{number}')"
    delivered = tasks_client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity="2"))
    assert delivered.status_code == 201, delivered.text
    delivery = delivered.json()["d"]["DeliveryDocument"]
    detail = _detail(tasks_client.delete(order, headers={"if-match": "*"}))
    assert detail["code"] == "follow-ons-exist"
    assert detail["message"].startswith(f"A_SalesOrderItem {number}, 000010 is named by A_OutbDeliveryItem records")
    assert f"({delivery}/000010)" in detail["message"] and "delete them first" in detail["message"]
    assert tasks_client.get(order).status_code == 200 and tasks_client.get(order + "/to_Item").json()["d"]["results"]
    assert tasks_client.delete(OD + f"A_OutbDeliveryHeader('{delivery}')", headers={"if-match": "*"}).status_code == 204
    assert tasks_client.delete(order, headers={"if-match": "*"}).status_code == 204, "without its delivery it goes"
    fresh = SO + f"A_SalesOrder('{_open_order(tasks_client)}')"
    assert tasks_client.delete(fresh, headers={"if-match": "*"}).status_code == 204, (
        "one nothing follows goes as before"
    )


def _shipped(client, quantity: str) -> str:
    """A delivery of a new order of ``quantity`` pieces, its goods issue posted: ready to bill, not billed."""
    number = _open_order(client, quantity=quantity)
    delivery = client.post(OD + "A_OutbDeliveryHeader", json=_delivery(number, quantity=quantity))
    assert delivery.status_code == 201, delivery.text
    shipped = delivery.json()["d"]["DeliveryDocument"]
    assert client.post(OD + f"PostGoodsIssue?DeliveryDocument='{shipped}'").status_code == 200
    return shipped


def test_billing_a_delivery_twice_is_predecessor_fully_referenced(tasks_client):
    """SAP bills a delivery item once: the billing document made by CreateFromSDDocument bills each item's
    delivered quantity and names the sales order item it ships; a second billing of the same delivery,
    in a later call or twice in one call, is refused, naming deliveries that still have quantity to bill."""
    shipped = _shipped(tasks_client, "3")
    other = _shipped(tasks_client, "2")
    twice = _detail(tasks_client.post(CREATE_BILLING, json={"_Reference": [{"SDDocument": shipped}] * 2}))
    assert (twice["code"], twice["target"]) == ("predecessor-fully-referenced", "/_Reference/1/SDDocument")
    billed = tasks_client.post(CREATE_BILLING, json={"_Reference": [{"SDDocument": shipped}]})
    assert billed.status_code == 200, billed.text
    (document,) = billed.json()["value"]
    items = tasks_client.get(CE + f"BillingDocument('{document['BillingDocument']}')/_Item").json()["value"]
    order = tasks_client.get(OD + f"A_OutbDeliveryHeader('{shipped}')/to_DeliveryDocumentItem").json()["d"]["results"]
    assert [(i["BillingQuantity"], i["SalesDocument"], i["SalesDocumentItem"]) for i in items] == [
        (3, order[0]["ReferenceSDDocument"], "000010")
    ]
    again = _detail(tasks_client.post(CREATE_BILLING, json={"_Reference": [{"SDDocument": shipped}]}))
    assert (again["code"], again["target"]) == ("predecessor-fully-referenced", "/_Reference/0/SDDocument")
    assert f"DeliveryDocument {shipped} is referenced in full already" in again["message"]
    assert f"A_OutbDeliveryItem records {shipped}/000010 (ActualDeliveryQuantity 3)" in again["message"]
    assert (
        "choose another DeliveryDocument; DeliveryDocuments (with OverallGoodsMovementStatus C) with "
        in (again["message"])
    )
    named = re.search(r"ActualDeliveryQuantity left: ([0-9, ]+)", again["message"])
    assert named, again["message"]
    for number in named.group(1).split(", ") + [other]:  # each one named, and the one made here, can be billed
        answer = tasks_client.post(CREATE_BILLING, json={"_Reference": [{"SDDocument": number}]})
        assert answer.status_code == 200, (number, answer.text)
    generated = _detail(tasks_client.post(CREATE_BILLING, json={"_Reference": [{"SDDocument": "0000000001"}]}))
    assert generated["code"] == "predecessor-fully-referenced", "every generated delivery is billed in full"


def test_a_billing_item_of_a_fully_billed_delivery_item_is_refused_on_create(tasks_client, tasks_server):
    """Both billing services' sets are read-only in A2X, so no client POSTs a billing item; a store whose
    billing items are creatable gets the same check on create: the server's check of a billing item naming
    a delivery item billed in full (a generated one) refuses it, and one naming a delivery item with
    quantity left to bill passes up to that quantity."""
    shipped = _shipped(tasks_client, "5")
    for service, name in (
        ("sap-s4-CE_BILLINGDOCUMENT_0001-v1", "BillingDocumentItem"),
        ("API_BILLING_DOCUMENT_SRV", "A_BillingDocumentItem"),
    ):
        table = tasks_server.data.table(service, name)
        billed = {"ReferenceSDDocument": "0000000003", "ReferenceSDDocumentItem": "000010", "BillingQuantity": "1"}
        (detail,) = tasks_server.flow.check(table, billed)
        assert (detail["code"], detail["target"]) == ("predecessor-fully-referenced", "/ReferenceSDDocumentItem")
        assert (
            "A_OutbDeliveryItem 0000000003, 000010 has ActualDeliveryQuantity 50.00, of which 50.00"
            in (detail["message"])
        )
        fresh = {"ReferenceSDDocument": shipped, "ReferenceSDDocumentItem": "000010", "BillingQuantity": "5"}
        assert tasks_server.flow.check(table, fresh) == []
        (over,) = tasks_server.flow.check(table, {**fresh, "BillingQuantity": "6"})
        assert over["code"] == "predecessor-fully-referenced" and "reference at most 5" in over["message"]


def test_generated_billing_items_bill_their_delivery_item_and_name_its_order_item(tasks_server):
    """Every generated billing item (both billing services) bills at most its delivery item's delivered
    quantity, has its material, and names as SalesDocument/SalesDocumentItem the order item it ships."""
    tasks_server.data.reset()
    deliveries = tasks_server.data.table("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryItem").rows
    for service, name, material in (
        ("sap-s4-CE_BILLINGDOCUMENT_0001-v1", "BillingDocumentItem", "Product"),
        ("API_BILLING_DOCUMENT_SRV", "A_BillingDocumentItem", "Material"),
    ):
        items = list(tasks_server.data.table(service, name).rows.values())
        assert len(items) == 40
        for item in items:
            shipped = deliveries[(str(item["ReferenceSDDocument"]), str(item["ReferenceSDDocumentItem"]))]
            assert Decimal(str(item["BillingQuantity"])) <= Decimal(str(shipped["ActualDeliveryQuantity"])), item
            assert item[material] == shipped["Material"], item
            assert (item["SalesDocument"], item["SalesDocumentItem"]) == (
                shipped["ReferenceSDDocument"],
                shipped["ReferenceSDDocumentItem"],
            ), item
    for item in deliveries.values():
        assert item["DeliveryDocumentItem"] == item["ReferenceSDDocumentItem"], (
            "a generated delivery item ships the order item of its own number",
            item,
        )
    # docs/serve.md: most generated order items are delivered in full, some are left open (every fourth
    # follow-on item covers at most half of its predecessor); no delivery is billed beyond what it delivered
    shipped: dict[tuple[str, str], Decimal] = {}
    for item in deliveries.values():
        key = (str(item["ReferenceSDDocument"]), str(item["ReferenceSDDocumentItem"]))
        shipped[key] = shipped.get(key, Decimal(0)) + Decimal(str(item["ActualDeliveryQuantity"]))
    ordered = tasks_server.data.table("API_SALES_ORDER_SRV", "A_SalesOrderItem").rows
    _mostly_in_full({k: Decimal(str(r["RequestedQuantity"])) for k, r in ordered.items()}, shipped)
    for service, name in (
        ("sap-s4-CE_BILLINGDOCUMENT_0001-v1", "BillingDocumentItem"),
        ("API_BILLING_DOCUMENT_SRV", "A_BillingDocumentItem"),
    ):
        billed: dict[tuple[str, str], Decimal] = {}
        for item in tasks_server.data.table(service, name).rows.values():
            key = (str(item["ReferenceSDDocument"]), str(item["ReferenceSDDocumentItem"]))
            billed[key] = billed.get(key, Decimal(0)) + Decimal(str(item["BillingQuantity"]))
        delivered = {k: Decimal(str(r["ActualDeliveryQuantity"])) for k, r in deliveries.items()}
        assert set(billed) <= set(delivered) and all(billed[k] <= delivered[k] for k in billed), service
        if service == "sap-s4-CE_BILLINGDOCUMENT_0001-v1":  # the service whose action bills deliveries
            _mostly_in_full(delivered, billed)


def _mostly_in_full(limits: dict[tuple[str, str], Decimal], taken: dict[tuple[str, str], Decimal]) -> None:
    """No predecessor item is covered by its follow-ons beyond its quantity; most are covered in full, and
    some (every fourth follow-on item covers at most half of its predecessor) are left open."""
    assert set(taken) <= set(limits)
    assert all(taken[k] <= limits[k] for k in taken), [(k, taken[k], limits[k]) for k in taken if taken[k] > limits[k]]
    left_open = [k for k, limit in limits.items() if taken.get(k, Decimal(0)) < limit]
    assert len(limits) // 8 <= len(left_open) <= len(limits) // 2, (len(left_open), len(limits))


def test_generated_returns_return_at_most_what_was_billed(tasks_server):
    """The return rows have no quantity rule (SAP lets a return exceed the returnable quantity: data/sap/flow
    README), but the generated returns are consistent: each names a billed item and returns at most its
    billed quantity."""
    tasks_server.data.reset()
    billed = tasks_server.data.table("API_BILLING_DOCUMENT_SRV", "A_BillingDocumentItem").rows
    returns = list(tasks_server.data.table("API_CUSTOMER_RETURN_SRV", "A_CustomerReturnItem").rows.values())
    assert len(returns) == 40
    for item in returns:
        source = billed[(str(item["ReferenceSDDocument"]), str(item["ReferenceSDDocumentItem"]))]
        assert Decimal(str(item["RequestedQuantity"])) <= Decimal(str(source["BillingQuantity"])), item
        assert item["Material"] == source["Material"], item
    (flow,) = [f for f in tasks_server.flow.flows if f.follow[1] == "A_CustomerReturnItem"]
    assert flow.quantity is None
