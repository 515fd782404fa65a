"""The HTTP/1.1 protocol ``kg serve`` runs under uvicorn: uvicorn's own (httptools), except that the
head of a response goes out with its body in one write, and that an OData call is answered in the
protocol's own callback, without an ASGI task.

One write: uvicorn writes a response's status line and headers when the application starts the
response and the body when it sends it: two writes, so two TCP segments on a socket with
``TCP_NODELAY`` (which asyncio and uvloop set), and a client that reads the head, then waits for the
body. A small answer of ``kg serve`` is one body message, so the head is held until that body (or the
end of the response, or the connection's close) and written with it. SAP's Fiori mock server (Node's
``http``) writes a small answer in one segment too. What a client receives is byte for byte the same;
interleaved A/Bs by hand (not committed) gave a GET by key a lower median with it.

No ASGI task: uvicorn starts an ASGI task for each request once its head is read; the task waits for
the body through ``receive()``, and the answer goes back through ``send()`` messages, each a step of
the event loop. ``kg serve``'s answer is synchronous (``serve/app.py``), so where the application
takes a request directly (:meth:`processkg.serve.app.Application.direct`: an OData call with its
length announced, its ``Host`` allowed), the protocol keeps uvicorn's request-response cycle (the
same scope, body buffer, keep-alive and pipelining state) but starts no task: when the body is in,
it calls the application and writes the response as uvicorn's ``send()`` writes it (the same status
line, server and date headers, ``connection: close`` and checks of header names and values), head and
body in one write. Everything else (``HEAD``, ``Expect: 100-continue``, chunked bodies, proxy headers,
discovery, ``/$reset``, retrieval, refusals before the body) goes through ASGI as before. One difference
shows only with a client that half-closes its side while pipelined requests are pending: uvicorn's
ASGI path closes the transport at the end of input after the first answer and drops the rest, where
calls answered directly are all answered (each as soon as its body is in). A side by
side of the deep insert's CPU and latency is in docs/serve.md (*Latency, side by side*).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from starlette.responses import Response
from uvicorn._types import ASGI3Application, HTTPScope
from uvicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string
from uvicorn.server import ServerState

HEAD_START = b"HTTP/1.1 "
INTERIM = b"HTTP/1.1 1"  # 100 Continue (and any 1xx): written at once, the client waits for it
#: request headers that uvicorn's proxy-headers middleware reads (it changes the scheme and client)
PROXY_HEADERS = (b"x-forwarded-proto", b"x-forwarded-for")


class DirectApplication(Protocol):
    """An ASGI application that can also answer a request without ASGI (``serve/app.py``)."""

    def direct(self, scope: HTTPScope) -> Callable[[bytes], Response] | None: ...


def direct_application(config: Config) -> DirectApplication | None:
    """The application ``config`` was given, when it answers requests directly (``direct``) and uvicorn
    runs it behind nothing but its proxy-headers middleware (no message logger of the trace log level,
    no ASGI 2 or WSGI adapter); None otherwise."""
    given, loaded = config.app, config.loaded_app
    while isinstance(loaded, ProxyHeadersMiddleware):
        loaded = loaded.app
    if loaded is not given or not callable(getattr(given, "direct", None)):
        return None
    return given


class HeldHead:
    """The transport of one connection, holding a written response head until the next write."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self.head is not None:
            data, self.head = self.head + data, None
        elif data.startswith(HEAD_START) and data.endswith(b"\r\n\r\n") and not data.startswith(INTERIM):
            self.head = data
            return
        self.transport.write(data)

    def flush(self) -> None:
        """Write a held head (a response that ended without a body write: HEAD, or a body never sent)."""
        if self.head is not None:
            head, self.head = self.head, None
            self.transport.write(head)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:  # everything else is the transport's
        return getattr(self.transport, name)


class HeadWithBodyProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a :class:`HeldHead` transport (a held head is written when the
    response completes at the latest), answering the requests the application takes directly without
    an ASGI task."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.direct_app = direct_application(self.config)
        self.starting = False  # within on_headers_complete: a cycle uvicorn starts there may be taken
        self.finish: Callable[[bytes], Response] | None = None  # how the direct cycle's request is answered

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(HeldHead(transport))  # type: ignore[arg-type]

    def on_headers_complete(self) -> None:
        self.starting = True
        try:
            super().on_headers_complete()
        finally:
            self.starting = False

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        finish = self.takes(cycle, app)
        if finish is None:
            super()._start_asgi_task(cycle, app)
        else:  # answered in on_message_complete, once the body is in
            self.finish = finish

    def takes(self, cycle: RequestResponseCycle, app: ASGI3Application) -> Callable[[bytes], Response] | None:
        """How the application answers this request without ASGI, or None (then an ASGI task does): only a
        request started as it arrives (not a pipelined one, started when the one before it is answered),
        for the application itself (not uvicorn's 503 past a concurrency limit), that no ASGI middleware
        changes (proxy headers), with no interim answer to give (100 Continue), while the client reads what
        it is sent."""
        if (
            self.direct_app is None
            or not self.starting
            or app is not self.app
            or cycle.waiting_for_100_continue
            or self.flow.write_paused
            or any(name in PROXY_HEADERS for name, _value in cycle.scope["headers"])
        ):
            return None
        return self.direct_app.direct(cycle.scope)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self.finish is not None:  # no receive() resumes reading: the body is read whole, as announced
            self.flow.resume_reading()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        finish, cycle = self.finish, self.cycle
        if finish is None or cycle.response_complete:
            return
        self.finish = None
        response = finish(bytes(cycle.body))
        cycle.body = bytearray()
        self.respond(cycle, response)

    def respond(self, cycle: RequestResponseCycle, response: Response) -> None:
        """Write ``response`` as uvicorn's ``RequestResponseCycle.send`` writes a start and one body message:
        the same bytes, head and body in one write, and the same ends: a header name or value it refuses
        closes the connection unanswered, a body of another length than announced after the head, as a
        failed ``send`` does (uvicorn logs and closes); then the response is complete as there."""
        status, scope = response.status_code, cycle.scope
        cycle.response_started = True
        if self.access_log:
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(scope),
                scope["method"],
                get_path_with_query_string(scope),
                scope["http_version"],
                status,
            )
        head, chunked, expected = self.head(cycle, status, response.raw_headers)
        if head is None:
            return self.failed(RuntimeError("Invalid HTTP header name or value."))
        body = response.body
        if chunked:
            self.transport.write(
                b"".join([head, *([b"%x\r\n" % len(body), body, b"\r\n"] if body else []), b"0\r\n\r\n"])
            )
        elif len(body) != expected:
            self.transport.write(head)
            return self.failed(RuntimeError(f"Response content of {len(body)} bytes, not Content-Length {expected}"))
        else:
            self.transport.write(head + body)
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()
        return None

    def head(
        self, cycle: RequestResponseCycle, status: int, headers: list[tuple[bytes, bytes]]
    ) -> tuple[bytes | None, bool, int]:
        """The status line and headers uvicorn writes (its server and date headers first, ``connection:
        close`` when the connection is not kept, ``transfer-encoding: chunked`` when no length is given),
        whether the body is chunked, and the length announced; None for a header uvicorn refuses."""
        content = [STATUS_LINE[status]]
        chunked: bool | None = None
        expected = 0
        close = False
        for name, value in [*cycle.default_headers, *headers]:
            if HEADER_RE.search(name) or HEADER_VALUE_RE.search(value):
                return None, False, 0
            name = name.lower()
            if name == b"content-length" and chunked is None:
                expected, chunked = int(value.decode()), False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                expected, chunked = 0, True
            elif name == b"connection" and b"close" in [token.lower().strip() for token in value.split(b",")]:
                cycle.keep_alive, close = False, True
            content.extend([name, b": ", value, b"\r\n"])
        if not cycle.keep_alive and not close:
            content.append(b"connection: close\r\n")
        if chunked is None and status not in (204, 304):  # never HEAD here (ASGI answers it)
            chunked = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        return b"".join(content), bool(chunked), expected

    def failed(self, exc: Exception) -> None:
        """What uvicorn does when the application fails after the response started: log, close."""
        self.logger.error("Exception in ASGI application\n", exc_info=exc)
        self.transport.close()

    def on_response_complete(self) -> None:
        if isinstance(self.transport, HeldHead):
            self.transport.flush()
        super().on_response_complete()
