"""processkg.tools without a face: the toolbox's answers and argument errors, and the OData client
(service roots, SAP's CSRF protocol against a real kg serve, credentials from the environment)."""

from __future__ import annotations

import http.server
import re
import threading

import pytest

from processkg.errors import ODataClientError
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient, service_root
from processkg.tools.specs import tool_list
from processkg.tools.toolbox import MAX_ROWS, Toolbox, trimmed

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
    with LocalServer(demo_store, record=record) as server:
        yield server


@pytest.fixture(scope="module")
def toolbox(demo_store, served):
    box = Toolbox(demo_store, ODataClient(served.url), allow_writes=True)
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
    box = Toolbox(demo_store, ODataClient(served.url))
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
    assert trimmed({"d": {"results": rows}})["d"]["processkg_truncated"] == "5 more records not shown"
    assert len(trimmed({"value": rows})["value"]) == MAX_ROWS


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
    seen: list[str] = []

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
