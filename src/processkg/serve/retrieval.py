"""The resident retriever of ``kg serve``: ``GET /$processkg/retrieve?q=...`` and its client.

The server loads the store's index and embedding model on the first request and keeps them, so a
script pays the model's start-up once per server instead of once per ``kg retrieve`` process.
The answer is the object ``kg retrieve --json`` prints for one query. Parameters: ``q`` (the
question), ``k``, ``method``, ``hops``, ``mapping_edges``, ``sequence_edges``, ``verify_seeds``
(``true``/``false``) and ``context`` (``true`` adds the typed context). Calls to it are not OData
and are not recorded.
"""

from __future__ import annotations

import threading
from urllib.parse import urljoin

from processkg.aliases import JSONObject
from processkg.errors import ODataClientError, ProcessKGError
from processkg.graph.handle import StoreHandle
from processkg.retrieve.context import render_context
from processkg.retrieve.retriever import DEFAULT_HOPS, RetrievalSettings, Retriever

PATH = "/$processkg/retrieve"
FLAGS = ("mapping_edges", "sequence_edges", "verify_seeds")


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
        """``kg retrieve --json``'s object for the query in ``params``; a bad parameter raises ProcessKGError."""
        query, k, settings = parse(params)
        retriever = self.retriever()
        with self.lock:  # the retriever keeps per-batch state: one query at a time
            results = retriever.retrieve_many([query], k, settings)[0]
            line: JSONObject = {"id": None, "query": query, "results": [r.as_json() for r in results]}
            if _flag(params, "context", False):
                line["context"] = render_context(retriever.store, results)
        return line


def parse(params: dict[str, str]) -> tuple[str, int, RetrievalSettings]:
    """The query, ``k`` and settings a request names."""
    k, hops = _int(params, "k", 5), _int(params, "hops", DEFAULT_HOPS)
    if k < 1:
        raise ProcessKGError(f"k must be at least 1, not {k}")
    flags = [_flag(params, name, name != "verify_seeds") for name in FLAGS]
    settings = RetrievalSettings(params.get("method", "hybrid"), hops, *flags).check()
    return params.get("q", ""), k, settings


def _int(params: dict[str, str], name: str, default: int) -> int:
    try:
        return int(params.get(name, default))
    except ValueError:
        raise ProcessKGError(f"{name} must be an integer, not {params[name]!r}") from None


def _flag(params: dict[str, str], name: str, default: bool) -> bool:
    value = params.get(name)
    if value is None:
        return default
    if value.lower() not in ("true", "false", "1", "0"):
        raise ProcessKGError(f"{name} must be true or false, not {value!r}")
    return value.lower() in ("true", "1")


def ask(server: str, params: dict[str, str], timeout: float = 120.0) -> JSONObject:
    """The resident retriever of the ``kg serve`` at ``server`` answers ``params``; one-line errors."""
    import httpx  # only the client needs it

    url = urljoin(server if server.endswith("/") else server + "/", PATH.lstrip("/"))
    try:
        response = httpx.get(url, params=params, timeout=timeout)
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
