"""processkg.tools without a face: the toolbox's answers and argument errors, and the OData client
(service roots, SAP's CSRF protocol against a real kg serve, credentials from the environment, and
the rule that requests, and so credentials, go only under the configured OData root)."""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from conftest import A2X_ORDER
from processkg.errors import ODataClientError, ODataURLError
from processkg.graph.handle import StoreHandle
from processkg.tools.answers import MAX_ROWS, ONE_RECORD, initial, per_record, trimmed
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient, service_root
from processkg.tools.specs import tool_list
from processkg.tools.toolbox import Toolbox, v2_date

V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1000",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000001",
}


@pytest.fixture(scope="module")
def served(demo_store, tmp_path_factory):
    record = tmp_path_factory.mktemp("tools") / "calls.jsonl"
    with LocalServer(StoreHandle.open(demo_store), record=record) as server:
        yield server


@pytest.fixture(scope="module")
def toolbox(demo_store, served):
    box = Toolbox(StoreHandle.open(demo_store), ODataClient(served.url), allow_writes=True)
    yield box
    box.close()


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://h:1/sap/opu/odata/sap/API_X_SRV/A_SalesOrder('1')/to_Item", "http://h:1/sap/opu/odata/sap/API_X_SRV/"),
        (
            "http://h:1/sap/opu/odata4/sap/api_po/srvd_a2x/sap/purchaseorder/0001/PurchaseOrder",
            "http://h:1/sap/opu/odata4/sap/api_po/srvd_a2x/sap/purchaseorder/0001/",
        ),
        (
            "http://h:1/sap/opu/odata4/sap/demo_procurement/PurchaseOrder",
            "http://h:1/sap/opu/odata4/sap/demo_procurement/",
        ),
        ("http://h:1/odata/Northwind.svc/Orders", "http://h:1/odata/Northwind.svc/"),
    ],
)
def test_service_root_follows_sap_gateway_paths(url, root):
    assert service_root(url) == root


def test_the_tool_list_is_five_tools_and_call_only_reads_unless_writes_are_allowed():
    read_only, writes = tool_list(False), tool_list(True)
    assert [s.name for s in read_only] == ["find_entity_sets", "describe", "next_steps", "validate_call", "call"]
    assert all(s.read_only and not s.destructive for s in read_only)
    call = writes[-1]
    assert not call.read_only and call.destructive and "DELETE" in call.input_schema["properties"]["method"]["enum"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("describe", {"service": "DEMO_SALES_ORDER_SRV"}, "argument 'entity_set' must be a non-empty string"),
        ("describe", {"service": "NOPE", "entity_set": "A"}, "unknown service 'NOPE'"),
        ("find_entity_sets", {"task": "orders", "k": 0}, "k must be between 1 and 20"),
        ("find_entity_sets", {"task": "orders", "k": "five"}, "argument 'k' must be an integer"),
        ("validate_call", {"method": "FETCH", "url": V2}, "method must be one of GET, POST"),
        (
            "call",
            {"method": "POST", "url": V2 + "A_SalesOrder", "body": "[1]"},
            "the body of a POST must be a JSON object",
        ),
        ("shout", {}, "unknown tool 'shout'"),
    ],
)
def test_bad_arguments_are_error_answers_the_agent_can_read(toolbox, name, arguments, message):
    answer, is_error = toolbox.run(name, arguments)
    assert is_error and message in answer["error"]


def test_a_read_only_toolbox_refuses_writes_before_sending(demo_store, served):
    box = Toolbox(StoreHandle.open(demo_store), ODataClient(served.url))
    answer, is_error = box.run("call", {"method": "DELETE", "url": V2 + "A_SalesOrder('0000000001')"})
    assert is_error and "writes are not allowed" in answer["error"]
    assert box.client is not None and box.client.exchanges == []


def test_validate_call_reads_a_url_relative_to_the_server(toolbox):
    answer, _ = toolbox.run("validate_call", {"method": "GET", "url": V2 + "A_SalesOrder?$select=Colour"})
    assert answer["valid"] is False and answer["violations"][0]["kind"] == "unknown-property"


def test_collections_are_cut_for_the_agent(toolbox):
    answer, _ = toolbox.run("call", {"method": "GET", "url": V2 + "A_SalesOrder?$top=3"})
    assert answer["status"] == 200 and len(answer["answer"]["d"]["results"]) == 3
    rows = [{"n": i} for i in range(MAX_ROWS + 5)]
    assert trimmed({"d": {"results": rows}})[0]["d"]["processkg_truncated"] == "5 more records not shown"
    assert len(trimmed({"value": rows})[0]["value"]) == MAX_ROWS


def test_a_stale_csrf_token_is_fetched_again_once(served):
    client = ODataClient(served.url)
    client.tokens[service_root(client.url(V2))] = "stale"
    exchange = client.send("POST", V2 + "A_SalesOrder", ORDER)
    assert exchange.status == 201
    assert [e.status for e in client.exchanges] == [403, 201]
    client.close()


def test_an_unreachable_server_is_one_clear_error():
    client = ODataClient("http://127.0.0.1:9/")
    with pytest.raises(ODataClientError, match=re.escape("cannot reach http://127.0.0.1:9/sap/opu")):
        client.send("GET", V2 + "A_SalesOrder")


def test_credentials_come_from_the_environment_and_stay_out_of_the_exchanges(monkeypatch):
    seen: ClassVar[list[str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"value": []}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("PROCESSKG_ODATA_USER", "alice")
        monkeypatch.setenv("PROCESSKG_ODATA_PASSWORD", "s3cret")
        basic = ODataClient(f"http://127.0.0.1:{server.server_address[1]}/odata/")
        assert basic.send("GET", "Orders").answer == {"value": []}
        monkeypatch.setenv("PROCESSKG_ODATA_TOKEN", "t0ken")
        bearer = ODataClient(f"http://127.0.0.1:{server.server_address[1]}/odata/")
        bearer.send("GET", "Orders")
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["Basic YWxpY2U6czNjcmV0", "Bearer t0ken"]
    assert all(
        "s3cret" not in str(e.as_dict()) and "t0ken" not in str(e.as_dict()) for e in basic.exchanges + bearer.exchanges
    )


# ---------------------------------------------------------------- requests stay under the OData root


class Recorder(http.server.ThreadingHTTPServer):
    """A real HTTP server on a free loopback port that records (path, Authorization) of every request;
    it answers an empty V2 collection, or a redirect to ``redirect_to`` for a path with ``REDIRECT``."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), RecordingHandler)
        self.seen: list[tuple[str, str]] = []
        self.redirect_to = ""
        self.port = self.server_address[1]


class RecordingHandler(http.server.BaseHTTPRequestHandler):
    server: Recorder

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization", "")))
        if "REDIRECT" in self.path and self.server.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b'{"d": {"results": []}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def recorders() -> Iterator[tuple[Recorder, Recorder]]:
    """The OData server the client is configured for, and another server on another port."""
    servers = (Recorder(), Recorder())
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    servers[0].redirect_to = f"http://127.0.0.1:{servers[1].port}/stolen"
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def rooted(demo_store, recorders) -> Iterator[Toolbox]:
    """A toolbox whose client has a bearer token and the root V2 (of DEMO_SALES_ORDER_SRV) on the first recorder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROCESSKG_ODATA_TOKEN", "t0ken")
        client = ODataClient(f"http://127.0.0.1:{recorders[0].port}{V2}")
    box = Toolbox(StoreHandle.open(demo_store), client)
    yield box
    box.close()


@pytest.fixture
def fresh(recorders) -> tuple[Recorder, Recorder]:
    for server in recorders:
        server.seen.clear()
    return recorders


OTHER_SET = "DEMO_DELIVERY_BILLING_SRV/A_OutbDeliveryHeader"  # a valid call, in another service than the root


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("http://127.0.0.1:{other}" + V2 + "A_SalesOrder", id="absolute-other-port"),
        pytest.param("http://localhost:{port}" + V2 + "A_SalesOrder", id="absolute-other-host"),
        pytest.param("https://127.0.0.1:{port}" + V2 + "A_SalesOrder", id="other-scheme"),
        pytest.param("//127.0.0.1:{other}" + V2 + "A_SalesOrder", id="protocol-relative"),
        pytest.param("http://127.0.0.1:{port}@127.0.0.1:{other}" + V2 + "A_SalesOrder", id="user-at-other-host"),
        pytest.param("http://user@127.0.0.1:{port}" + V2 + "A_SalesOrder", id="user-at-same-host"),
        pytest.param("http://127.0.0.1:{port}/sap/opu/odata/sap/" + OTHER_SET, id="same-origin-outside-root"),
        pytest.param("../" + OTHER_SET, id="dot-dot"),
        pytest.param(V2 + "../" + OTHER_SET, id="dot-dot-in-absolute-path"),
        pytest.param("%2e%2e/" + OTHER_SET, id="percent-2e"),
        pytest.param("%2E%2E/" + OTHER_SET, id="percent-2E"),
        pytest.param(".%2e/" + OTHER_SET, id="dot-percent-2e"),
        pytest.param("%252e%252e/" + OTHER_SET, id="double-encoded-dots"),
        pytest.param("..%2f" + OTHER_SET, id="encoded-slash"),
        pytest.param("..\\" + OTHER_SET, id="backslash-dot-dot"),
        pytest.param("\\\\127.0.0.1:{other}" + V2 + "A_SalesOrder", id="backslashes-as-authority"),
        pytest.param("/\\127.0.0.1:{other}" + V2 + "A_SalesOrder", id="slash-backslash-authority"),
        pytest.param("\uff0e\uff0e\uff0f" + OTHER_SET, id="fullwidth-dots-and-slash"),
        pytest.param("\uff0f\uff0f127.0.0.1:{other}" + V2 + "A_SalesOrder", id="fullwidth-slashes"),
        pytest.param("http\uff1a//127.0.0.1:{other}" + V2 + "A_SalesOrder", id="fullwidth-colon"),
        pytest.param("http://127.0.0.1:{other}/stolen", id="absolute-anything"),
    ],
)
def test_a_url_outside_the_odata_root_is_refused_and_nothing_is_sent(rooted, fresh, url):
    own, other = fresh
    url = url.format(port=own.port, other=other.port)
    root = f"http://127.0.0.1:{own.port}{V2}"
    for tool in ("call", "validate_call"):
        answer, is_error = rooted.run(tool, {"method": "GET", "url": url})
        assert is_error, (tool, answer)
        assert f"is not under the OData root {root}" in answer["error"]
    with pytest.raises(ODataURLError, match=re.escape(root)):
        rooted.client.send("GET", url)  # kg agent and kg eval send through the client directly
    assert other.seen == [] and own.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "A_SalesOrder",
        "./A_SalesOrder?$top=1",
        "A_Customer/../A_SalesOrder",
        V2 + "A_SalesOrder",
        "http://127.0.0.1:{port}" + V2 + "A_SalesOrder",
        "HTTP://127.0.0.1:{port}" + V2 + "A_SalesOrder",
    ],
)
def test_a_url_under_the_odata_root_is_sent_there_with_the_credentials(rooted, fresh, url):
    own, other = fresh
    answer, is_error = rooted.run("call", {"method": "GET", "url": url.format(port=own.port)})
    assert not is_error and answer["status"] == 200
    assert [(path.split("?")[0], auth) for path, auth in own.seen] == [(V2 + "A_SalesOrder", "Bearer t0ken")]
    assert other.seen == []


def test_a_redirect_to_another_origin_is_not_followed(rooted, fresh):
    own, other = fresh
    answer, is_error = rooted.run("call", {"method": "GET", "url": "A_SalesOrder('REDIRECT')"})
    assert not is_error and answer["sent"] is True and answer["status"] == 302
    assert len(own.seen) == 1 and other.seen == []


# ---------------------------------------------------------------- the protocol, against kg serve of A2X

SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
PO = "/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV/"


@pytest.fixture(scope="module")
def a2x_box(tasks_store) -> Iterator[Toolbox]:
    """A writing toolbox on the tasks store, calling a real kg serve of it (CSRF and ETags on)."""
    with LocalServer(StoreHandle.open(tasks_store)) as server:
        box = Toolbox(StoreHandle.open(tasks_store), ODataClient(server.url), allow_writes=True)
        yield box
        box.close()


def sent(box: Toolbox, since: int) -> list[tuple[str, int, str | None]]:
    """(method, status, If-Match) of the exchanges after the first ``since``."""
    assert box.client is not None
    return [(e.method, e.status, e.headers.get("If-Match")) for e in box.client.exchanges[since:]]


def test_a_change_without_if_match_is_refused_by_the_server(a2x_box):
    """What the agent met before: A_SalesOrder has ETags, and kg serve answers 428 without If-Match."""
    assert a2x_box.client is not None
    exchange = a2x_box.client.send("PATCH", SO + "A_SalesOrder('0000000005')", {"PurchaseOrderByCustomer": "PO-1"})
    assert exchange.status == 428


def test_call_patches_and_deletes_an_entity_with_an_etag_without_the_agent_giving_one(a2x_box):
    assert a2x_box.client is not None
    # an order nothing follows yet: a generated one is delivered, and kg serve keeps it (follow-ons-exist)
    created, _ = a2x_box.run("call", {"method": "POST", "url": SO + "A_SalesOrder", "body": A2X_ORDER})
    assert created["status"] == 201, created
    fresh = SO + f"A_SalesOrder('{created['answer']['d']['SalesOrder']}')"
    before = len(a2x_box.client.exchanges)
    url = SO + "A_SalesOrder('0000000003')"
    answer, is_error = a2x_box.run("call", {"method": "PATCH", "url": url, "body": {"PurchaseOrderByCustomer": "PO-7"}})
    assert not is_error and answer["status"] == 204, answer
    assert answer["notes"][0].startswith('If-Match: W/"') and "a GET of the entity" in answer["notes"][0]
    read, _ = a2x_box.run("call", {"method": "GET", "url": url, "select": ["PurchaseOrderByCustomer"]})
    assert read["answer"] == {"d": {"PurchaseOrderByCustomer": "PO-7"}}
    deleted, _ = a2x_box.run("call", {"method": "DELETE", "url": fresh})
    assert deleted["status"] == 204, deleted
    gone, _ = a2x_box.run("call", {"method": "GET", "url": fresh})
    assert gone["status"] == 404
    steps = sent(a2x_box, before)
    assert [(m, s) for m, s, _ in steps] == [
        ("GET", 200),
        ("PATCH", 204),
        ("GET", 200),
        ("GET", 200),
        ("DELETE", 204),
        ("GET", 404),
    ]
    assert steps[1][2] is not None and steps[1][2].startswith('W/"') and steps[4][2] is not None


def test_an_if_match_given_is_sent_as_it_is(a2x_box):
    assert a2x_box.client is not None
    before = len(a2x_box.client.exchanges)
    url = SO + "A_SalesOrder('0000000006')"
    stale, _ = a2x_box.run(
        "call", {"method": "PATCH", "url": url, "body": {"PurchaseOrderByCustomer": "X"}, "if_match": 'W/"old"'}
    )
    assert stale["status"] == 412 and stale["answer"]["error"]["code"] == "precondition-failed"
    star, _ = a2x_box.run(
        "call", {"method": "PATCH", "url": url, "body": {"PurchaseOrderByCustomer": "X"}, "if_match": "*"}
    )
    assert star["status"] == 204 and "notes" not in star
    assert sent(a2x_box, before) == [("PATCH", 412, 'W/"old"'), ("PATCH", 204, "*")]


def test_iso_dates_are_sent_as_v2_dates_and_the_answer_says_so(a2x_box):
    url = SO + "A_SalesOrder('0000000007')"
    body = {"RequestedDeliveryDate": "2026-07-01", "CustomerPurchaseOrderDate": "2026-06-30T22:00:00-02:00"}
    checked, _ = a2x_box.run("validate_call", {"method": "PATCH", "url": url, "body": body})
    assert checked["valid"] is True
    answer, _ = a2x_box.run("call", {"method": "PATCH", "url": url, "body": body})
    assert answer["status"] == 204, answer
    assert answer["notes"][:2] == [
        "/RequestedDeliveryDate: 2026-07-01 sent as /Date(1782864000000)/ (OData V2 JSON date)",
        "/CustomerPurchaseOrderDate: 2026-06-30T22:00:00-02:00 sent as /Date(1782864000000)/ (OData V2 JSON date)",
    ]
    read, _ = a2x_box.run(
        "call", {"method": "GET", "url": url, "select": "RequestedDeliveryDate,CustomerPurchaseOrderDate"}
    )
    assert read["answer"]["d"] == {
        "RequestedDeliveryDate": "/Date(1782864000000)/",
        "CustomerPurchaseOrderDate": "/Date(1782864000000)/",
    }


def test_a_date_in_a_deep_insert_child_is_converted_too(a2x_box):
    target = a2x_box.target("POST", SO + "A_SalesOrder")
    line = {"ScheduleLine": "1", "RequestedDeliveryDate": "2026-01-02"}
    body = {"SalesOrderType": "OR", "to_Item": [{"Material": "1", "to_ScheduleLine": {"results": [line]}}]}
    converted, notes = a2x_box.v2_dates(target, body)
    assert converted["to_Item"][0]["to_ScheduleLine"]["results"][0] == dict(
        line, RequestedDeliveryDate="/Date(1767312000000)/"
    )
    assert notes == [
        "/to_Item/0/to_ScheduleLine/results/0/RequestedDeliveryDate: 2026-01-02 sent as /Date(1767312000000)/ "
        "(OData V2 JSON date)"
    ]
    assert body["to_Item"][0]["to_ScheduleLine"]["results"][0]["RequestedDeliveryDate"] == "2026-01-02"  # not changed


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("2026-07-01", False, "/Date(1782864000000)/"),
        ("2026-07-01T00:00:00Z", False, "/Date(1782864000000)/"),
        ("2026-07-01T02:00:00+02:00", True, "/Date(1782864000000+0000)/"),
        ("/Date(1782864000000)/", False, None),
        ("July 1st", False, None),
        ("2026-13-01", False, None),
    ],
)
def test_v2_date(text, offset, expected):
    assert v2_date(text, offset) == expected


@pytest.mark.parametrize(
    ("value", "empty"),
    [
        (None, True),
        ("", True),
        (False, True),
        (0, True),
        ("0", True),
        ("0.000", True),
        ("00000000", True),
        ("00000000-0000-0000-0000-000000000000", True),
        ("/Date(0)/", True),
        ("PT00H00M00S", True),
        ("0001", False),
        ("0.5", False),
        (True, False),
        ("X", False),
        (10, False),
    ],
)
def test_initial_values(value, empty):
    assert initial(value) is empty


def test_a_record_keeps_what_was_asked_for_and_drops_initial_values():
    record = {"d": {"Key": "0000000001", "Asked": "", "Empty": "", "Zero": "0.000", "Flag": False, "Text": "x"}}
    shown, notes = trimmed(record, keep=frozenset({"Key", "Asked"}))
    assert shown == {"d": {"Key": "0000000001", "Asked": "", "Text": "x"}}
    assert notes == ['empty or initial values (null, "", 0, false) left out']
    wide = {"d": {"Key": "1", **{f"F{i:02}": str(i + 1) for i in range(ONE_RECORD + 3)}}}
    last = f"F{ONE_RECORD + 2:02}"
    shown, notes = trimmed(wide, keep=frozenset({"Key"}), rank={last: 0})
    assert list(shown["d"]) == ["Key", *[f"F{i:02}" for i in range(ONE_RECORD - 1)], last]  # the last ranked first
    assert notes == [f"not shown (select them): F{ONE_RECORD - 1:02}, F{ONE_RECORD:02}, F{ONE_RECORD + 1:02}"]
    error = {"error": {"code": "x", "message": {"value": ""}}}
    assert trimmed(error, keep=frozenset()) == (error, [])  # an error is shown whole


def test_a_read_without_select_shows_keys_filter_fields_and_names_the_rest(a2x_box):
    """Generated records fill every field: an answer as wide as the type would be; the default answer
    shows the keys, the filtered field and a share of the others, and names the rest for select."""
    url = PO + "A_PurchaseOrderItem?$filter=PurchaseOrder eq '0000000014'"
    answer, _ = a2x_box.run("call", {"method": "GET", "url": url})
    assert a2x_box.client is not None
    raw = a2x_box.client.exchanges[-1].answer
    rows = answer["answer"]["d"]["results"]
    assert len(rows) == len(raw["d"]["results"]) >= 2
    for row in rows:
        assert row["PurchaseOrder"] == "0000000014" and "PurchaseOrderItem" in row
        assert len(set(row) - {"PurchaseOrder", "PurchaseOrderItem"}) <= per_record(len(rows))
        assert "NetPriceAmount" in row and "Material" in row  # amounts and master references come first
    (note,) = answer["notes"]
    hidden = note.split("not shown (select them): ")[1].split(", ")
    assert hidden[0] not in rows[0] and hidden[0] in raw["d"]["results"][0]
    assert len(json.dumps(answer)) < len(json.dumps(raw)) / 2
    picked, _ = a2x_box.run("call", {"method": "GET", "url": url, "select": ["PurchaseOrderItem", hidden[0]]})
    assert all(set(r) == {"PurchaseOrderItem", hidden[0]} for r in picked["answer"]["d"]["results"])
    # $select in the URL: the server returned what was asked, all of it is shown
    chosen, _ = a2x_box.run("call", {"method": "GET", "url": url + "&$select=PurchaseOrderItem," + hidden[0]})
    assert chosen["answer"] == picked["answer"] and "notes" not in chosen


def test_answers_come_without_metadata_and_deferred_links(a2x_box):
    answer, _ = a2x_box.run("call", {"method": "GET", "url": SO + "A_SalesOrder?$top=2&$expand=to_Item"})
    text = json.dumps(answer)
    assert answer["status"] == 200 and "__metadata" not in text and "__deferred" not in text
    order = answer["answer"]["d"]["results"][0]
    assert "to_Partner" not in order and isinstance(order["to_Item"]["results"], list) and order["to_Item"]["results"]
    cut, _ = a2x_box.run(
        "call",
        {
            "method": "GET",
            "url": SO + "A_SalesOrder?$top=2&$expand=to_Item",
            "select": ["SalesOrder", "to_Item/SalesOrderItem"],
        },
    )
    first = cut["answer"]["d"]["results"][0]
    assert set(first) == {"SalesOrder", "to_Item"}
    assert all(set(item) == {"SalesOrderItem"} for item in first["to_Item"]["results"])


def test_trimmed_drops_v2_metadata_deferred_links_and_v4_control_information():
    v2 = {
        "d": {
            "__metadata": {"uri": "x", "type": "T", "etag": 'W/"1"'},
            "SalesOrder": "1",
            "to_Partner": {"__deferred": {"uri": "x/to_Partner"}},
            "to_Item": {"results": [{"__metadata": {"uri": "y"}, "SalesOrderItem": "10", "Material": "M"}]},
        }
    }
    assert trimmed(v2) == (
        {"d": {"SalesOrder": "1", "to_Item": {"results": [{"SalesOrderItem": "10", "Material": "M"}]}}},
        [],
    )
    v4 = {"@odata.context": "$metadata#X", "@odata.count": 1, "value": [{"@odata.etag": 'W/"1"', "ID": 1}]}
    assert trimmed(v4) == ({"@odata.count": 1, "value": [{"ID": 1}]}, [])
    assert trimmed(v4, ["Name"]) == ({"@odata.count": 1, "value": [{}]}, [])


def test_a_path_that_starts_with_the_service_name_is_sent_under_its_root(a2x_box):
    """Qwen2.5-Coder-1.5B called /API_SALES_ORDER_SRV/A_SalesOrder (kg serve, like SAP, answers 404 there):
    call sends it under the service's root and says so; a name that is no service stays as it is."""
    root = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
    answer, is_error = a2x_box.run("call", {"method": "GET", "url": "/API_SALES_ORDER_SRV/A_SalesOrder('0000000003')"})
    assert not is_error and answer["status"] == 200 and answer["answer"]["d"]["SalesOrder"] == "0000000003"
    assert answer["notes"][0] == f"API_SALES_ORDER_SRV is served under {root}: sent to {root}A_SalesOrder('0000000003')"
    assert a2x_box.client is not None and a2x_box.client.exchanges[-1].url.endswith(f"{root}A_SalesOrder('0000000003')")
    answer, _ = a2x_box.run("call", {"method": "GET", "url": "/NO_SUCH_SRV/A_SalesOrder('0000000003')"})
    assert answer["status"] in (400, 404) and not any("served under" in n for n in answer.get("notes", []))


def test_an_empty_result_says_what_was_searched(a2x_box):
    url = SO + "A_SalesOrder?$filter=SoldToParty eq 'NOBODY'&$top=5"
    answer, _ = a2x_box.run("call", {"method": "GET", "url": url})
    assert answer["answer"] == {"d": {"results": []}}
    assert answer["notes"] == [
        "nothing found: A_SalesOrder of API_SALES_ORDER_SRV with $filter=SoldToParty eq 'NOBODY' has no records"
    ]


def test_select_must_name_fields(a2x_box):
    answer, is_error = a2x_box.run("call", {"method": "GET", "url": SO + "A_SalesOrder", "select": [1]})
    assert is_error and "argument 'select' must be a list of property names" in answer["error"]


def test_a_deep_insert_answer_shows_the_created_children(a2x_box):
    body = {
        "SalesOrderType": "OR",
        "SalesOrganization": "1010",
        "DistributionChannel": "10",
        "OrganizationDivision": "00",
        "SoldToParty": "0000000001",
        "to_Item": {
            "results": [
                {"Material": "0000000001", "RequestedQuantity": "1"},
                {"Material": "0000000002", "RequestedQuantity": "2"},
            ]
        },
    }
    answer, _ = a2x_box.run("call", {"method": "POST", "url": SO + "A_SalesOrder", "body": body})
    assert answer["status"] == 201, answer
    items = answer["answer"]["d"]["to_Item"]["results"]
    assert [i["SalesOrderItem"] for i in items] == ["000010", "000020"] and not any("Material" in i for i in items)
    assert answer["notes"][-1].startswith("9 fields as sent, not repeated"), answer["notes"]  # 5 + 2 x 2


def test_a_write_answer_repeats_only_the_fields_the_server_changed():
    answer = {"d": {"K": "1", "Same": "x", "Changed": "Y", "Number": "5.000", "to_I": {"results": [{"IK": "10"}]}}}
    sent = {"Same": "x", "Changed": "y", "Number": 5, "to_I": {"results": [{"IK": "10"}]}}
    shown, notes = trimmed(answer, keep=frozenset({"K", "IK"}), sent=sent)
    assert shown == {"d": {"K": "1", "Changed": "Y", "Number": "5.000", "to_I": {"results": [{"IK": "10"}]}}}
    assert notes == ["1 field as sent, not repeated"]


class HeaderOnly(http.server.BaseHTTPRequestHandler):
    """A V2 server that answers a create with the header only (as some servers do), and a read of the
    created entity with $expand with its children."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        HeaderOnly.seen.append(f"GET {self.path}")
        children = {"results": [{"__metadata": {"uri": "i"}, "SalesOrderItem": "10"}]}
        self.answer(200, {"d": {"SalesOrder": "77", "to_Item": children}})

    def do_POST(self) -> None:
        HeaderOnly.seen.append(f"POST {self.path}")
        self.rfile.read(int(self.headers["Content-Length"]))
        self.answer(201, {"d": {"SalesOrder": "77", "to_Item": {"__deferred": {"uri": "x"}}}}, location=True)

    def answer(self, status: int, body: dict, location: bool = False) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        if location:
            self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}{V2}A_SalesOrder('77')")
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


def test_a_deep_insert_answered_with_the_header_only_is_read_again_with_its_children(demo_store):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HeaderOnly)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    box = Toolbox(
        StoreHandle.open(demo_store), ODataClient(f"http://127.0.0.1:{server.server_address[1]}/"), allow_writes=True
    )
    box.validate_before_send = False
    try:
        body = dict(ORDER, to_Item=[{"Material": "1"}])
        answer, _ = box.run("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": body})
    finally:
        box.close()
        server.shutdown()
        server.server_close()
    assert answer["status"] == 201
    assert answer["answer"] == {"d": {"SalesOrder": "77", "to_Item": {"results": [{"SalesOrderItem": "10"}]}}}
    assert answer["notes"] == ["the created entity as read again with $expand=to_Item, to show its children"]
    assert HeaderOnly.seen[-2:] == [f"POST {V2}A_SalesOrder", f"GET {V2}A_SalesOrder('77')?$expand=to_Item"]
