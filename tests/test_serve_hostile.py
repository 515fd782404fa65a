"""kg serve under attack: a foreign Host, $reset without consent, $expand amplification, bodies past
the limit, inputs that used to raise (500 with a traceback, not recorded), a busy port.

Every server here is a real uvicorn server on a free loopback port, driven over HTTP.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import running
from processkg.graph.handle import StoreHandle
from processkg.serve.app import MAX_BODY, MAX_ENTITIES, Server, open_server

V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
V4 = "/sap/opu/odata4/sap/demo_procurement/"
KG = Path(sys.executable).with_name("kg")


def port_of(client: httpx.Client) -> int:
    port = client.base_url.port
    assert port is not None
    return port


@pytest.fixture(scope="module")
def served(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, httpx.Client, Path]]:
    """The demo with 20 items on sales order 1 (``--data``), CSRF on, /$reset off, a recording."""
    data = tmp_path_factory.mktemp("hostile-data")
    (data / "DEMO_SALES_ORDER_SRV").mkdir()
    items = [{"SalesOrder": "0000000001", "SalesOrderItem": str(10 * (i + 1))} for i in range(20)]
    (data / "DEMO_SALES_ORDER_SRV" / "A_SalesOrderItem.json").write_text(json.dumps(items), encoding="utf-8")
    record = tmp_path_factory.mktemp("hostile") / "calls.jsonl"
    server = open_server(StoreHandle.open(demo_store), record=record, data=data)
    with running(server) as client:
        yield server, client, record


def recorded(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def token(client: httpx.Client) -> dict[str, str]:
    return {"x-csrf-token": client.get(V2, headers={"x-csrf-token": "Fetch"}).headers["x-csrf-token"]}


# ------------------------------------------------------------------ Host


def test_a_foreign_host_is_refused_with_an_odata_error_naming_it_and_recorded(served):
    _server, client, record = served
    answer = client.get(V2 + "A_SalesOrder", headers={"host": f"rebound.example:{port_of(client)}"})
    assert answer.status_code == 421
    assert answer.json()["error"]["code"] == "host-not-allowed"
    assert f"rebound.example:{port_of(client)}" in answer.json()["error"]["message"]["value"]
    assert recorded(record)[-1] | {"id": ""} == {
        "id": "",
        "method": "GET",
        "url": V2 + "A_SalesOrder",
        "status": 421,
        "error": "host-not-allowed",
    }
    assert client.get("/$dump", headers={"host": "rebound.example"}).status_code == 421
    assert client.post("/$reset", headers={"host": "rebound.example"}).status_code == 421
    retrieve = client.get("/$processkg/retrieve?q=sales", headers={"host": "rebound.example"})
    assert retrieve.status_code == 421


def test_loopback_names_at_the_bound_port_are_one_address(served):
    _server, client, _record = served
    port = port_of(client)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
        assert client.get(V2, headers={"host": host}).status_code == 200, host
    for host in (f"localhost:{port + 1}", "localhost", f"127.0.0.2.example:{port}", ""):
        assert client.get(V2, headers={"host": host}).status_code == 421, host


def test_allowed_host_adds_a_name(demo_store):
    server = open_server(StoreHandle.open(demo_store), allowed_hosts=frozenset({"kg.internal", "other.internal:9"}))
    with running(server) as client:
        port = port_of(client)
        assert client.get(V2, headers={"host": f"kg.internal:{port}"}).status_code == 200
        assert client.get(V2, headers={"host": "other.internal:9"}).status_code == 200
        assert client.get(V2, headers={"host": f"other.internal:{port}"}).status_code == 421


# ------------------------------------------------------------------ $reset


def test_reset_is_off_unless_allowed(served):
    _server, client, _record = served
    answer = client.post("/$reset", headers=token(client))
    assert answer.status_code == 403
    assert "--allow-reset" in answer.json()["error"]["message"]


def test_reset_needs_the_csrf_token_like_any_change(demo_store):
    with running(open_server(StoreHandle.open(demo_store), allow_reset=True)) as client:
        good = {
            "SalesOrderType": "OR",
            "SalesOrganization": "1000",
            "DistributionChannel": "10",
            "OrganizationDivision": "00",
            "SoldToParty": "0000000001",
        }
        assert client.post(V2 + "A_SalesOrder", json=good, headers=token(client)).status_code == 201
        denied = client.post("/$reset")
        assert denied.status_code == 403 and denied.headers["x-csrf-token"] == "Required"
        assert client.get(V2 + "A_SalesOrder/$count").text == "21", "a refused reset changes nothing"
        dump = client.get("/$dump", headers={"x-csrf-token": "Fetch"})
        assert client.post("/$reset", headers={"x-csrf-token": dump.headers["x-csrf-token"]}).status_code == 204
        assert client.get(V2 + "A_SalesOrder/$count").text == "20"


# ------------------------------------------------------------------ $expand


def test_expand_amplification_stops_at_the_entity_bound(served):
    _server, client, _record = served
    url = V2 + "A_SalesOrder?$expand=to_Item" + "/to_SalesOrder/to_Item" * 7  # 15 levels, 20 items per level
    assert len(url) < 300
    started = time.monotonic()
    answer = client.get(url, timeout=20)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == "answer-too-large"
    assert str(MAX_ENTITIES) in answer.json()["error"]["message"]["value"]
    assert time.monotonic() - started < 20


def test_the_entity_bound_is_shared_by_the_requests_of_a_batch(served):
    _server, client, _record = served
    url = "A_SalesOrder('0000000001')?$expand=to_Item/to_SalesOrder/to_Item/to_SalesOrder/to_Item"  # 8841 entities
    one = client.get(V2 + url)
    assert one.status_code == 200
    assert len(one.json()["d"]["to_Item"]["results"]) == 20
    parts = "".join(
        f"--b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nGET {url} HTTP/1.1\r\n\r\n\r\n"
        for _ in range(2)
    )
    body = (parts + "--b--\r\n").encode()
    answer = client.post(
        V2 + "$batch", content=body, headers={"content-type": "multipart/mixed; boundary=b", **token(client)}
    )
    assert answer.status_code == 202
    assert answer.text.count("HTTP/1.1 200 OK") == 1 and answer.text.count("HTTP/1.1 400 Bad Request") == 1
    assert "answer-too-large" in answer.text


# ------------------------------------------------------------------ the body limit


def test_a_chunked_body_past_the_limit_is_refused_without_reading_it(served):
    _server, client, record = served
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        block = b"x" * 65_536
        for _ in range(400_000_000 // len(block)):
            sent += len(block)
            yield block

    answer = client.post(V2 + "A_SalesOrder", content=chunks(), headers=token(client), timeout=60)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "body-too-large"
    assert sent < 50 * MAX_BODY, f"the client sent {sent} bytes: the server read far past the limit"
    assert recorded(record)[-1]["status"] == 413


def test_a_content_length_past_the_limit_is_refused_before_the_body(served):
    _server, client, _record = served
    with socket.create_connection(("127.0.0.1", port_of(client)), timeout=10) as raw:
        raw.sendall(
            f"POST {V2}A_SalesOrder HTTP/1.1\r\nHost: 127.0.0.1:{port_of(client)}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {400 * MAX_BODY}\r\n\r\n".encode()
        )
        head = raw.recv(4096)  # no body sent: a server waiting for it times out here
    assert head.startswith(b"HTTP/1.1 413"), head[:200]


# ------------------------------------------------------------------ inputs that used to raise

HOSTILE = [
    ("POST", V2 + "A_SalesOrder", b'{"SalesOrderType": NaN}', "json", 400),
    ("POST", V2 + "A_SalesOrder", b'{"SalesOrderType": -Infinity}', "json", 400),
    ("POST", V2 + "A_SalesOrder", b'{"SalesOrderType": ' + b"7" * 5000 + b"}", "json", 400),
    ("PATCH", V2 + "A_SalesOrder('0000000001')", b'{"SalesOrderType": 1e400}', "json", 400),
    ("POST", V2 + "A_SalesOrder", b'{"SalesOrderType": "\\ud800"}', "json", 400),
    ("POST", V2 + "A_SalesOrder", b'{"SalesOrderType": "\xff\xfe"}', "json", 400),
    ("GET", V2 + "A_SalesOrder?$filter=" + "(" * 1900 + "SalesOrder eq '1'" + ")" * 1900, None, "json", 400),
    ("GET", V2 + "A_SalesOrder?$filter=" + "not " * 900 + "true", None, "json", 400),
    ("POST", V2 + "A_SalesOrder", b"[" * 100_000 + b"]" * 100_000, "json", 400),
    ("GET", V2 + "A_SalesOrder?$filter=" + "SalesOrder eq '1' or " * 200 + "true", None, "json", 400),  # > 4000
    ("GET", V2 + "A_SalesOrder?$top=-1", None, "json", 400),
    ("GET", V2 + "A_SalesOrder?$top=99999999999999999999", None, "json", 400),
    ("GET", V2 + "A_SalesOrder?$top=" + "9" * 5000, None, "json", 400),
    ("GET", V2 + "A_SalesOrder?$top=%C2%B2", None, "json", 400),  # a superscript two: isdigit() but not int()
    ("GET", V2 + "A_SalesOrder?$skip=%FF", None, "json", 400),
    ("GET", V2 + "A_SalesOrder?$filter=%ZZ", None, "json", 400),
    ("GET", V2 + "A_SalesOrder(%27%FF%27)", None, "json", 404),
    (
        "POST",
        V4 + "$batch",
        b'{"requests": [{"id": "1", "method": "GET", "url": "PurchaseOrder", "headers": "x"}]}',
        "batch",
        400,
    ),
    ("POST", V4 + "$batch", b'{"requests": [{"id": "1", "method": ["GET"], "url": "PurchaseOrder"}]}', "batch", 400),
    ("POST", V4 + "$batch", b"[" * 5000 + b"]" * 5000, "batch", 400),
    ("POST", V4 + "$batch", b'{"requests": [{"id": "1", "method": "POST", "url": "$batch"}]}', "batch", 200),
]


@pytest.mark.parametrize("method, url, content, kind, status", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_gets_a_4xx_odata_error_and_is_recorded(served, method, url, content, kind, status):
    _server, client, record = served
    headers = {**token(client), **({"content-type": "application/json"} if kind == "batch" else {})}
    before = len(recorded(record))
    answer = client.request(method, url, content=content, headers=headers)
    assert answer.status_code == status, answer.text[:300]
    if kind == "batch" and status == 200:  # the envelope is fine, the nested $batch is refused
        [part] = answer.json()["responses"]
        assert part["status"] == 400 and part["body"]["error"]["code"] == "malformed"
        status = 400  # what the recording holds: the request of the batch
    else:
        assert answer.json()["error"]["code"], answer.text[:300]
    calls = recorded(record)[before:]
    assert [c["status"] for c in calls] == [status], calls


def test_an_unforeseen_exception_is_a_500_odata_error_logged_and_recorded(served, monkeypatch, caplog):
    server, client, record = served

    def broken(call: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(server, "check_call", broken)  # stands for a bug no test has found yet
    with caplog.at_level(logging.ERROR, logger="processkg.serve.app"):
        answer = client.get(V2 + "A_SalesOrder")
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "internal-error"
    assert recorded(record)[-1]["status"] == 500 and recorded(record)[-1]["error"] == "internal-error"
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records), "the traceback is in the log"


# ------------------------------------------------------------------ a busy port


def test_a_busy_port_is_exit_2_with_one_line(demo_store):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [str(KG), "serve", "--store", str(demo_store), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: port {port} on 127.0.0.1 is in use"]
