"""kg mcp driven by the official MCP SDK's own client, over stdio and over streamable HTTP.

The stdio server is a real ``kg mcp`` process whose ``call`` talks to a real kg serve started on a
free loopback port (``--odata-url``); the HTTP server is a real ``kg mcp --http`` process that
serves the store in-process itself. One server of each kind per module; the SDK client lives in
an anyio blocking portal so that the tests can share it. Requests the SDK cannot parse are sent as
raw JSON-RPC lines (stdio) and bodies (HTTP).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer, free_port
from processkg.tools.mcp_server import parse_resource_uri, resource_uri

KG = str(Path(sys.executable).parent / "kg")
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
TOOLS = ["find_entity_sets", "describe", "next_steps", "validate_call", "call"]
ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1000",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000001",
}


@pytest.fixture(scope="module")
def served(demo_indexed_store, tmp_path_factory):
    """A real kg serve of the store on a free loopback port, recording every call."""
    record = tmp_path_factory.mktemp("mcp-serve") / "calls.jsonl"
    with LocalServer(StoreHandle.open(demo_indexed_store), record=record) as server:
        yield server, record


@pytest.fixture(scope="module")
def stdio(demo_indexed_store, served):
    server, _record = served
    args = ["mcp", "--store", str(demo_indexed_store), "--odata-url", server.url]
    params = StdioServerParameters(command=KG, args=args, env=ENV)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(params)) as client:
        yield portal, client


@pytest.fixture(scope="module")
def http_server(demo_indexed_store, tmp_path_factory):
    """A real kg mcp --http process: (its endpoint URL, its recording)."""
    record = tmp_path_factory.mktemp("mcp-http") / "calls.jsonl"
    port = free_port()
    args = ["mcp", "--store", str(demo_indexed_store), "--http", str(port), "--allow-writes", "--record", str(record)]
    process = subprocess.Popen([KG, *args], env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(port, process)
        yield f"http://127.0.0.1:{port}/mcp", record
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def http(http_server):
    url, record = http_server
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(url)) as client:
        yield portal, client, record


def _wait_for(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"kg mcp --http ended with {process.returncode}: {process.stderr.read()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"kg mcp --http did not listen on port {port} within {seconds} s")


def call(session, name: str, arguments: dict):
    portal, client = session[0], session[1]
    return portal.call(client.call_tool, name, arguments)


# ---------------------------------------------------------------- stdio


def test_stdio_lists_five_tools_with_schemas_and_annotations(stdio):
    portal, client = stdio
    tools = {t.name: t for t in portal.call(client.list_tools).tools}
    assert list(tools) == TOOLS
    assert all(t.input_schema["type"] == "object" and t.output_schema["type"] == "object" for t in tools.values())
    assert tools["describe"].input_schema["required"] == ["service", "entity_set"]
    assert all(t.annotations.read_only_hint for t in tools.values()), "without --allow-writes every tool only reads"
    assert tools["call"].input_schema["properties"]["method"]["enum"] == ["GET"]


def test_stdio_finds_the_entity_sets_of_a_business_request(stdio):
    result = call(stdio, "find_entity_sets", {"task": "enter a new sales order for a customer", "k": 3})
    assert not result.is_error
    found = result.structured_content["results"]
    assert len(found) == 3
    assert found[0] == "DEMO_SALES_ORDER_SRV/A_SalesOrder [SalesOrder] Sales Order Header"  # no path: V2's root
    item = next(r for r in found if r.startswith("DEMO_SALES_ORDER_SRV/A_SalesOrderItem "))
    assert (
        item == "DEMO_SALES_ORDER_SRV/A_SalesOrderItem [SalesOrder, SalesOrderItem]"
    )  # "Sales Order Item" says no more
    assert not any("seed" in r for r in found)
    assert json.loads(result.content[0].text) == result.structured_content


def test_stdio_describes_an_entity_set_with_codes_and_process(stdio):
    arguments = {"service": "DEMO_SALES_ORDER_SRV", "entity_set": "A_SalesOrder", "detail": "full"}
    context = call(stdio, "describe", arguments).structured_content
    assert context["one_record"] == "A_SalesOrder('{SalesOrder}')"
    types = context["value_helps"]["SalesOrderType"].split(", ")
    assert [t.split("=")[0] for t in types] == ["CR", "DR", "OR", "RE", "SO"] and "OR=Standard Order" in types
    assert "to_Item: A_SalesOrderItem (many)" in context["navigation"]
    assert "Create sales order" in [step["step"] for step in context["process"]]
    after = call(stdio, "next_steps", {"service": "DEMO_SALES_ORDER_SRV", "entity_set": "A_SalesOrder"})
    step = next(s for s in after.structured_content["next_steps"] if s["step"] == "Create outbound delivery")
    assert "DEMO_DELIVERY_BILLING_SRV/A_OutbDeliveryHeader" in step["uses"]


def test_stdio_names_a_wrong_entity_set_as_a_tool_error(stdio):
    result = call(stdio, "describe", {"service": "DEMO_SALES_ORDER_SRV", "entity_set": "A_SalesOrdr"})
    assert result.is_error and result.structured_content is None
    assert "did you mean A_SalesOrder?" in result.content[0].text


def test_stdio_validates_a_bad_call(stdio):
    bad = dict(ORDER, SalesOrderType="XX", Colour="red")
    result = call(stdio, "validate_call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": bad})
    checked = result.structured_content
    assert checked["valid"] is False
    assert sorted((v["kind"], v["path"]) for v in checked["violations"]) == [
        ("invalid-code", "/SalesOrderType"),
        ("unknown-property", "/Colour"),
    ]


def test_stdio_calls_kg_serve_and_refuses_writes_it_was_not_allowed(stdio, served):
    _server, record = served
    read = call(stdio, "call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000003')"}).structured_content
    assert read["sent"] is True and read["status"] == 200 and read["answer"]["d"]["SalesOrder"] == "0000000003"
    write = call(stdio, "call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": ORDER})
    assert write.is_error and "writes are not allowed" in write.content[0].text
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["method"], r["status"]) for r in recorded] == [("GET", 200)]


def test_stdio_serves_the_typed_context_as_a_resource(stdio):
    portal, client = stdio
    uri = resource_uri("DEMO_SALES_ORDER_SRV", "A_SalesOrder")
    text = portal.call(client.read_resource, uri).contents[0].text
    assert text.startswith("## 1. DEMO_SALES_ORDER_SRV/A_SalesOrder: Sales Order Header")
    assert "SalesOrderType" in text and "Standard Order" in text
    listed = [str(r.uri) for r in portal.call(client.list_resources).resources]
    assert uri in listed and len(listed) == 23
    with pytest.raises(MCPError, match="has no entity set 'Nope'"):
        portal.call(client.read_resource, resource_uri("DEMO_SALES_ORDER_SRV", "Nope"))


def test_resource_uris_are_parsed_strictly():
    assert parse_resource_uri("processkg://API_X/A_Y") == ("API_X", "A_Y")
    with pytest.raises(Exception, match="expected processkg://SERVICE/ENTITYSET"):
        parse_resource_uri("processkg://API_X/A/B")


# ---------------------------------------------------------------- streamable HTTP


def test_http_lists_the_tools_with_a_destructive_call_when_writes_are_allowed(http):
    portal, client, _record = http
    tools = {t.name: t for t in portal.call(client.list_tools).tools}
    assert list(tools) == TOOLS
    assert tools["call"].annotations.destructive_hint and not tools["call"].annotations.read_only_hint
    assert tools["call"].input_schema["properties"]["method"]["enum"][:2] == ["GET", "POST"]


def test_http_validates_then_writes_through_its_own_kg_serve(http):
    _portal, _client, record = http
    refused = call(
        http, "call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": dict(ORDER, SalesOrderType="XX")}
    )
    assert refused.structured_content["sent"] is False and refused.structured_content["status"] == 400
    created = call(http, "call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": ORDER}).structured_content
    assert created["sent"] is True and created["status"] == 201
    key = created["answer"]["d"]["SalesOrder"]
    read = call(http, "call", {"method": "GET", "url": V2 + f"A_SalesOrder('{key}')"}).structured_content
    assert read["answer"]["d"]["SoldToParty"] == "0000000001"
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["method"], r["status"]) for r in recorded if r["method"] == "POST"] == [("POST", 201)]


def test_http_describes_and_serves_resources(http):
    portal, client, _record = http
    described = call(http, "describe", {"service": "DEMO_PROCUREMENT", "entity_set": "PurchaseOrder"})
    assert described.structured_content["path"] == "/sap/opu/odata4/sap/demo_procurement/PurchaseOrder"
    text = portal.call(client.read_resource, resource_uri("DEMO_PROCUREMENT", "PurchaseOrder")).contents[0].text
    assert "PurchaseOrder" in text


# ---------------------------------------------------------------- only under the OData root


@pytest.fixture
def elsewhere() -> Iterator[tuple[int, list[str]]]:
    """Another real HTTP server on loopback: (its port, the paths it was asked for)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("tool", ["call", "validate_call"])
@pytest.mark.parametrize("url", ["http://127.0.0.1:{other}" + V2 + "A_SalesOrder", "//127.0.0.1:{other}" + V2])
def test_stdio_refuses_a_url_of_another_origin_naming_the_root(stdio, served, elsewhere, tool, url):
    server, _record = served
    port, seen = elsewhere
    result = call(stdio, tool, {"method": "GET", "url": url.format(other=port)})
    assert result.is_error and f"is not under the OData root {server.url.rstrip('/')}/" in result.content[0].text
    assert seen == []


# ---------------------------------------------------------------- requests the SDK cannot parse

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
BIG = "9" * 5000
DEEP = "[" * 10_000 + "]" * 10_000
ARGS = '"arguments":{"task":"orders","k":' + BIG + "}"
HOSTILE = [
    # (raw request, id of the answer, JSON-RPC error code)
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_entity_sets",' + ARGS + "}}", 1, -32700),
    (
        '{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"validate_call","arguments":'
        '{"method":"POST","url":"' + V2 + 'A_SalesOrder","body":{"SalesOrderType":' + DEEP + "}}}}",
        "deep",
        -32700,
    ),
    ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":' + DEEP + '},"id":3}', 3, -32700),
    ('{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":4,"k":' + BIG + "}}}", None, -32700),
    ('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"', 5, -32700),
    ("hello", None, -32700),
    ('{"jsonrpc":"2.0","id":"bad","method":5}', "bad", -32600),
]


class RawStdio:
    """A kg mcp process over stdio, spoken to line by line; answers are read by a thread so that a
    missing answer is a timeout, not a hang. Its stderr lines are kept in ``said`` as they come."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [KG, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
        )
        self.answers: queue.Queue[dict] = queue.Queue()
        self.said: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.answers.put(json.loads(line))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line.decode().rstrip("\n"))

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, seconds: float = 60) -> dict:
        try:
            return self.answers.get(timeout=seconds)
        except queue.Empty:
            pytest.fail(f"kg mcp gave no answer within {seconds} s")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=20)


@dataclass
class StartUp:
    """What a kg mcp process answered in its first seconds: initialize, the tool list (with the lines
    saying what had loaded when it came), and two tool calls sent right after it (by request id)."""

    initialized: dict
    listed: dict
    ready_when_listed: list[str]
    answers: dict[int, dict]


#: The two calls sent at once after the tool list: a check (needs the toolbox) and a search (needs the model).
EARLY_CALLS = [
    (
        "validate_call",
        {"method": "POST", "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder", "body": {"Colour": 1}},
    ),
    ("find_entity_sets", {"task": "create a sales order for a customer", "k": 3}),
]


@pytest.fixture(scope="module")
def raw_stdio(tasks_store) -> Iterator[tuple[RawStdio, StartUp]]:
    """One kg mcp process over stdio on the A2X task store, for every raw-line test of the module, and
    how it started (:class:`StartUp`). The start is spoken here, before any test sends a line, so the
    start-up test sees a process that nothing has asked yet whatever order the tests run in; the
    unparsable lines that follow are refused by the stdio reader before any tool or store is reached,
    so they prove the same on this store as on the demo's (a second process for them loaded the
    embedding model once more)."""
    raw = RawStdio(["mcp", "--store", str(tasks_store)])
    try:
        raw.send(json.dumps(INITIALIZE))
        initialized = raw.answer()
        raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        listed = raw.answer()
        ready_when_listed = _ready_lines(raw.said)
        for number, (name, arguments) in enumerate(EARLY_CALLS, 2):
            params = {"name": name, "arguments": arguments}
            raw.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}))
        answers = {answer["id"]: answer for answer in (raw.answer(180), raw.answer(180))}
        yield raw, StartUp(initialized, listed, ready_when_listed, answers)
    finally:
        raw.close()


@pytest.mark.parametrize(("request_line", "request_id", "code"), HOSTILE, ids=[str(h[1]) for h in HOSTILE])
def test_stdio_answers_a_request_it_cannot_parse_and_serves_the_next(raw_stdio, request_line, request_id, code):
    raw, _start = raw_stdio
    raw.send(request_line)
    answer = raw.answer(seconds=30)
    assert answer["id"] == request_id and answer["error"]["code"] == code
    assert "\n" not in answer["error"]["message"]
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "tools/list"}))
    after = raw.answer(seconds=30)
    assert after["id"] == 100 and len(after["result"]["tools"]) == 5


def test_stdio_ignores_a_blank_line(raw_stdio):
    raw, _start = raw_stdio
    raw.send("")
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 101, "method": "ping"}))
    assert raw.answer(seconds=30) == {"jsonrpc": "2.0", "id": 101, "result": {}}


@pytest.mark.parametrize(("request_line", "request_id", "code"), HOSTILE[:3], ids=["digits", "deep", "deep-id-last"])
def test_http_answers_a_request_it_cannot_parse_and_serves_the_next(http_server, request_line, request_id, code):
    url, _record = http_server
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as client:
        opened = client.post(url, headers=headers, json=INITIALIZE)
        headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        refused = client.post(url, headers=headers, content=request_line)
        assert refused.status_code == 400 and refused.json()["id"] is None and refused.json()["error"]["code"] == code
        after = client.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 100, "method": "tools/list"})
    assert after.status_code == 200 and '"id":100' in after.text and "find_entity_sets" in after.text


@pytest.mark.parametrize(
    ("header", "status"), [({"Host": "evil.example"}, 421), ({"Origin": "http://evil.example"}, 403)]
)
def test_http_refuses_another_host_or_origin(http_server, header, status):
    url, _record = http_server
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx.post(url, headers=headers | header, json=INITIALIZE, timeout=30).status_code == status


# ---------------------------------------------------------------- start-up (issue 22)


def _ready_lines(said: list[str]) -> list[str]:
    return [line for line in said if line.startswith("kg mcp: ") and " ready (" in line]


def test_stdio_answers_before_loading_and_a_call_at_once_waits_for_it(raw_stdio):
    """On A2X, initialize and tools/list come back while the toolbox (45 services' validator, the
    in-process kg serve) and the embedding model are still loading in the background; tool calls
    sent right after them wait for what they need and get the right answers (raw_stdio's start)."""
    raw, start = raw_stdio
    assert start.initialized["result"]["serverInfo"]["name"] == "processkg"
    assert [tool["name"] for tool in start.listed["result"]["tools"]] == TOOLS
    assert start.ready_when_listed == [], "the tool list must not wait for the toolbox or the model"
    checked, found = (start.answers[n]["result"]["structuredContent"] for n in (2, 3))
    assert checked["valid"] is False and ("unknown-property", "/Colour") in {
        (v["kind"], v["path"]) for v in checked["violations"]
    }
    assert found["results"][0].startswith("API_SALES_ORDER_SRV/A_SalesOrder [SalesOrder]")
    deadline = time.monotonic() + 30  # the lines come on stderr, read by a thread of their own
    while len(_ready_lines(raw.said)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    loaded = sorted(line.split(" ready (")[0] for line in _ready_lines(raw.said))
    assert loaded == ["kg mcp: embedding model", "kg mcp: tools"], raw.said


def test_a_bad_odata_url_is_refused_before_serving(demo_indexed_store):
    done = subprocess.run(
        [KG, "mcp", "--store", str(demo_indexed_store), "--odata-url", "ftp://host/"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: the OData URL must start with http:// or https:// and a host, not 'ftp://host/'"
    ]


def test_kg_mcp_imports_no_stage_before_it_answers_initialize():
    """What `kg mcp` imports to answer initialize (the kg command, its mcp command, the MCP face): none
    of the stages the tools load afterwards, so initialize answers in under a second at any size."""
    probe = (
        "import sys; from processkg.cli import main; main.get_command(None, 'mcp');"
        "import processkg.tools.mcp_server;"
        "import json; print(json.dumps(sorted(m for m in sys.modules if m.startswith(('processkg.', 'sentence_transformers', 'torch')))))"
    )
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    assert "processkg.cli.mcp" in loaded and "processkg.tools.mcp_server" in loaded
    late = {"processkg.tools.toolbox", "processkg.retrieve.index", "processkg.build.pipeline", "processkg.serve.app"}
    assert late.isdisjoint(loaded) and not any(m.startswith(("sentence_transformers", "torch")) for m in loaded)


def test_loading_starts_with_the_first_message_after_initialize():
    """The stdio reader calls the face's start once, after it has passed initialize on and before the next message."""
    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from processkg.tools.mcp_server import answer_unreadable

    started: list[int] = []  # how many messages had been passed on when start was called
    lines = [
        types.JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params={}),
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"),
        types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list"),
    ]

    async def run() -> list[str]:
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](10)
        readable, passed = anyio.create_memory_object_stream[SessionMessage](10)
        outgoing, _answers = anyio.create_memory_object_stream[SessionMessage](10)
        seen: list[str] = []
        async with incoming_send:
            for line in lines:
                await incoming_send.send(SessionMessage(line))
        await answer_unreadable(
            incoming, readable, outgoing, lambda: started.append(passed.statistics().current_buffer_used)
        )
        async with passed:
            async for item in passed:
                seen.append(item.message.method)
        return seen

    seen = anyio.run(run)
    assert seen == ["initialize", "notifications/initialized", "tools/list"]
    assert started == [1]
