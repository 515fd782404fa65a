"""kg serve on the SAP A2X corpus: a real HTTP server on a free loopback port, driven with httpx.

The server is started once per module on the session's A2X store (``a2x_store``); tests that
change data start from the generated records (``POST /$reset``). The A2X metadata carries no
value lists for the sales order's codes, so the invented-code test builds, once per module, a
store of API_SALES_ORDER_SRV with SAP's code lists bound by ``data/sap/codes/bindings.yaml``.
"""

from __future__ import annotations

import re

import pyodata
import pytest
import requests

from conftest import ROOT, running, shared
from processkg.build.pipeline import BuildOptions, build_store
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.serve.app import open_server
from processkg.validate.calls import read_calls

SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
SO_V4 = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/api_salesorder/0001/"
CUSTOMER = "0000000001"  # generated keys of A_Customer and A_Product (API_BUSINESS_PARTNER, API_PRODUCT_SRV)
PRODUCT = "0000000001"


@pytest.fixture(scope="module")
def served(a2x_store, tmp_path_factory):
    record = tmp_path_factory.mktemp("serve-a2x") / "calls.jsonl"
    server = open_server(StoreHandle.open(a2x_store), record=record, csrf=False, allow_reset=True)
    with running(server) as client:
        yield server, client, record


@pytest.fixture
def client(served):
    _server, client, _record = served
    assert client.post("/$reset").status_code == 204
    return client


def order(**extra: object) -> dict:
    items = [
        {"SalesOrderItem": "10", "Material": PRODUCT, "RequestedQuantity": "2", "RequestedQuantityUnit": "PC"},
        {"SalesOrderItem": "20", "Material": "0000000002", "RequestedQuantity": "1", "RequestedQuantityUnit": "PC"},
    ]
    return {"SalesOrderType": "OR", "SoldToParty": CUSTOMER, "to_Item": {"results": items}, **extra}


def test_deep_insert_of_a_sales_order_with_items(client):
    created = client.post(SO + "A_SalesOrder", json=order())
    assert created.status_code == 201, created.text
    number = created.json()["d"]["SalesOrder"]
    assert number == "0000000021", "the server numbers the order after the 20 generated ones"
    read = client.get(SO + f"A_SalesOrder('{number}')?$expand=to_Item").json()["d"]
    items = read["to_Item"]["results"]
    assert [(i["SalesOrder"], i["SalesOrderItem"], i["Material"]) for i in items] == [
        (number, "10", PRODUCT),
        (number, "20", "0000000002"),
    ]
    by_key = client.get(SO + f"A_SalesOrderItem(SalesOrder='{number}',SalesOrderItem='20')")
    assert by_key.status_code == 200 and by_key.json()["d"]["RequestedQuantity"] == "1"


def test_the_created_answer_of_a_deep_insert_holds_the_children(client):
    """What SAP answers and the Cloud SDK reads back: the 201 holds the inserted items (V2 and V4)."""
    created = client.post(SO + "A_SalesOrder", json=order()).json()["d"]
    assert [(i["SalesOrder"], i["SalesOrderItem"]) for i in created["to_Item"]["results"]] == [
        ("0000000021", "10"),
        ("0000000021", "20"),
    ]
    v4 = client.post(
        SO_V4 + "SalesOrder", json={"SalesOrderType": "OR", "SoldToParty": CUSTOMER, "_Item": [{"Product": PRODUCT}]}
    )
    assert v4.status_code == 201, v4.text
    assert [i["SalesOrder"] for i in v4.json()["_Item"]] == [v4.json()["SalesOrder"]]


def test_post_on_a_navigation_property_adds_a_child_to_an_existing_parent(client):
    """``POST A_SalesOrder('3')/to_Item``: SAP's way to add an item; the parent's key comes from the URL."""
    item = {"Material": PRODUCT, "RequestedQuantity": "3", "RequestedQuantityUnit": "PC"}
    created = client.post(SO + "A_SalesOrder('0000000003')/to_Item", json=item)
    assert created.status_code == 201, created.text
    body = created.json()["d"]
    assert (body["SalesOrder"], body["Material"]) == ("0000000003", PRODUCT)
    key = f"A_SalesOrderItem(SalesOrder='0000000003',SalesOrderItem='{body['SalesOrderItem']}')"
    assert created.headers["location"].endswith(SO + key)
    items = client.get(SO + "A_SalesOrder('0000000003')/to_Item").json()["d"]["results"]
    assert body["SalesOrderItem"] in [i["SalesOrderItem"] for i in items]
    missing = client.post(SO + "A_SalesOrder('0000009999')/to_Item", json=item)
    assert missing.status_code == 404 and "0000009999" in missing.json()["error"]["message"]["value"]
    other = client.post(SO + "A_SalesOrder('0000000003')/to_Item", json={**item, "SalesOrder": "0000000004"})
    details = other.json()["error"]["innererror"]["errordetails"]
    assert other.status_code == 400 and [(d["code"], d["target"]) for d in details] == [("read-only", "/SalesOrder")]
    assert client.post(SO + "A_SalesOrder('0000000003')/to_Partner/$count", json=item).status_code == 405


def test_select_inside_expand_restricts_the_children_and_keeps_empty_selected_properties(client):
    """``$select=SalesOrder,to_Item/Material`` (V2) and ``$expand=_Item($select=Product)`` (V4)."""
    number = client.post(SO + "A_SalesOrder", json=order()).json()["d"]["SalesOrder"]
    read = client.get(
        SO + f"A_SalesOrder('{number}')",
        params={"$expand": "to_Item", "$select": "SalesOrder,PurchaseOrderByCustomer,to_Item/Material"},
    )
    assert read.status_code == 200, read.text
    body = read.json()["d"]
    assert {k: v for k, v in body.items() if k not in ("__metadata", "to_Item")} == {
        "SalesOrder": number,
        "PurchaseOrderByCustomer": None,  # selected, never given: null, not dropped
    }
    items = body["to_Item"]["results"]
    assert [sorted(k for k in i if k != "__metadata") for i in items] == [["Material"], ["Material"]]
    assert [i["Material"] for i in items] == [PRODUCT, "0000000002"]
    v4 = client.get(SO_V4 + "SalesOrder('0000000002')", params={"$expand": "_Item($select=Product)"})
    assert v4.status_code == 200, v4.text
    assert {k for i in v4.json()["_Item"] for k in i if not k.startswith("@")} == {"Product"}


def test_put_may_repeat_read_only_values_unchanged_but_not_change_them(served, client):
    """The Cloud SDK PUTs back the entity it read, read-only properties (``sap:updatable="false"``) and
    V2 dates included: unchanged they are accepted, a changed one is still a ``read-only`` violation."""
    url = SO + "A_SalesOrder('0000000003')"
    read = client.get(url)
    entity = {k: v for k, v in read.json()["d"].items() if not isinstance(v, dict)}  # no __metadata, no links
    assert entity["CreationDate"].startswith("/Date(") and "CreatedByUser" in entity
    put = client.put(url, json={**entity, "PurchaseOrderByCustomer": "SDK"}, headers={"If-Match": read.headers["etag"]})
    assert put.status_code == 204, put.text
    assert client.get(url).json()["d"]["PurchaseOrderByCustomer"] == "SDK"
    server, _client, _record = served
    offline = server.validator.validate_call({"method": "PUT", "url": url, "payload": entity})
    assert not offline.valid, "kg validate, which holds no records, still calls the repeated values read-only"
    changed = client.put(url, json={**entity, "CreatedByUser": "SOMEONE"}, headers={"If-Match": "*"})
    details = changed.json()["error"]["innererror"]["errordetails"]
    assert changed.status_code == 400 and [(d["code"], d["target"]) for d in details] == [
        ("read-only", "/CreatedByUser")
    ]


def test_put_of_an_entity_read_without_expand_as_the_cloud_sdk_sends_it(client):
    """The SAP Cloud SDK 4.x (``update(entity).replaceWholeEntityWithPut()`` after a ``getByKey``)
    sends every property it read and an empty list for every to-many navigation property that was
    not expanded (``"to_Item": []``): no entity, so no deep update. A list with an entity still is one."""
    url = SO + "A_SalesOrder(SalesOrder='0000000004')"  # the SDK's key syntax
    read = client.get(url)
    entity = {k: v for k, v in read.json()["d"].items() if not isinstance(v, dict)}
    navs = {"to_Item": [], "to_Partner": [], "to_PaymentPlanItemDetails": [], "to_PricingElement": [], "to_Text": []}
    body = {**entity, "PurchaseOrderByCustomer": "PO-SDK-PUT", **navs}
    headers = {"If-Match": read.headers["etag"], "accept": "application/json"}
    put = client.put(url, json=body, headers=headers)
    assert put.status_code == 204, put.text
    again = client.get(url)
    assert again.json()["d"]["PurchaseOrderByCustomer"] == "PO-SDK-PUT"
    assert len(again.json()["d"]) == len(read.json()["d"]), "the empty lists are not stored"
    v2_empty = client.put(url, json={**body, "to_Item": {"results": []}}, headers={"If-Match": again.headers["etag"]})
    assert v2_empty.status_code == 204, v2_empty.text
    deep = client.put(url, json={**body, "to_Item": [{"Material": PRODUCT}]}, headers={"If-Match": "*"})
    details = deep.json()["error"]["innererror"]["errordetails"]
    assert deep.status_code == 400 and [(d["code"], d["target"]) for d in details] == [("read-only", "/to_Item")]


def test_sap_response_conventions(client):
    """Version headers, deferred links, V2 DateTimeOffset with its offset, an absolute Location, 406."""
    read = client.get(SO + "A_SalesOrder('0000000003')")
    assert read.headers["dataserviceversion"] == "2.0"
    body = read.json()["d"]
    assert body["to_Item"] == {"__deferred": {"uri": SO + "A_SalesOrder('0000000003')/to_Item"}}
    assert re.fullmatch(r"/Date\(\d+\+0000\)/", body["LastChangeDateTime"]), "Edm.DateTimeOffset"
    assert re.fullmatch(r"/Date\(\d+\)/", body["CreationDate"]), "Edm.DateTime"
    expanded = client.get(SO + "A_SalesOrder('0000000003')?$expand=to_Item").json()["d"]
    assert "results" in expanded["to_Item"] and "__deferred" in expanded["to_Partner"]
    assert client.get(SO_V4 + "SalesOrder('0000000003')").headers["odata-version"] == "4.0"
    created = client.post(SO + "A_SalesOrder", json=order())
    assert created.headers["location"] == f"{client.base_url}".rstrip("/") + SO + "A_SalesOrder('0000000021')"
    for url, accept in [
        (SO + "A_SalesOrder('0000000003')", "application/atom+xml"),
        (SO + "$metadata", "application/json"),
    ]:
        refused = client.get(url, headers={"accept": accept})
        assert refused.status_code == 406 and refused.json()["error"]["code"] == "not-acceptable", url
    assert client.get(SO + "A_SalesOrder?$format=json", headers={"accept": "application/atom+xml"}).status_code == 200
    assert client.get(SO + "$metadata", headers={"accept": "application/xml"}).status_code == 200
    assert client.get(SO + "A_SalesOrder/$count", headers={"accept": "application/json"}).text == "21"


def test_v4_deep_insert_along_a_rap_composition(client):
    created = client.post(
        SO_V4 + "SalesOrder",
        json={"SalesOrderType": "OR", "SoldToParty": CUSTOMER, "_Item": [{"Product": PRODUCT, "RequestedQuantity": 2}]},
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["@odata.context"] == "$metadata#SalesOrder/$entity" and body["@odata.etag"].startswith('W/"')
    items = client.get(SO_V4 + f"SalesOrder('{body['SalesOrder']}')/_Item").json()["value"]
    assert [(i["SalesOrder"], i["Product"]) for i in items] == [(body["SalesOrder"], PRODUCT)]


def test_a_reference_to_a_missing_product_is_rejected_then_accepted_after_repair(client):
    bad = order()
    bad["to_Item"]["results"][1]["Material"] = "NO-SUCH-BIKE"
    rejected = client.post(SO + "A_SalesOrder", json=bad)
    assert rejected.status_code == 400
    [detail] = rejected.json()["error"]["innererror"]["errordetails"]
    assert (detail["code"], detail["target"]) == ("unknown-reference", "/to_Item/1/Material")
    assert "A_Product" in detail["message"] and "API_PRODUCT_SRV" in detail["message"]
    assert client.get(SO + "A_SalesOrder/$count").text == "20", "nothing of the rejected order was stored"
    assert client.post(SO + "A_SalesOrder", json=order()).status_code == 201


@pytest.mark.parametrize(
    "root, source",
    [(SO, "API_SALES_ORDER_SRV.edmx"), (SO_V4, "CE_SALESORDER_0001.edmx")],
)
def test_metadata_is_the_source_document_byte_for_byte(client, root, source):
    answer = client.get(root + "$metadata")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/xml")
    assert answer.content == shared("odata", "s4-a2x", source).read_bytes()


def test_etags_on_reads_and_if_match_on_changes(served, client):
    server, _client, _record = served
    url = SO + "A_SalesOrder('0000000003')"
    read = client.get(url)
    tag = read.headers["etag"]
    assert read.json()["d"]["__metadata"]["etag"] == tag, "ConcurrencyMode=Fixed on LastChangeDateTime"
    change = {"PurchaseOrderByCustomer": "PO-4711"}
    assert client.patch(url, json=change).status_code == 428
    stale = client.patch(url, json=change, headers={"If-Match": 'W/"0000"'})
    assert stale.status_code == 412 and stale.json()["error"]["code"] == "precondition-failed"
    done = client.patch(url, json=change, headers={"If-Match": tag})
    assert done.status_code == 204, done.text
    assert done.headers["etag"] != tag and client.get(url).headers["etag"] == done.headers["etag"]
    assert client.patch(url, json=change, headers={"If-Match": tag}).status_code == 412, "the old ETag is stale"
    assert client.patch(url, json={"PurchaseOrderByCustomer": "PO-1"}, headers={"If-Match": "*"}).status_code == 204
    v4 = client.get(SO_V4 + "SalesOrder('0000000003')")
    assert v4.json()["@odata.etag"] == v4.headers["etag"], "Core.OptimisticConcurrency on the V4 set"
    assert "etag" not in client.get(SO + "A_SalesOrderItem?$top=1").json()["d"]["results"][0]["__metadata"]
    server.etags = False
    try:
        assert client.patch(url, json=change).status_code == 204, "--no-etags: no If-Match needed"
        assert "etag" not in client.get(url).headers
    finally:
        server.etags = True


def test_patch_merge_put_change_the_record(client):
    url = SO + "A_SalesOrder('0000000004')"
    tag = client.get(url).headers["etag"]
    patched = client.patch(url, json={"PurchaseOrderByCustomer": "PATCHED"}, headers={"If-Match": tag})
    assert patched.status_code == 204, patched.text
    assert client.get(url).json()["d"]["PurchaseOrderByCustomer"] == "PATCHED"
    merge = {"X-HTTP-Method": "MERGE", "If-Match": "*"}
    assert client.post(url, json={"d": {"PurchaseOrderByCustomer": "MERGED"}}, headers=merge).status_code == 204
    after = client.get(url).json()["d"]
    assert after["PurchaseOrderByCustomer"] == "MERGED" and after["SoldToParty"], "MERGE keeps other fields"
    replaced = client.put(url, json={"SalesOrderType": "OR"}, headers={"If-Match": "*"})
    assert replaced.status_code == 204, replaced.text
    assert "SoldToParty" not in client.get(url).json()["d"], "PUT replaces the whole entity"
    bad = client.patch(url, json={"SoldToParty": "0099999999"}, headers={"If-Match": "*"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "unknown-reference"
    missing = client.patch(SO + "A_SalesOrder('0099999999')", json={"PurchaseOrderByCustomer": "X"})
    assert missing.status_code == 404


def test_delete_removes_an_order_with_its_items(client):
    url = SO + "A_SalesOrder('0000000005')"
    assert client.get(url + "/to_Item").json()["d"]["results"], "generated items belong to the order"
    assert client.delete(url, headers={"If-Match": "*"}).status_code == 204
    assert client.get(url).status_code == 404
    items = client.get(SO + "A_SalesOrderItem?$filter=SalesOrder eq '0000000005'").json()["d"]["results"]
    assert items == [], "the order's items went with it"
    assert client.delete(url, headers={"If-Match": "*"}).status_code == 404


def test_changes_the_metadata_forbids_are_rejected_as_kg_validate_rejects_them(served, client):
    server, _client, record = served
    before = len(read_calls(record))
    url = SO + "A_SalesOrder('0000000007')"
    stamp = client.patch(url, json={"LastChangeDateTime": "/Date(1767225600000+0000)/"}, headers={"If-Match": "*"})
    assert stamp.status_code == 400
    [detail] = stamp.json()["error"]["innererror"]["errordetails"]
    assert (detail["code"], detail["target"]) == ("read-only", "/LastChangeDateTime"), 'sap:updatable="false"'
    line = client.get(SO + "A_SalesOrderScheduleLine?$top=1").json()["d"]["results"][0]["__metadata"]["uri"]
    for method in ("DELETE", "PATCH"):
        denied = client.request(method, line, json=None if method == "DELETE" else {"ScheduleLineCategory": "CP"})
        assert denied.status_code == 400, (method, denied.text)
        assert denied.json()["error"]["innererror"]["errordetails"][0]["code"] == "read-only"
    merge = {"X-HTTP-Method": "MERGE", "If-Match": "*"}
    assert client.post(url, json={"PurchaseOrderByCustomer": "OK"}, headers=merge).status_code == 204
    assert client.get(url).json()["d"]["PurchaseOrderByCustomer"] == "OK", "the denied calls changed nothing else"
    recorded = [call for _line, call in read_calls(record)][before:]
    assert [c["method"] for c in recorded] == ["PATCH", "GET", "DELETE", "PATCH", "MERGE", "GET"]
    # kg validate's engine on the calls as the recording holds them (the server's own instance of it:
    # a second one would cost seconds of shape loading and check nothing more)
    verdicts = server.validator.validate_calls(read_calls(record)[before:])
    assert [v.valid for v in verdicts] == [c["status"] < 400 for c in recorded], "kg validate agrees with the server"


def test_reset_restores_the_generated_records(client):
    assert client.delete(SO + "A_SalesOrder('0000000006')", headers={"If-Match": "*"}).status_code == 204
    assert client.post(SO + "A_SalesOrder", json=order()).status_code == 201
    assert client.get(SO + "A_SalesOrder/$count").text == "20"
    assert client.post("/$reset").status_code == 204
    assert client.get(SO + "A_SalesOrder('0000000006')").status_code == 200
    assert client.get(SO + "A_SalesOrder('0000000021')").status_code == 404
    dump = client.get("/$dump").json()
    assert (
        len(dump["API_SALES_ORDER_SRV"]["A_SalesOrder"]) == 20 and len(dump["CE_SALESORDER_0001"]["SalesOrder"]) == 20
    )


def test_pyodata_reads_creates_and_updates_with_csrf_and_etags(served, client):
    """SAP's own Python OData client, as its documentation sets it up (CSRF token by HEAD)."""
    server, _client, _record = served
    base = str(client.base_url).rstrip("/") + SO
    server.csrf = True
    try:
        session = requests.Session()
        token = session.head(base, headers={"x-csrf-token": "fetch"}).headers["x-csrf-token"]
        session.headers["x-csrf-token"] = token
        service = pyodata.Client(base, session)  # reads $metadata
        read = service.entity_sets.A_SalesOrder.get_entity("0000000003").execute()
        assert read.SalesOrder == "0000000003" and read.etag.startswith('W/"')
        create = service.entity_sets.A_SalesOrder.create_entity()
        created = create.set(**order(to_Item=[order()["to_Item"]["results"][0]])).execute()
        assert created.SalesOrder == "0000000021"
        items = created.nav("to_Item").get_entities().execute()
        assert [(i.SalesOrder, i.Material) for i in items] == [("0000000021", PRODUCT)]
        update = service.entity_sets.A_SalesOrder.update_entity(SalesOrder="0000000003")
        update.set(PurchaseOrderByCustomer="PYODATA").add_headers({"If-Match": read.etag})
        update.execute()
        assert client.get(SO + "A_SalesOrder('0000000003')").json()["d"]["PurchaseOrderByCustomer"] == "PYODATA"
    finally:
        server.csrf = False


# ---------------------------------------------------------------- SAP code lists


@pytest.fixture(scope="module")
def coded(tmp_path_factory):
    """API_SALES_ORDER_SRV built with SAP's code lists (kg build --codes data/sap/codes --code-bindings ...)."""
    store = tmp_path_factory.mktemp("a2x-codes") / "store"
    codes = ROOT / "data" / "sap" / "codes"
    build_store(
        BuildOptions(
            odata=[shared("odata", "s4-a2x", "API_SALES_ORDER_SRV.edmx")],
            codes=[codes],
            code_bindings=codes / "bindings.yaml",
            store=StoreLocation.parse(store),
            shapes=False,
        )
    )
    with running(open_server(StoreHandle.open(store), csrf=False)) as client:
        yield client


def test_an_invented_code_is_rejected_then_accepted_after_repair(coded):
    payload = {**order(), "SalesOrderType": "ZZZ", "SalesOrganization": "1010", "DistributionChannel": "10"}
    rejected = coded.post(SO + "A_SalesOrder", json=payload)
    assert rejected.status_code == 400, rejected.text
    details = rejected.json()["error"]["innererror"]["errordetails"]
    assert [(d["code"], d["target"]) for d in details] == [("invalid-code", "/SalesOrderType")]
    assert "OR" in details[0]["message"].split("(", 1)[1], "the hint names SAP's codes"
    repaired = coded.post(SO + "A_SalesOrder", json={**payload, "SalesOrderType": "OR"})
    assert repaired.status_code == 201, repaired.text
    assert repaired.json()["d"]["SalesOrderType"] == "OR"
