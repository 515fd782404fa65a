"""The HTTP side of the ``call`` tool: one OData server (``kg serve`` or any OData service by base URL).

Credentials come from environment variables only (:data:`USER_ENV` and :data:`PASSWORD_ENV` for
basic authentication, or :data:`TOKEN_ENV` for a bearer token) and are never written to a trace.
Modifying requests carry SAP's CSRF token: fetched with a GET of the service root and the header
``x-csrf-token: Fetch`` before the first write to a service, fetched again once when the server
answers 403 with ``x-csrf-token: Required``.

Requests go only under the base URL (the OData root): :meth:`ODataClient.url` refuses another origin
(an absolute or protocol-relative URL of another scheme, host or port, or with a user name) and any
path that leaves the root (``..``, also percent-encoded, full-width or with backslashes), so that
the credentials never reach another server; redirects are not followed. Every exchange is kept in :attr:`ODataClient.exchanges`
(method, URL, body, status, answer, seconds) for the agent's trace, and can be appended to a
recording in ``kg validate``'s input format.
"""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit

import httpx

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ODataClientError, ODataURLError

USER_ENV = "PROCESSKG_ODATA_USER"
PASSWORD_ENV = "PROCESSKG_ODATA_PASSWORD"
TOKEN_ENV = "PROCESSKG_ODATA_TOKEN"
MAX_ANSWER = 2_000_000  # bytes of one answer read; more is cut and marked
SERVICE_MARKERS = ("/sap/opu/odata4/sap/", "/sap/opu/odata/sap/")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass
class Exchange:
    """One HTTP request and its answer."""

    method: str
    url: str
    body: JSONValue
    status: int
    answer: JSONValue
    seconds: float
    headers: dict[str, str] = field(default_factory=dict)  # request headers, credentials left out
    etag: str = ""  # the ETag header of the answer, if any
    location: str = ""  # the Location header of the answer (a create's new entity), if any

    def as_dict(self) -> JSONObject:
        return {
            "method": self.method,
            "url": self.url,
            "body": self.body,
            "status": self.status,
            "answer": self.answer,
            "seconds": round(self.seconds, 4),
            "headers": dict(self.headers),
        }


def credentials_from_environment() -> tuple[httpx.Auth | None, dict[str, str]]:
    """Basic authentication from :data:`USER_ENV`/:data:`PASSWORD_ENV`, or a bearer header from :data:`TOKEN_ENV`."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return None, {"Authorization": f"Bearer {token}"}
    user = os.environ.get(USER_ENV)
    if user:
        return httpx.BasicAuth(user, os.environ.get(PASSWORD_ENV, "")), {}
    return None, {}


class ODataClient:
    """Sends requests to one OData server; keeps cookies and CSRF tokens per service root."""

    def __init__(self, base_url: str, timeout: float = 30.0, record: Path | None = None) -> None:
        base = urlsplit(base_url)
        if base.scheme not in DEFAULT_PORTS or not base.hostname:
            raise ODataClientError(f"the OData URL must start with http:// or https:// and a host, not {base_url!r}")
        self.base_url = urlunsplit((base.scheme, base.netloc, base.path.rstrip("/") + "/", "", ""))
        self.base = urlsplit(self.base_url)
        auth, headers = credentials_from_environment()
        self.http = httpx.Client(auth=auth, headers=headers, timeout=timeout, follow_redirects=False)
        self.tokens: dict[str, str] = {}
        self.exchanges: list[Exchange] = []
        self.record = Path(record) if record else None
        self._ids = 0
        self._csrf_required = False  # the last answer asked for a CSRF token

    def close(self) -> None:
        self.http.close()

    def url(self, url: str) -> str:
        """The absolute URL under the base URL that ``url`` names: a path (``/sap/opu/...``), a URL
        relative to the base URL, or an absolute URL of the base URL's origin. Anything else is an
        :class:`ODataURLError` naming the root: it is checked as written, with backslashes read as
        slashes, and in Unicode NFKC form (full-width dots and slashes), and each must stay under the root."""
        if CONTROL.search(url):
            raise self._outside(url)
        slashed = url.replace("\\", "/")
        for view in (url, slashed, unicodedata.normalize("NFKC", slashed)):
            if self._resolve(view) is None:
                raise self._outside(url)
        resolved = self._resolve(url)
        assert resolved is not None
        return resolved

    def _resolve(self, url: str) -> str | None:
        """``url`` resolved against the base URL, or None if that leaves the base URL's origin or root."""
        parts = urlsplit(url)
        if (parts.scheme or parts.netloc) and not self._same_origin(parts):
            return None
        joined = urlsplit(urljoin(self.base_url, url))
        if not under_root(joined.path, self.base.path):
            return None
        return urlunsplit((self.base.scheme, self.base.netloc, joined.path, joined.query, ""))

    def _same_origin(self, parts: SplitResult) -> bool:
        """Whether an absolute (or protocol-relative) URL names the base URL's scheme, host and port, without a user."""
        scheme = parts.scheme.lower() or self.base.scheme
        try:
            port = parts.port or DEFAULT_PORTS.get(scheme)
        except ValueError:
            return False
        return (
            "@" not in parts.netloc
            and scheme == self.base.scheme
            and parts.hostname == self.base.hostname
            and port == (self.base.port or DEFAULT_PORTS[self.base.scheme])
        )

    def _outside(self, url: str) -> ODataURLError:
        shown = url if len(url) <= 200 else url[:200] + "..."
        return ODataURLError(
            f"{shown!r} is not under the OData root {self.base_url}: give a path under it "
            "(an absolute URL only of the same scheme, host and port)"
        )

    def send(self, method: str, url: str, body: JSONValue = None, headers: dict[str, str] | None = None) -> Exchange:
        """Send one request (CSRF handled for writes) and return the exchange, error answers included;
        ``headers`` are added to the request (``If-Match``)."""
        method = method.upper()
        target = self.url(url)
        headers = {"Accept": "application/json", **(headers or {})}
        if method != "GET":
            headers["x-csrf-token"] = self.token(target)
        exchange = self._exchange(method, target, body, headers)
        if exchange.status == 403 and method != "GET" and self._csrf_required:
            self.tokens.pop(service_root(target), None)
            headers["x-csrf-token"] = self.token(target)
            exchange = self._exchange(method, target, body, headers)
        return exchange

    def etag(self, url: str) -> Exchange:
        """A GET of the entity ``url`` names (its query left out), for its ETag: the ``ETag`` header, else
        the one in the body (V2 ``__metadata.etag``, V4 ``@odata.etag``); ``Exchange.etag`` holds it."""
        exchange = self.send("GET", urlunsplit(urlsplit(self.url(url))._replace(query="", fragment="")))
        if not exchange.etag and exchange.status == 200:
            exchange.etag = _body_etag(exchange.answer)
        return exchange

    def token(self, url: str) -> str:
        """The CSRF token of the service ``url`` belongs to, fetched once."""
        root = service_root(url)
        if root not in self.tokens:
            try:
                answer = self.http.get(root, headers={"x-csrf-token": "Fetch", "Accept": "application/json"})
            except httpx.HTTPError as exc:
                raise ODataClientError(f"cannot reach {root}: {exc}") from None
            self.tokens[root] = answer.headers.get("x-csrf-token", "")
        return self.tokens[root]

    def _exchange(self, method: str, url: str, body: JSONValue, headers: dict[str, str]) -> Exchange:
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        if content is not None:
            headers = {**headers, "Content-Type": "application/json"}
        start = time.perf_counter()
        try:
            response = self.http.request(method, url, content=content, headers=headers)
        except httpx.HTTPError as exc:
            raise ODataClientError(f"cannot reach {url}: {exc}") from None
        self._csrf_required = response.headers.get("x-csrf-token", "").lower() == "required"
        seconds = time.perf_counter() - start
        exchange = Exchange(
            method,
            url,
            body,
            response.status_code,
            _answer(response),
            seconds,
            headers,
            response.headers.get("etag", ""),
            response.headers.get("location", ""),
        )
        self.exchanges.append(exchange)
        self._record(exchange)
        return exchange

    def _record(self, exchange: Exchange) -> None:
        if self.record is None:
            return
        self._ids += 1
        parts = urlsplit(exchange.url)
        entry: JSONObject = {"id": f"c{self._ids}", "method": exchange.method, "url": parts.path}
        if parts.query:
            entry["url"] = f"{parts.path}?{parts.query}"
        if exchange.body is not None:
            entry["payload"] = exchange.body
        entry["status"] = exchange.status
        self.record.parent.mkdir(parents=True, exist_ok=True)
        with self.record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def under_root(path: str, root: str) -> bool:
    """Whether a resolved URL path lies under the root path (which ends with ``/``): it starts with
    the root, has no empty segment, and no ``.`` or ``..`` segment even once percent-decoded (three
    times, for double encodings), NFKC-normalised, and with ``\\`` read as ``/``."""
    if not (path + "/").startswith(root) or "//" in path:
        return False
    decoded = path
    for _ in range(3):
        decoded = unquote(decoded)
    segments = re.split(r"[/\\]", unicodedata.normalize("NFKC", decoded))
    return not any(segment in (".", "..") for segment in segments)


def service_root(url: str) -> str:
    """The service root a URL belongs to, as SAP Gateway lays them out (V2 ``.../odata/sap/NAME/``, V4
    ``.../odata4/sap/NAME/srvd_a2x/sap/NAME/0001/`` or ``.../odata4/sap/NAME/``); else the URL's folder."""
    parts = urlsplit(url)
    path = parts.path
    for marker in SERVICE_MARKERS:
        at = path.find(marker)
        if at >= 0:
            segments = path[at + len(marker) :].split("/")
            depth = 5 if len(segments) > 1 and segments[1] == "srvd_a2x" else 1
            path = path[: at + len(marker)] + "/".join(segments[:depth]) + "/"
            break
    else:
        path = path.rsplit("/", 1)[0] + "/"
    return f"{parts.scheme}://{parts.netloc}{path}"


def _body_etag(answer: JSONValue) -> str:
    """The ETag an entity's JSON carries: V2 ``d.__metadata.etag``, V4 ``@odata.etag``; else ``""``."""
    if not isinstance(answer, dict):
        return ""
    inner = answer.get("d")
    meta = inner.get("__metadata") if isinstance(inner, dict) else None
    tag = meta.get("etag") if isinstance(meta, dict) else answer.get("@odata.etag")
    return tag if isinstance(tag, str) else ""


def _answer(response: httpx.Response) -> JSONValue:
    raw = response.content[:MAX_ANSWER]
    if not raw:
        return None
    if "json" in response.headers.get("content-type", ""):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    return raw.decode("utf-8", "replace")


def remote_client(stack: ExitStack, url: str, record: Path | None, timeout: float = 30.0) -> ODataClient:
    """A client of the OData server at ``url`` that ``stack`` closes (a bad URL is ODataClientError now)."""
    client = ODataClient(url, timeout=timeout, record=record)
    stack.callback(client.close)
    return client
