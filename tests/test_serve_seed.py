"""kg serve's generated records on the 45 A2X services pass the server's own checks.

One server per module on the session's A2X store (``a2x_store``): every generated record is walked
through the referential checks and the validation of a write; the records are linked as a real
system's are (item numbers per document, references to existing keys across services), and a
child created without its parent's key is rejected, not numbered.
"""

from __future__ import annotations

import pytest
from lxml import etree

from conftest import running, shared
from processkg.graph.handle import StoreHandle
from processkg.serve import odata_json
from processkg.serve.app import ServeHTTPError, Server, open_server
from processkg.serve.data import Table
from processkg.serve.values import to_json

SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"


@pytest.fixture(scope="module")
def server(a2x_store) -> Server:
    return open_server(StoreHandle.open(a2x_store), csrf=False, allow_reset=True)


@pytest.fixture
def client(server):
    with running(server) as client:
        assert client.post("/$reset").status_code == 204
        yield client


def _json(table: Table, record: dict[str, object]) -> dict[str, object]:
    v2 = odata_json.is_v2(table.type)
    return {k: to_json(v, table.type.props[k].edm_type, v2) for k, v in record.items() if v is not None}


def test_every_generated_reference_holds_an_existing_key(server):
    rejected = [
        (t.service, t.name, d["target"], d["message"])
        for t in server.data.all_tables()
        for record in t.rows.values()
        for d in server.references.check(t, record)
    ]
    assert sum(len(t.rows) for t in server.data.all_tables()) > 8000
    assert rejected == []


def test_every_generated_record_of_a_creatable_set_is_a_valid_write(server):
    """As a PUT of the record (read-only values unchanged); where the set takes no update, as a POST
    of what a client may write. Known gap: values of complex type are not generated (nor stored by
    the server), so a required complex property (TimeSheetDataFields) is the one rejection let pass."""
    roots = {service: root for root, service in server.roots.items()}
    rejected, walked = [], 0
    for t in server.data.all_tables():
        service, name = t.service, t.name
        if not t.creatable or not t.keys:
            continue
        for record in t.rows.values():
            url = roots[service] + name + odata_json.key_predicate(t.type, record)
            walked += 1
            try:
                server.check_change({"method": "PUT", "url": url, "payload": _json(t, record)}, server.resource(url))
            except ServeHTTPError as exc:
                if "does not allow update" not in exc.message:
                    rejected.append((service, name, exc.message))
                    continue
                writable = {
                    k: v for k, v in record.items() if not (t.type.props[k].read_only or t.type.props[k].computed)
                }
                try:
                    server.check_call({"method": "POST", "url": roots[service] + name, "payload": _json(t, writable)})
                except ServeHTTPError as post:
                    if not _only_complex_missing(t, post):
                        rejected.append((service, name, post.message))
    assert walked > 4000
    assert rejected == []


def _only_complex_missing(table: Table, exc: ServeHTTPError) -> bool:
    return all(
        d["code"] == "missing-required" and table.type.props[d["target"].lstrip("/")].complex_type is not None
        for d in exc.details or []
    )


def test_a_type_s_properties_are_in_the_order_of_its_metadata(server):
    """The key first, in its Key element's order (A_BillingDocumentItem: BillingDocument, BillingDocumentItem;
    the store's rows gave it the other way round, and kg serve found no header for it), then the Property
    elements in document order, whatever order the store returns them in."""
    doc = etree.parse(str(shared("odata", "s4-a2x", "API_BILLING_DOCUMENT_SRV.edmx")))
    (element,) = doc.xpath("//*[local-name()='EntityType'][@Name='A_BillingDocumentItemType']")
    keys = [r.get("Name") for r in element.xpath("./*[local-name()='Key']/*[local-name()='PropertyRef']")]
    declared = [p.get("Name") for p in element.xpath("./*[local-name()='Property']")]
    table = server.data.table("API_BILLING_DOCUMENT_SRV", "A_BillingDocumentItem")
    assert keys == table.keys == ["BillingDocument", "BillingDocumentItem"]
    assert list(table.type.props) == keys + [p for p in declared if p not in keys]
    assert [p.name for p in server.data.parents(table)[0]] == ["A_BillingDocument"]
    first = next(iter(table.rows.values()))
    assert list(first)[:2] == keys and (first["BillingDocument"], first["BillingDocumentItem"]) == (
        "0000000001",
        "000010",
    )


def test_items_are_numbered_per_document_in_steps_of_ten(server):
    items = list(server.data.table("API_SALES_ORDER_SRV", "A_SalesOrderItem").rows.values())
    assert [(i["SalesOrder"], i["SalesOrderItem"]) for i in items[:4]] == [
        ("0000000001", "000010"),
        ("0000000001", "000020"),
        ("0000000002", "000010"),
        ("0000000002", "000020"),
    ]


def test_references_across_services_hold_keys_of_the_other_service(server):
    products = server.data.table("API_PRODUCT_SRV", "A_Product").rows
    orders = server.data.table("API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrder").rows
    items = server.data.table("API_SALES_ORDER_SRV", "A_SalesOrderItem").rows.values()
    assert all((i["Material"],) in products for i in items)
    order_items = server.data.table("API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrderItem").rows
    invoice_refs = server.data.table("API_SUPPLIERINVOICE_PROCESS", "A_SuplrInvcItemPurOrdRef").rows.values()
    assert invoice_refs and all((r["PurchaseOrder"],) in orders for r in invoice_refs)
    assert all((r["PurchaseOrder"], r["PurchaseOrderItem"]) in order_items for r in invoice_refs)
    where = {
        (t.service, t.name)
        for t, _k in next(
            r
            for r in server.references.of(server.data.table("API_SUPPLIERINVOICE_PROCESS", "A_SuplrInvcItemPurOrdRef"))
            if r.props == ("PurchaseOrder", "PurchaseOrderItem")
        ).targets
    }
    assert ("API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrderItem") in where, (
        "an invoice item refers to a purchase order item, keyed in its Key element's order"
    )


def test_an_item_without_the_key_of_its_order_is_rejected_not_numbered(client):
    before = client.get(SO + "A_SalesOrderItem/$count").text
    answer = client.post(SO + "A_SalesOrderItem", json={"Material": "0000000001", "RequestedQuantity": "1"})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "missing-parent-key"
    assert "A_SalesOrderItem lacks SalesOrder" in error["message"]["value"]
    assert "give the key" not in error["message"]["value"], "SalesOrder is read-only in an item: no client gives it"
    assert "POST A_SalesOrder(key)/to_Item" in error["message"]["value"]
    assert client.get(SO + "A_SalesOrderItem/$count").text == before
    fixed = client.post(SO + "A_SalesOrder('0000000001')/to_Item", json={"Material": "0000000001"})
    assert fixed.status_code == 201, fixed.text
    assert (fixed.json()["d"]["SalesOrder"], fixed.json()["d"]["SalesOrderItem"]) == ("0000000001", "000030"), (
        "the next item of the order, after its generated 000010 and 000020"
    )


def test_a_reference_into_a_read_only_set_suggests_no_creation(client):
    answer = client.post(
        SO + "A_SalesOrder('0000000001')/to_Item", json={"Material": "0000000001", "ProductionPlant": "9999"}
    )
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]["value"]
    assert "ProductionPlant='9999' refers to no record of A_Plant" in message
    assert "A_Plant is read-only here, so no new one can be created" in message
    assert "create it first" not in message


def _records(server: Server, service: str) -> dict[str, list[dict[str, object]]]:
    return {name: list(t.rows.values()) for name, t in sorted(server.data.tables_of(service).items())}


def test_a_service_gets_the_same_records_whichever_service_was_asked_first(a2x_store, server):
    """Records are made per service on first use; references into other services make those services'
    records as they would be had every service been made at once (the module's server made them all)."""
    first = open_server(StoreHandle.open(a2x_store), csrf=False)
    second = open_server(StoreHandle.open(a2x_store), csrf=False)
    assert first.data.services == [] and second.data.services == [], "nothing is generated at start"
    with running(first) as client:
        assert client.get(SO).status_code == 200 and client.get(SO + "$metadata").status_code == 200
        assert client.get("/").status_code == 200
    assert first.data.services == [], "the service document, $metadata and / make no records"
    order = ["API_SALES_ORDER_SRV", "API_SUPPLIERINVOICE_PROCESS", "API_PRODUCT_SRV", "API_PURCHASEORDER_PROCESS_SRV"]
    mine = {s: _records(first, s) for s in order}
    theirs = {s: _records(second, s) for s in reversed(order)}
    assert "API_BILLING_DOCUMENT_SRV" not in first.data.services, "only what the references lead to is made"
    assert len(first.data.services) < len(first.model.heads)
    for service in order:
        assert mine[service] == theirs[service] == _records(server, service), service


def test_reset_keeps_an_ungenerated_service_ungenerated(a2x_store):
    fresh = open_server(StoreHandle.open(a2x_store), csrf=False, allow_reset=True)
    items = fresh.data.table("API_SALES_ORDER_SRV", "A_SalesOrderItem")
    assert items is not None
    generated = list(items.rows.values())
    items.rows.clear()
    fresh.data.reset()
    assert list(items.rows.values()) == generated
    assert "API_CUSTOMER_RETURN_SRV" not in fresh.data.services


def test_a_date_time_in_a_key_matches_in_the_v2_json_form(client):
    """A_BusinessPartnerContact is keyed by ValidityEndDate too: its generated records hold ISO date-times,
    a V2 client sends /Date(ms)/; a child of the first contact, with its key as read, is accepted."""
    bp = "/sap/opu/odata/sap/API_BUSINESS_PARTNER/"
    contact = client.get(bp + "A_BusinessPartnerContact?$top=1").json()["d"]["results"][0]
    assert contact["ValidityEndDate"].startswith("/Date(")
    body = {k: contact[k] for k in ("RelationshipNumber", "BusinessPartnerCompany", "BusinessPartnerPerson")}
    answer = client.post(bp + "A_BPContactToAddress", json=dict(body, ValidityEndDate=contact["ValidityEndDate"]))
    assert answer.status_code == 201, answer.text
    assert answer.json()["d"]["ValidityEndDate"] == contact["ValidityEndDate"]


def test_a_plant_under_one_of_sap_s_role_names_refers_to_a_plant(server):
    """Without SAP's code lists the plants are A_Plant's records: a delivery's ReceivingPlant, a material
    document item's IssuingOrReceivingPlant are checked against them as ProductionPlant is."""
    for service, name, prop in (
        ("API_INBOUND_DELIVERY_SRV", "A_InbDeliveryHeader", "ReceivingPlant"),
        ("API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentItem", "IssuingOrReceivingPlant"),
    ):
        table = server.data.table(service, name)
        assert table is not None
        (ref,) = [r for r in server.references.of(table) if prop in r.props]
        assert [(t.service, t.name) for t, _keys in ref.targets] == [("API_PLANT_SRV", "A_Plant")]
        record = dict(next(iter(table.rows.values())))
        assert server.references.check(table, record) == [], "the generated record holds an existing plant"
        (detail,) = server.references.check(table, {**record, prop: "9999"})
        assert detail["target"] == f"/{prop}" and "A_Plant is read-only here" in detail["message"]


def test_a_child_of_a_parent_that_does_not_exist_names_existing_parents(client):
    """A_Customer takes no creates (a customer comes from a business partner): the 404 of a child posted
    under a customer that does not exist names existing customers and suggests no creation; under a
    sales order, which may be created, it does."""
    bp = "/sap/opu/odata/sap/OP_API_BUSINESS_PARTNER_SRV/"
    answer = client.post(bp + "A_Customer('9999999999')/to_CustomerCompany", json={"CompanyCode": "0001"})
    assert answer.status_code == 404, answer.text
    message = answer.json()["error"]["message"]["value"]
    assert "existing: 0000000001; 0000000002" in message
    assert "A_Customer is read-only here, so no new one can be created" in message
    assert "create it first" not in message
    order = client.post(SO + "A_SalesOrder('9999999999')/to_Item", json={"Material": "0000000001"})
    assert order.status_code == 404 and "existing: 0000000001" in order.text and "create it first" in order.text


MD = "/sap/opu/odata/sap/API_MATERIAL_DOCUMENT_SRV/"


def test_years_are_fiscal_years_of_the_posting_date(client):
    """A year key (``MaterialDocumentYear``) is no running number: the generated documents carry the year of
    their generated dates, and a created one the year of its posting date (issue 21 §2: "fiscal years
    from the posting date"), in its key, its Location and its answer."""
    headers = client.get(MD + "A_MaterialDocumentHeader?$format=json").json()["d"]["results"]
    assert {h["MaterialDocumentYear"] for h in headers} == {"2026"}
    item = client.get(MD + "A_MaterialDocumentItem?$top=1&$format=json").json()["d"]["results"][0]
    fields = ("Material", "Plant", "StorageLocation", "GoodsMovementType", "QuantityInEntryUnit", "EntryUnit")
    body = {
        "PostingDate": "2025-03-04T00:00:00",
        "GoodsMovementCode": "01",
        "to_MaterialDocumentItem": [{k: v for k, v in item.items() if k in fields}],
    }
    created = client.post(MD + "A_MaterialDocumentHeader", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["d"]["MaterialDocumentYear"] == "2025"
    assert "MaterialDocumentYear='2025'" in created.headers["location"]
    assert created.json()["d"]["to_MaterialDocumentItem"]["results"][0]["MaterialDocumentYear"] == "2025"


def test_a_party_has_one_name_as_business_partner_customer_and_supplier(server):
    """Customer 3 and supplier 3 are business partner 3 in both business partner services: each name
    property of the three master records holds the same name, a name made of words (a task asking for it
    must be answered by reading it), and the parties' names differ."""
    for service in ("API_BUSINESS_PARTNER", "OP_API_BUSINESS_PARTNER_SRV"):
        partners = server.data.table(service, "A_BusinessPartner").rows
        names = {}
        for set_name, props in (
            ("A_BusinessPartner", ("BusinessPartnerFullName", "BusinessPartnerName", "OrganizationBPName1")),
            ("A_Customer", ("CustomerName", "CustomerFullName", "BPCustomerName", "BPCustomerFullName")),
            ("A_Supplier", ("SupplierName", "SupplierFullName")),
        ):
            for key, record in server.data.table(service, set_name).rows.items():
                assert key in partners, (set_name, key)
                assert {record[p] for p in props} == {names.setdefault(key, record[props[0]])}, (set_name, key)
        assert len(set(names.values())) == len(names) == 20
        assert all(not any(c.isdigit() for c in str(n)) for n in names.values())
    assert server.data.table("API_BUSINESS_PARTNER", "A_Customer").rows[("0000000010",)]["CustomerName"] == (
        "Alpine Foods"
    )
