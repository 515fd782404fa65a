"""The resident retriever of ``kg serve``: ``GET /$processkg/retrieve?q=...`` and its client.

The server loads the store's index and embedding model on the first request and keeps them, so a
script pays the model's start-up once per server instead of once per ``kg retrieve`` process.
The answer is the object ``kg retrieve --json`` prints for one query; the request's parameters
are those of :class:`processkg.retrieve.request.RetrievalRequest`, which both sides use. Calls to
it are not OData and are not recorded.
"""

from __future__ import annotations

import threading
from urllib.parse import urljoin

from processkg.aliases import JSONObject
from processkg.errors import ODataClientError, ProcessKGError
from processkg.graph.handle import StoreHandle
from processkg.retrieve.context import render_context
from processkg.retrieve.request import RetrievalRequest
from processkg.retrieve.retriever import Retriever

PATH = "/$processkg/retrieve"


class ResidentRetriever:
    """The retriever of one store, opened by the first query and kept; ``loads`` counts openings."""

    def __init__(self, handle: StoreHandle) -> None:
        self.handle = handle
        self.lock = threading.Lock()
        self.loads = 0
        self._retriever: Retriever | None = None

    def retriever(self) -> Retriever:
        with self.lock:
            if self._retriever is None:
                self._retriever = Retriever(self.handle)
                self.loads += 1
            return self._retriever

    def answer(self, params: dict[str, str]) -> JSONObject:
        """``kg retrieve --json``'s object for the request in ``params``; a bad parameter raises ProcessKGError."""
        request = RetrievalRequest.from_params(params)
        retriever = self.retriever()
        with self.lock:  # the retriever keeps per-batch state: one query at a time
            results = retriever.retrieve_many([request.query], request.k, request.settings)[0]
            line: JSONObject = {"id": None, "query": request.query, "results": [r.as_json() for r in results]}
            if request.context:
                line["context"] = render_context(retriever.store, results)
        return line


def ask(server: str, request: RetrievalRequest, timeout: float = 120.0) -> JSONObject:
    """The resident retriever of the ``kg serve`` at ``server`` answers ``request``; one-line errors."""
    import httpx  # only the client needs it

    url = urljoin(server if server.endswith("/") else server + "/", PATH.lstrip("/"))
    try:
        response = httpx.get(url, params=request.to_params(), timeout=timeout)
    except (httpx.HTTPError, ValueError) as exc:
        raise ODataClientError(f"kg serve at {server} does not answer: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ODataClientError(f"{url} answered {response.status_code} without a JSON object: is it kg serve?")
    if response.status_code != 200:
        raise ProcessKGError(f"{url}: {body.get('error', response.status_code)}")
    return body
