"""kg serve: a real HTTP server on a free loopback port, driven with httpx, on the demo store.

The server is started once per module with a recording file; tests that change data reset it
through the library (``Data.reset``) so each starts from the generated records.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import DEMO, DEMO_ORDER, running
from processkg.graph.handle import StoreHandle
from processkg.serve import etags
from processkg.serve.app import open_server
from processkg.serve.data import Data
from processkg.serve.values import comparable
from processkg.validate.calls import Validator, read_calls

V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
V4 = "/sap/opu/odata4/sap/demo_procurement/"


@pytest.fixture(scope="module")
def served(demo_store, tmp_path_factory):
    record = tmp_path_factory.mktemp("serve") / "calls.jsonl"
    server = open_server(StoreHandle.open(demo_store), record=record, csrf=False, allow_reset=True)
    with running(server, timeout=30) as client:
        yield server, client, record


@pytest.fixture
def client(served):
    server, client, _record = served
    server.data.reset()
    return client


def test_service_document_lists_the_entity_sets_in_each_version(client):
    v2 = client.get(V2).json()
    assert "A_SalesOrder" in v2["d"]["EntitySets"]
    v4 = client.get(V4).json()
    assert {"name": "PurchaseOrder", "url": "PurchaseOrder", "kind": "EntitySet"} in v4["value"]


def test_collection_with_filter_select_orderby_top_skip_and_count(client):
    url = (
        V2 + "A_SalesOrder?$filter=SalesOrderType eq 'OR' or SalesOrderType eq 'CR'"
        "&$select=SalesOrder,SalesOrderType&$orderby=SalesOrder desc&$top=2&$skip=1&$inlinecount=allpages"
    )
    body = client.get(url).json()["d"]
    rows = body["results"]
    assert len(rows) == 2 and all(set(r) == {"__metadata", "SalesOrder", "SalesOrderType"} for r in rows)
    assert all(r["SalesOrderType"] in ("OR", "CR") for r in rows)
    assert rows[0]["SalesOrder"] > rows[1]["SalesOrder"]
    assert int(body["__count"]) >= 3


def test_string_functions_and_not(client):
    rows = client.get(
        V2 + "A_SalesOrder?$filter=startswith(SalesOrder,'000000001') and not (SalesOrder eq '0000000010')"
    ).json()["d"]["results"]
    assert sorted(r["SalesOrder"] for r in rows) == [f"00000000{i}" for i in range(11, 20)]
    rows = client.get(V2 + "A_SalesOrder?$filter=substringof('17',SalesOrder)").json()["d"]["results"]
    assert [r["SalesOrder"] for r in rows] == ["0000000017"]


def test_v4_json_and_count(client):
    body = client.get(V4 + "PurchaseOrder?$top=1&$count=true").json()
    assert body["@odata.context"] == "$metadata#PurchaseOrder"
    assert body["@odata.count"] == 20 and len(body["value"]) == 1
    assert "__metadata" not in body["value"][0]


def test_read_by_key_and_along_navigation(client):
    order = client.get(V2 + "A_SalesOrder('0000000003')").json()["d"]
    assert order["SalesOrder"] == "0000000003"
    items = client.get(V2 + "A_SalesOrder('0000000003')/to_Item").json()["d"]["results"]
    assert items and all(i["SalesOrder"] == "0000000003" for i in items)
    assert client.get(V2 + "A_SalesOrder('9999999999')").status_code == 404


def test_deep_insert_of_a_sales_order_with_items_then_expand(client):
    payload = {
        **DEMO_ORDER,
        "TransactionCurrency": "EUR",
        "to_Item": [
            {
                "SalesOrderItem": "10",
                "Material": "CITY-BIKE-28",
                "RequestedQuantity": "5",
                "RequestedQuantityUnit": "PC",
            },
            {
                "SalesOrderItem": "20",
                "Material": "E-TREKKING-500",
                "RequestedQuantity": "2",
                "RequestedQuantityUnit": "PC",
            },
        ],
    }
    created = client.post(V2 + "A_SalesOrder", json=payload)
    assert created.status_code == 201, created.text
    number = created.json()["d"]["SalesOrder"]
    assert number == "0000000021", "the server assigns the next number"
    assert created.headers["location"].endswith(f"A_SalesOrder('{number}')")
    read = client.get(V2 + f"A_SalesOrder('{number}')?$expand=to_Item").json()["d"]
    assert [i["SalesOrderItem"] for i in read["to_Item"]["results"]] == ["10", "20"]
    assert all(i["SalesOrder"] == number for i in read["to_Item"]["results"])


def test_invented_code_is_rejected_with_details_then_accepted_after_repair(client):
    payload = {
        "SalesOrderType": "XX",
        "SalesOrganization": "1000",
        "DistributionChannel": "10",
        "OrganizationDivision": "00",
        "SoldToParty": "0000000001",
    }
    rejected = client.post(V2 + "A_SalesOrder", json=payload)
    assert rejected.status_code == 400
    details = rejected.json()["error"]["innererror"]["errordetails"]
    assert [(d["code"], d["target"]) for d in details] == [("invalid-code", "/SalesOrderType")]
    assert "OR" in details[0]["message"], "the message names the valid codes"
    before = client.get(V2 + "A_SalesOrder/$count").text
    assert before == "20", "a rejected call does not touch the data"
    repaired = client.post(V2 + "A_SalesOrder", json={**payload, "SalesOrderType": "OR"})
    assert repaired.status_code == 201, repaired.text


def test_bad_requests_get_status_and_an_odata_error_body(client):
    cases = [
        ("GET", "/nowhere", None, 404),
        ("GET", V2 + "A_SalesOrder?$search=bike", None, 501),
        ("GET", V2 + "A_SalesOrder?$filter=SalesOrder eq", None, 400),
        ("GET", V2 + "A_SalesOrder?$filter=round(SalesOrder) eq 1", None, 501),
        ("POST", V2 + "A_SalesOrder", b"{not json", 400),
        ("POST", V2 + "A_SalesOrder", b"[" * 10 + b"]" * 10, 400),
        ("POST", V2 + "A_SalesOrder", b'{"x": "' + b"a" * 1_100_000 + b'"}', 413),
        ("PUT", V2 + "A_SalesOrder", b"{}", 400),  # a PUT names one entity by its key
        ("PATCH", V2, b"{}", 405),
        ("GET", V2 + "NoSuchSet", None, 400),
    ]
    for method, url, content, status in cases:
        answer = client.request(method, url, content=content)
        assert answer.status_code == status, (method, url, answer.text[:200])
        assert "code" in answer.json()["error"], (method, url)


def test_recording_gives_kg_validate_the_verdicts_the_server_gave(served, client, demo_store):
    _server, _client, record = served
    client.post(V2 + "A_SalesOrder", json={"SalesOrderType": "ZZ"})
    client.post(V2 + "A_SalesOrder", json={"SalesOrderType": "OR", "SoldToParty": "1"})
    client.get(V2 + "A_SalesOrder?$select=NoSuchProperty")
    recorded = [call for _line, call in read_calls(record)]
    assert recorded and all("status" in c for c in recorded)
    verdicts = Validator(StoreHandle.open(demo_store)).validate_calls(read_calls(record))
    for call, verdict in zip(recorded, verdicts, strict=True):
        if call["status"] in (200, 201):
            assert verdict.valid, (call, verdict.violations)
        if call.get("error") == "invalid-call":
            assert not verdict.valid, call
        if call.get("error") == "unknown-reference":  # a verdict on the data, which kg validate does not see
            assert verdict.valid, call
    assert {"invalid-call", "unknown-reference"} <= {c.get("error") for c in recorded}


def test_fifty_concurrent_clients_lose_no_recorded_call_and_get_no_500(served, client):
    _server, http, record = served
    before = len(record.read_text(encoding="utf-8").splitlines())
    base = str(http.base_url)

    def work(i: int) -> int:
        with httpx.Client(base_url=base, timeout=60) as c:
            if i % 2:
                return c.get(V2 + f"A_SalesOrder?$top=5&$skip={i % 7}").status_code
            return c.post(
                V2 + "A_SalesOrder",
                json={
                    "SalesOrderType": "OR",
                    "SalesOrganization": "1000",
                    "DistributionChannel": "10",
                    "OrganizationDivision": "00",
                    "SoldToParty": "0000000001",
                },
            ).status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(work, range(100)))
    assert 500 not in statuses and set(statuses) <= {200, 201}
    lines = record.read_text(encoding="utf-8").splitlines()
    assert len(lines) - before == 100
    assert all(json.loads(line)["status"] for line in lines)
    created = http.get(V2 + "A_SalesOrder/$count").text
    assert created == "70", "20 generated plus 50 created, each with its own number"


def test_csrf_token_is_required_for_changes_when_switched_on(served, client):
    server, _client, _record = served
    server.csrf = True
    try:
        denied = client.post(V2 + "A_SalesOrder", json={"SalesOrderType": "OR"})
        assert denied.status_code == 403 and denied.headers["x-csrf-token"] == "Required"
        token = client.get(V2, headers={"x-csrf-token": "Fetch"}).headers["x-csrf-token"]
        allowed = client.post(
            V2 + "A_SalesOrder",
            json={
                "SalesOrderType": "OR",
                "SalesOrganization": "1000",
                "DistributionChannel": "10",
                "OrganizationDivision": "00",
                "SoldToParty": "0000000001",
            },
            headers={"x-csrf-token": token},
        )
        assert allowed.status_code == 201, allowed.text
    finally:
        server.csrf = False


def multipart(boundary: str, parts: list[str]) -> bytes:
    return ("".join(f"--{boundary}\r\n{p}" for p in parts) + f"--{boundary}--\r\n").encode()


def http_part(method: str, url: str, body: dict | None = None) -> str:
    text = json.dumps(body) if body is not None else ""
    return (
        f"Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        f"{method} {url} HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{text}\r\n"
    )


def changeset(boundary: str, parts: list[str]) -> str:
    return f"Content-Type: multipart/mixed; boundary={boundary}\r\n\r\n" + multipart(boundary, parts).decode()


def test_batch_change_set_rolls_back_as_a_whole(client):
    body = multipart(
        "batch_1",
        [
            http_part("GET", "A_SalesOrder/$count"),
            changeset(
                "changeset_1",
                [
                    http_part("POST", "A_SalesOrder", DEMO_ORDER),
                    http_part("POST", "A_SalesOrder", {**DEMO_ORDER, "SalesOrderType": "XX"}),
                ],
            ),
            changeset("changeset_2", [http_part("POST", "A_SalesOrder", DEMO_ORDER)]),
        ],
    )
    answer = client.post(V2 + "$batch", content=body, headers={"content-type": "multipart/mixed; boundary=batch_1"})
    assert answer.status_code == 202, answer.text
    text = answer.text
    assert "HTTP/1.1 200 OK" in text and "HTTP/1.1 400 Bad Request" in text and "HTTP/1.1 201 Created" in text
    assert client.get(V2 + "A_SalesOrder/$count").text == "21", "the failed change set left nothing behind"


def test_v4_json_batch_with_an_atomicity_group(client):
    requests = {
        "requests": [
            {"id": "1", "method": "GET", "url": "PurchaseOrder?$top=1"},
            {"id": "2", "method": "GET", "url": "NoSuchSet", "atomicityGroup": "g1"},
        ]
    }
    answer = client.post(V4 + "$batch", json=requests)
    assert answer.status_code == 200
    responses = answer.json()["responses"]
    assert [r["status"] for r in responses] == [200, 400]
    assert len(responses[0]["body"]["value"]) == 1


@pytest.mark.parametrize(
    "root, source",
    [
        (V2, "DEMO_SALES_ORDER_SRV.edmx"),
        (V4, "DEMO_PROCUREMENT.xml"),
        ("/sap/opu/odata/sap/DEMO_DELIVERY_BILLING_SRV/", "DEMO_DELIVERY_BILLING_SRV/metadata.xml"),
    ],
)
def test_metadata_is_the_source_document_byte_for_byte(client, root, source):
    answer = client.get(root + "$metadata")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/xml")
    assert answer.content == (DEMO / "odata" / source).read_bytes()


def test_a_reference_to_a_missing_record_is_rejected_with_a_hint_then_accepted(client):
    rejected = client.post(V2 + "A_SalesOrder", json={**DEMO_ORDER, "SoldToParty": "0099999999"})
    assert rejected.status_code == 400, rejected.text
    error = rejected.json()["error"]
    assert error["code"] == "unknown-reference"
    [detail] = error["innererror"]["errordetails"]
    assert (detail["code"], detail["target"]) == ("unknown-reference", "/SoldToParty")
    assert "A_Customer" in detail["message"] and "0000000001" in detail["message"], "it names records that exist"
    assert client.get(V2 + "A_SalesOrder/$count").text == "20"
    assert client.post(V2 + "A_SalesOrder", json={**DEMO_ORDER, "SoldToParty": "0000000002"}).status_code == 201


def test_an_item_needs_its_parent_and_a_deep_insert_brings_it(client):
    item = {"SalesOrder": "0000000099", "SalesOrderItem": "10", "Material": "CITY-BIKE-28"}
    orphan = client.post(V2 + "A_SalesOrderItem", json=item)
    assert orphan.status_code == 400
    [detail] = orphan.json()["error"]["innererror"]["errordetails"]
    assert (detail["code"], detail["target"]) == ("unknown-reference", "/SalesOrder")
    assert client.post(V2 + "A_SalesOrderItem", json={**item, "SalesOrder": "0000000005"}).status_code == 201
    deep = client.post(V2 + "A_SalesOrder", json={**DEMO_ORDER, "to_Item": {"results": [{"SalesOrderItem": "10"}]}})
    assert deep.status_code == 201, "the parent of a deep-inserted item is created with it"
    bad_child = client.post(V2 + "A_CreditMemoRequest", json={"ReferenceSDDocument": "0000000077"})
    assert [d["target"] for d in bad_child.json()["error"]["innererror"]["errordetails"]] == ["/ReferenceSDDocument"]


def test_reset_restores_the_generated_records_and_dump_returns_them(served, client, tmp_path):
    server, _client, _record = served
    assert client.post(V2 + "A_SalesOrder", json=DEMO_ORDER).status_code == 201
    dumped = client.get("/$dump").json()
    assert len(dumped["DEMO_SALES_ORDER_SRV"]["A_SalesOrder"]) == 21
    assert client.post("/$reset").status_code == 204
    assert client.get(V2 + "A_SalesOrder/$count").text == "20"
    assert client.get("/$reset").status_code == 405
    for name, rows in dumped["DEMO_SALES_ORDER_SRV"].items():
        (tmp_path / "DEMO_SALES_ORDER_SRV").mkdir(exist_ok=True)
        (tmp_path / "DEMO_SALES_ORDER_SRV" / f"{name}.json").write_text(json.dumps(rows), encoding="utf-8")
    reloaded = Data(server.model, folder=tmp_path)
    for name, rows in dumped["DEMO_SALES_ORDER_SRV"].items():
        table = reloaded.table("DEMO_SALES_ORDER_SRV", name)
        assert [same_values(table.type, r) for r in rows] == [same_values(table.type, r) for r in table.rows.values()]


def same_values(t, record: dict) -> dict:
    """A record's values as OData compares them (one instant written two ways is one value)."""
    return {k: comparable(v, t.props[k].edm_type) for k, v in record.items()}


def test_kg_serve_help_lists_its_options():
    from click.testing import CliRunner

    from processkg.cli import main

    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in (
        "--store",
        "--host",
        "--port",
        "--allowed-host",
        "--allow-reset",
        "--record",
        "--data",
        "--no-csrf",
        "--no-etags",
        "/$reset",
    ):
        assert option in result.output


def test_an_etag_kept_for_a_record_follows_its_changes_in_place():
    """etags.etag keeps the ETag of a record it hashed; a change in place (as an operation's effect makes,
    serve/operations.py) gives the hash of the changed record, and the first ETag once it is back."""
    record: dict[str, object] = {"SalesOrder": "0000000001", "OverallSDProcessStatus": "A", "Net": "10.00"}
    first = etags.etag(record)
    assert etags.etag(record) == first
    record["OverallSDProcessStatus"] = "C"
    changed = etags.etag(record)
    assert changed != first and changed == etags.etag(dict(record))
    del record["Net"]
    assert etags.etag(record) == etags.etag(dict(record)) not in (first, changed)
    record["Net"], record["OverallSDProcessStatus"] = "10.00", "A"
    assert etags.etag(record) == first
    nested: dict[str, object] = {"SalesOrder": "1", "to_Text": [{"Text": "a"}]}  # not kept: its list could change
    before = etags.etag(nested)
    nested["to_Text"][0]["Text"] = "b"  # type: ignore[index]
    assert etags.etag(nested) != before


def test_reset_puts_back_a_record_changed_in_place_and_keeps_the_unchanged_tables(served):
    """An operation changes a stored record in place (serve/operations.py): the reset still restores it, and
    a table nothing changed keeps its records and indexes (a reset copies only what differs)."""
    server, _client, _record = served
    data = server.data
    data.reset()
    orders, items = (
        data.table("DEMO_SALES_ORDER_SRV", "A_SalesOrder"),
        data.table("DEMO_SALES_ORDER_SRV", "A_SalesOrderItem"),
    )
    assert orders is not None and items is not None
    first = next(iter(orders.rows.values()))
    before, kept = dict(first), items.rows
    first["PurchaseOrderByCustomer"] = "changed in place"
    data.reset()
    assert next(iter(orders.rows.values())) == before
    assert items.rows is kept
