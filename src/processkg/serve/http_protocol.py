"""The HTTP/1.1 protocol ``kg serve`` runs under uvicorn: uvicorn's own (httptools), except that the
head of a response goes out with its body in one write.

uvicorn writes a response's status line and headers when the application starts the response and
the body when it sends it: two writes, so two TCP segments on a socket with ``TCP_NODELAY`` (which
asyncio and uvloop set), and a client that reads the head, then waits for the body. A small answer
of ``kg serve`` is one body message, so the head is held until that body (or the end of the
response, or the connection's close) and written with it. SAP's Fiori mock server (Node's
``http``) writes a small answer in one segment too. What a client receives is byte for byte the
same; interleaved A/Bs by hand (not committed) gave a GET by key a lower median with it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_START = b"HTTP/1.1 "
INTERIM = b"HTTP/1.1 1"  # 100 Continue (and any 1xx): written at once, the client waits for it


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
    """uvicorn's httptools protocol on a :class:`HeldHead` transport; a held head is written when the
    response completes at the latest."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(HeldHead(transport))  # type: ignore[arg-type]

    def on_response_complete(self) -> None:
        if isinstance(self.transport, HeldHead):
            self.transport.flush()
        super().on_response_complete()
