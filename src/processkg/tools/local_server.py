"""An in-process ``kg serve`` on a free loopback port: what ``call`` talks to when no other OData
server is named (``kg mcp`` and ``kg agent run`` without ``--odata-url``).

The server runs in a daemon thread with uvicorn and records every call it answers to ``record``
(``kg validate``'s input format), so a run leaves the server's own recording behind.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from processkg.errors import ODataClientError
from processkg.graph.handle import StoreHandle
from processkg.serve.app import Server, create_app, open_server

if TYPE_CHECKING:
    import uvicorn

START_SECONDS = 30.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LocalServer:
    """``with LocalServer(store, record) as server:`` serves the store at ``server.url`` until the block ends."""

    def __init__(
        self, store: StoreHandle, record: Path | None = None, csrf: bool = True, allow_reset: bool = False
    ) -> None:
        self.store, self.record, self.csrf, self.allow_reset = store, record, csrf, allow_reset
        self.port = 0
        self.server: Server | None = None
        self._web: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> LocalServer:
        import uvicorn  # heavy: only a run that serves the store needs the ASGI server

        self.server = open_server(self.store, record=self.record, csrf=self.csrf, allow_reset=self.allow_reset)
        self.port = free_port()
        from processkg.serve.http_protocol import HeadWithBodyProtocol  # imports uvicorn's protocol

        app = create_app(self.server)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", http=HeadWithBodyProtocol)
        web = uvicorn.Server(config)
        self._web = web
        self._thread = threading.Thread(target=web.run, name="kg-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not web.started and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.02)
        if not web.started:
            raise ODataClientError(f"kg serve of {self.store} did not start within {START_SECONDS:.0f} s")
        return self

    def stop(self) -> None:
        if self._web is not None:
            self._web.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.server is not None and self.server.recorder is not None:
            self.server.recorder.close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
