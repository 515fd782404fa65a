"""kg serve's HTTP protocol (serve/http_protocol.py): a response's head goes out with its body in one write,
and every kind of response still arrives whole: a body, no body (HEAD, 204), 100 Continue before a
body, several requests on one keep-alive connection, a connection the server closes.

``kg serve`` on the demo store, driven over a raw loopback socket so that what arrives in each read
is seen.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from processkg.tools.local_server import free_port

V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
KG = Path(sys.executable).with_name("kg")


@pytest.fixture(scope="module")
def port(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``kg serve`` on the demo store in its own process (a server thread in the test's process would
    hold the GIL from the head's write to the body's, hiding two writes)."""
    port = free_port()
    log = tmp_path_factory.mktemp("serve-http") / "kg-serve.log"
    command = [str(KG), "serve", "--store", str(demo_store), "--port", str(port), "--no-csrf", "--allow-reset"]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}{V2}", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "kg serve did not answer within 120 s"
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def head_of(data: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    return status, {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}, body


def read_response(sock: socket.socket, method: str = "GET") -> tuple[str, dict[str, str], bytes, int]:
    """One response from ``sock``: status line, headers, body, and how many reads it took."""
    data, reads = b"", 0
    while True:
        chunk = sock.recv(65536)
        reads += 1
        assert chunk, f"the connection closed after {data[:300]!r}"
        data += chunk
        if b"\r\n\r\n" not in data:
            continue
        status, headers, body = head_of(data)
        length = 0 if method == "HEAD" or " 204 " in status else int(headers["content-length"])
        if len(body) >= length:
            assert len(body) == length, "nothing beyond the response"
            return status, headers, body, reads


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def request(method: str, path: str, port: int, body: bytes = b"", extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: application/json\r\n{extra}"
    if body or method in ("POST", "PATCH"):
        head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


def test_a_response_arrives_in_one_read_head_and_body_together(port):
    with connect(port) as sock:
        reads = []
        for _ in range(20):
            sock.sendall(request("GET", V2 + "A_SalesOrder('0000000001')", port))
            status, headers, body, n = read_response(sock)
            assert status == "HTTP/1.1 200 OK"
            assert json.loads(body)["d"]["SalesOrder"] == "0000000001"
            assert headers["content-type"] == "application/json"
            reads.append(n)
    # uvicorn alone writes the head and the body apart: the client mostly needs two reads
    assert reads == [1] * 20


def test_keep_alive_requests_without_a_body_and_with_one(port):
    with connect(port) as sock:
        sock.sendall(request("HEAD", V2 + "A_SalesOrder('0000000001')", port))
        status, headers, body, _ = read_response(sock, "HEAD")
        assert status == "HTTP/1.1 200 OK" and body == b"" and int(headers["content-length"]) > 0
        sock.sendall(request("POST", "/$reset", port))
        status, _, body, _ = read_response(sock)
        assert status == "HTTP/1.1 204 No Content" and body == b""
        sock.sendall(request("POST", V2 + "A_SalesOrder", port, b"{SalesOrderType"))
        status, _, body, _ = read_response(sock)
        assert status == "HTTP/1.1 400 Bad Request" and json.loads(body)["error"]["code"] == "malformed"
        sock.sendall(request("GET", V2 + "A_SalesOrder('0000000002')", port))
        status, _, body, _ = read_response(sock)
        assert status == "HTTP/1.1 200 OK" and json.loads(body)["d"]["SalesOrder"] == "0000000002"


def test_100_continue_is_written_at_once_then_the_answer(port):
    body = json.dumps({"SalesOrderType": "ZZZ-not-a-type"}).encode()
    head = request("POST", V2 + "A_SalesOrder", port, extra="expect: 100-continue\r\n")
    head = head.replace(b"content-length: 0", f"content-length: {len(body)}".encode())
    with connect(port) as sock:
        sock.sendall(head)
        interim = sock.recv(65536)  # the client waits for it before it sends the body
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        status, _, answer, _ = read_response(sock)
    assert status == "HTTP/1.1 400 Bad Request"
    assert json.loads(answer)["error"]["code"] == "invalid-call"


def test_a_refused_body_closes_the_connection_after_the_whole_answer(port):
    head = request("POST", V2 + "A_SalesOrder", port).replace(b"content-length: 0", b"content-length: 99999999")
    with connect(port) as sock:
        sock.sendall(head)
        status, headers, body, _ = read_response(sock)
        assert status.startswith("HTTP/1.1 413 ")
        assert headers["connection"] == "close"
        assert json.loads(body)["error"]["code"] == "body-too-large"
        assert sock.recv(65536) == b"", "then the server closes the connection"
