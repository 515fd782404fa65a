"""A store on a SPARQL server: ``--store http://HOST:PORT`` (an ``oxigraph serve``) or the URL of any SPARQL 1.1
query endpoint with its update and Graph Store Protocol endpoints (:class:`Layout`; see docs/deployment.md).

Every build lives in its own named graphs on the server (``urn:processkg:build:ID`` the data,
``urn:processkg:build:ID:g:<name>`` each named graph of the embedded store, ``...:files`` the
files that are not triples: ``build.json`` and the services' metadata documents, base64), loaded
with the Graph Store Protocol. ``kg build`` then swaps one pointer triple in the control graph with
one SPARQL update that names the pointer it started from (compare and swap), so readers see the
old or the new build, never a mix, and two builds cannot both win. The two newest builds stay;
older ones are dropped.

A reader's :class:`processkg.graph.handle.StoreHandle` pins the build the pointer names when it is
opened (:func:`resolve`, once per handle) and gets a local
cache directory keyed by the build id (``$XDG_CACHE_HOME/processkg/remote/HOST_PORT/ID``) with
``build.json``, ``metadata/`` and, once built, ``index/``: the store API's paths work unchanged,
and a cache never serves another build's files. :class:`RemoteStore` answers the two calls the
stages make on a pyoxigraph ``Store`` (``query`` and ``quads_for_pattern``) over the SPARQL
protocol against the pinned build's graphs; every query is checked (no SERVICE, no FROM, no
update) before it is sent.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, unquote, urljoin, urlsplit, urlunsplit

from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Store,
    Triple,
    Variable,
    parse,
    parse_query_results,
    serialize,
)

from processkg.aliases import JSONObject
from processkg.assets import remote_queries_dir
from processkg.errors import RemoteStoreError, StoreDamagedError, StoreNotFoundError
from processkg.graph.sparql import check, group_start

if TYPE_CHECKING:
    import httpx

REMOTE = "remote.json"  # in a cache directory: which server and build it stands for
CONTROL = "urn:processkg:control"
POINTER, CURRENT, PREVIOUS = "urn:processkg:store", "urn:processkg:current", "urn:processkg:previous"
REPLACES, NOTHING = "urn:processkg:replaces", "urn:processkg:nothing"  # a build's record: the pointer it started from
BUILD = "urn:processkg:build:"
CONTENT, FILE = "urn:processkg:content", "urn:processkg:file:"
TIMEOUT_S, READ_TIMEOUT_S = 30.0, 600.0  # connect, write and pool; reading an answer
FILE_PART = 16_000  # base64 characters per triple of a file (a multiple of 4)
SEND_PART = 1 << 20  # bytes of N-Triples read from the spool per chunk of a graph upload
SETTLE = 0.25  # seconds a build waits after its switch before reading the pointer back
_SAFE_FILE = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
BUILD_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}")  # exactly what new_build_id() writes (fullmatch)
RESULTS = ("application/sparql-results+json", "application/n-triples")  # what a SPARQL server answers here

Term = NamedNode | BlankNode | Literal | Triple


def fix(url: str) -> str:
    return f"`kg build ... --store {url}`"


# ---------------------------------------------------------------- the protocol


class Layout:
    """Where one server takes queries, updates and graphs, read from the ``--store`` URL.

    ``http://HOST:PORT`` (no path) is Oxigraph's layout: ``/query``, ``/update``, ``/store``.
    A URL with a path names the SPARQL 1.1 query endpoint; ``update=PATH`` and ``store=PATH`` in its
    query string name the update endpoint and the Graph Store Protocol service (each defaults to
    the query endpoint, as on a Fuseki dataset URL), and ``timeout=N`` is sent as the ``timeout``
    parameter of every query, in the server's own unit (Virtuoso: milliseconds). For Virtuoso:
    ``http://HOST:8890/sparql?store=/sparql-graph-crud``.
    """

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        given = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(given) - set(_LAYOUT_KEYS))
        repeated = sorted(k for k, v in given.items() if len(v) > 1)
        if unknown or repeated:
            raise RemoteStoreError(
                f"{url}: the store URL takes only {', '.join(f'{k}=' for k in _LAYOUT_KEYS)} once each in its query "
                f"string, not {', '.join(f'{k}=' for k in unknown or repeated)} (docs/deployment.md)"
            )
        root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        self.oxigraph = parts.path in ("", "/")
        self.query = root + ("/query" if self.oxigraph else parts.path)
        self.update = urljoin(self.query, given["update"][0]) if "update" in given else _default(root, "/update", self)
        self.store = urljoin(self.query, given["store"][0]) if "store" in given else _default(root, "/store", self)
        self.timeout = given["timeout"][0] if "timeout" in given else None
        if self.timeout is not None and not self.timeout.isdigit():
            raise RemoteStoreError(f"{url}: timeout= takes a whole number (the server's unit), not {self.timeout!r}")


_LAYOUT_KEYS = ("update", "store", "timeout")


def _default(root: str, path: str, layout: Layout) -> str:
    return root + path if layout.oxigraph else layout.query


class Endpoint:
    """The SPARQL 1.1 Protocol, SPARQL Update and the Graph Store Protocol of one server (:class:`Layout`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.layout = Layout(url)
        import httpx  # heavy (rich with it): only a store on a server needs it, not every kg command

        self.client = httpx.Client(timeout=httpx.Timeout(TIMEOUT_S, read=READ_TIMEOUT_S), trust_env=False)

    def _send(self, request: httpx.Request, answers: str | None = None) -> httpx.Response:
        """Send ``request``; ``answers`` is the content type a query's answer must have (None: any)."""
        import httpx  # loaded by __init__ already

        try:
            response = self.client.send(request)
        except httpx.HTTPError as exc:
            raise RemoteStoreError(
                f"{self.url}: the SPARQL server does not answer ({type(exc).__name__}: {exc}); "
                f"start it (`oxigraph serve --location DIR --bind HOST:PORT`) or fix the URL"
            ) from None
        where = request.url.copy_with(query=None)
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code >= 400:  # a web page (not a SPARQL server) is shown as its text
            html = "html" in kind
            text = " ".join((re.sub(r"<[^>]*>", " ", response.text) if html else response.text).split())[:200]
            raise RemoteStoreError(f"{where}: HTTP {response.status_code}: {text}{_NOT_SPARQL if html else ''}")
        if answers is not None and kind not in RESULTS:
            raise RemoteStoreError(f"{where}: answered {kind or 'no content type'}, not SPARQL results{_NOT_SPARQL}")
        if answers is not None and "x-sql-state" in response.headers:  # Virtuoso: a partial answer at its timeout
            message = " ".join(response.headers.get("x-sql-message", "").split())[:200]
            raise RemoteStoreError(f"{where}: the server stopped the query and answered part of it ({message})")
        return response

    def select(
        self, query: str, default: list[str] | None = None, named: list[str] | None = None, triples: bool = False
    ) -> httpx.Response:
        """POST ``query`` (SPARQL 1.1 Protocol); ``triples``: a CONSTRUCT or DESCRIBE, answered as N-Triples."""
        form = {"query": query, "default-graph-uri": default or [], "named-graph-uri": named or []}
        if self.layout.timeout is not None:
            form["timeout"] = self.layout.timeout
        accept = RESULTS[1] if triples else RESULTS[0]
        request = self.client.build_request("POST", self.layout.query, data=form, headers={"Accept": accept})
        return self._send(request, accept)

    def rows(self, query: str) -> list[list[str]]:
        """Values of a control query's rows (IRIs and literals as text)."""
        result = results(self.select(query), self.layout.query)
        if not isinstance(result, QuerySolutions):
            raise RemoteStoreError(f"{self.layout.query}: answered a SELECT without rows{_NOT_SPARQL}")
        return [[v.value if v is not None else "" for v in row] for row in result]

    def graphs(self) -> list[str]:
        """Every named graph on the server. ``GRAPH ?g {}`` lists them without a scan (Oxigraph);
        Virtuoso answers it with one row that binds nothing, so then the graphs are read from their
        triples, grouped by graph: Virtuoso 7.2 took seconds for ``SELECT DISTINCT ?g`` of a few graphs
        (a build lists them three times), milliseconds for the same graphs with ``GROUP BY ?g``."""
        rows = self.rows(control_query("graphs"))
        if any(g == "" for (g,) in rows):
            rows = self.rows(control_query("graphs-grouped"))
        return [g for (g,) in rows]

    def update(self, text: str) -> None:
        headers = {"Content-Type": "application/sparql-update"}
        self._send(self.client.build_request("POST", self.layout.update, content=text.encode(), headers=headers))

    def put(self, graph: str, ntriples: bytes | Iterator[bytes], size: int | None = None) -> None:
        """Replace ``graph`` with ``ntriples`` (Graph Store Protocol PUT). An iterator is sent with its
        ``size`` as Content-Length: Virtuoso answered 201 to a chunked body and stored nothing."""
        headers = {"Content-Type": "application/n-triples"}
        if size is not None:
            headers["Content-Length"] = str(size)
        params = {"graph": graph}
        if self.layout.oxigraph:  # a fresh graph nobody points to yet: 5x faster on Oxigraph (its own parameter)
            params["no_transaction"] = ""
        request = self.client.build_request("PUT", self.layout.store, params=params, content=ntriples, headers=headers)
        self._send(request)

    def delete(self, graph: str) -> None:
        self._send(self.client.build_request("DELETE", self.layout.store, params={"graph": graph}))

    def get(self, graph: str) -> bytes:
        headers = {"Accept": "application/n-triples"}
        request = self.client.build_request("GET", self.layout.store, params={"graph": graph}, headers=headers)
        return self._send(request).content


_NOT_SPARQL = (
    "; is the URL that of a SPARQL server (`oxigraph serve --location DIR --bind HOST:PORT`, "
    "or a query endpoint: docs/deployment.md)?"
)


def results(response: httpx.Response, url: str) -> QuerySolutions | QueryBoolean:
    """The SPARQL results (JSON) of ``response``; a body that is not is one line naming the URL."""
    try:
        return parse_query_results(_conforming(response.content), format=QueryResultsFormat.JSON)
    except (SyntaxError, ValueError) as exc:
        raise RemoteStoreError(f"{url}: the answer is not SPARQL results ({_line(exc)}){_NOT_SPARQL}") from None


_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"


def _conforming(content: bytes) -> bytes:
    """Virtuoso's JSON results as the standard writes them: its blank nodes (``nodeID://b10000``) are
    not valid identifiers, it answers an ASK as a SELECT of one ``__ASK_RETVAL`` (1 or 0), and it
    writes booleans as ``1`` and ``0`` (valid XSD, but not the canonical ``true`` and ``false`` that
    every reader of a literal's value here compares with)."""
    if b'"bnode"' not in content and b"__ASK_RETVAL" not in content and _BOOLEAN.encode() not in content:
        return content
    try:
        data = json.loads(content)
    except ValueError:
        return content  # refused by the parser, with its own message
    if data.get("head", {}).get("vars") == ["__ASK_RETVAL"]:
        rows = data.get("results", {}).get("bindings", [])
        answer = bool(rows) and rows[0].get("__ASK_RETVAL", {}).get("value") not in ("0", "false")
        return json.dumps({"head": {}, "boolean": answer}).encode()
    for row in data.get("results", {}).get("bindings", []):
        for term in row.values():
            if term.get("type") == "bnode":
                term["value"] = re.sub(r"\W", "_", term["value"].removeprefix("nodeID://"))
            elif term.get("datatype") == _BOOLEAN and term.get("value") in ("1", "0"):
                term["value"] = "true" if term["value"] == "1" else "false"
    return json.dumps(data).encode()


def _line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160]


# ---------------------------------------------------------------- the pointer


def data_graph(build: str) -> str:
    return f"{BUILD}{build}"


def named_graph(build: str, name: str) -> str:
    return f"{BUILD}{build}:g:{quote(name, safe='')}"


def files_graph(build: str) -> str:
    return f"{BUILD}{build}:files"


#: The IRIs every control query may name (``queries/remote/*.rq``), besides those a call passes.
_CONTROL_IRIS = {
    "control": CONTROL,
    "pointer": POINTER,
    "current": CURRENT,
    "previous": PREVIOUS,
    "replaces": REPLACES,
    "content": CONTENT,
}
_IRI = re.compile(r'[^<>"{}|^`\\\x00-\x20]+')


@cache
def _control_text(name: str) -> Template:
    return Template((remote_queries_dir() / f"{name}.rq").read_text(encoding="utf-8"))


def control_query(name: str, **iris: str) -> str:
    """The control query ``queries/remote/NAME.rq`` with each ``$name`` in it as an IRI: one of
    :data:`_CONTROL_IRIS` or of ``iris`` (a build's graphs; build ids are checked where they are read)."""
    values = {**_CONTROL_IRIS, **iris}
    for value in values.values():
        if not _IRI.fullmatch(value):
            raise RemoteStoreError(f"{value[:120]!r} is not an IRI a control query can name")
    return _control_text(name).substitute({k: f"<{v}>" for k, v in values.items()})


def pointers(endpoint: Endpoint) -> list[str]:
    """Every build id the pointer names, oldest first: one, or briefly two after two builds switched at once.

    An id is later a folder name of the cache: one that is not of the exact form kg build writes
    (``../../X``, anything written into the server by hand) is refused.
    """
    rows = endpoint.rows(control_query("pointers"))
    found = []
    for (value,) in rows:
        build = _build_of(value)
        if build is None or value != data_graph(build):
            raise StoreDamagedError(
                f"{endpoint.url}: the store is damaged (its pointer names {value[:120]!r}, not a build of kg build); "
                f"delete the graph <{CONTROL}> on the server and rebuild with {fix(endpoint.url)}"
            )
        found.append(build)
    return sorted(found)


def pointer(endpoint: Endpoint) -> str | None:
    """The build readers read: the oldest the pointer names (the winner when two builds switched at once)."""
    found = pointers(endpoint)
    return found[0] if found else None


def switch(endpoint: Endpoint, expected: str | None, build: str) -> None:
    """Point the store at ``build`` in one update, only if it still points at ``expected``.

    The update names ``expected`` in its WHERE (compare and swap). Oxigraph does not serialize
    two updates that arrive together, so both may apply and leave two pointers: then the oldest
    build wins (readers take it too), and the other removes its pointer and stops, leaving its
    graphs to a later build's clean-up (a reader may have seen it for a moment). The pointer is
    read back only after :func:`_settle`: read at once, a build saw only its own pointer, called
    itself the winner, and the other update landed a moment later (both builds "won").
    """
    new = data_graph(build)
    began = time.monotonic()
    if expected is None:
        endpoint.update(control_query("switch-first", new=new))
    else:
        endpoint.update(control_query("switch", new=new, old=data_graph(expected)))
    _settle(time.monotonic() - began)
    found = pointers(endpoint)
    if found and found[0] == build:
        return
    if build in found:  # switched at the same moment as an older build: withdraw
        endpoint.update(control_query("withdraw", new=new))
    else:  # the update changed nothing: nobody ever saw this build
        drop(endpoint, [build])
    raise RemoteStoreError(
        f"{endpoint.url}: another kg build switched the store meanwhile (it now points to "
        f"{found[0] if found else None}); this build was not published, run it again"
    )


def _settle(took: float) -> None:
    """Wait until an update that was in flight when ours landed has landed too.

    Such an update read the old pointer before ours committed, so it started before and lasts about
    as long as ours: ``SETTLE`` plus four times our own round trip covers it (a build takes
    minutes; the switch gains well under a second).
    """
    time.sleep(SETTLE + 4 * took)


def builds(endpoint: Endpoint) -> list[str]:
    """Every build id with a graph on the server, oldest first (ids start with their UTC time);
    graphs whose name is not of a build kg build writes are not kg build's and are left alone."""
    return sorted({b for g in endpoint.graphs() if (b := _build_of(g))})


def drop(endpoint: Endpoint, ids: list[str]) -> None:
    """Drop every graph of the builds ``ids`` (none of them is pointed to), then their records."""
    graphs = [g for g in endpoint.graphs() if _build_of(g) in ids]
    for graph in graphs:  # the Graph Store Protocol's DELETE: faster than DROP on Oxigraph
        endpoint.delete(graph)
    for build in ids:
        endpoint.update(control_query("forget", build=data_graph(build)))


def _build_of(graph: str) -> str | None:
    """The build id of one of kg build's graphs; None for any other name."""
    build = graph.removeprefix(BUILD).split(":", 1)[0] if graph.startswith(BUILD) else ""
    return build if BUILD_ID.fullmatch(build) else None


def origins(endpoint: Endpoint) -> dict[str, str | None]:
    """Every build's record: its id -> the build it started from (None: an empty server)."""
    rows = endpoint.rows(control_query("records"))
    return {b: _build_of(e) for (g, e) in rows if (b := _build_of(g))}


def sweep(endpoint: Endpoint, build: str, expected: str | None) -> None:
    """Right after ``build`` switched the pointer from ``expected``: drop every other build.

    Every build records the pointer it started from before it uploads anything, and can only
    switch if the pointer still names that build. So a build not kept here whose record names
    another build than ``build`` (or that has no record) was killed, or is still uploading but
    will lose its switch: neither is read by anyone. A build whose record names ``build`` started
    after our switch and may still win: it stays. The graphs are listed before the records, so a
    build that writes its record and then its graphs meanwhile is seen with its record.
    """
    present = builds(endpoint)
    started = origins(endpoint)
    keep = {build, expected}
    doomed = [b for b in sorted(set(present) | set(started)) if b not in keep and started.get(b, "") != build]
    drop(endpoint, doomed)


def new_build_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(4)


# ---------------------------------------------------------------- publishing a local build


def start(url: str) -> str | None:
    """The build a new build will replace (None on an empty server); fails early when the server does not answer."""
    return pointer(Endpoint(url))


def publish(url: str, expected: str | None, version: Path, db: Path) -> Path:
    """Load the local store version ``version`` (database ``db``) as a new build and switch to it.

    Returns the cache directory of the new build (with the version's index, when it has one),
    which this process reads from now on.
    """
    endpoint, build = Endpoint(url), new_build_id()
    store = Store.read_only(str(db))
    started = data_graph(expected) if expected else NOTHING
    endpoint.update(control_query("record", build=data_graph(build), started=started))
    try:
        _upload(endpoint, data_graph(build), store, DefaultGraph())
        for graph in store.named_graphs():
            if isinstance(graph, NamedNode):
                _upload(endpoint, named_graph(build, graph.value), store, graph)
        endpoint.put(files_graph(build), _files_ntriples(version))
    except BaseException:
        drop(endpoint, [build])  # never pointed to: nobody reads it
        raise
    switch(endpoint, expected, build)  # past the update the pointer may name it: drop nothing on a failure
    sweep(endpoint, build, expected)  # the builds before the previous one, and those killed or doomed
    index = version / "index"
    return _materialize(endpoint, build, index if index.is_dir() else None)


def _upload(endpoint: Endpoint, name: str, store: Store, graph: NamedNode | DefaultGraph) -> None:
    """PUT ``graph`` of ``store`` as the server's graph ``name``: its N-Triples are spooled to a
    temporary file in full, then sent in parts of :data:`SEND_PART` bytes. So the body of a 100x
    build (gigabytes) never has to fit in memory, and the server never waits for it: serializing
    while sending left Oxigraph without body bytes for minutes, and it answered 500 (os error 11)."""
    with tempfile.TemporaryFile() as spool:
        quads = store.quads_for_pattern(None, None, None, graph)
        serialize((Triple(q.subject, q.predicate, q.object) for q in quads), spool, format=RdfFormat.N_TRIPLES)
        size = spool.tell()
        spool.seek(0)
        endpoint.put(name, iter(lambda: spool.read(SEND_PART), b""), size)


def _files_ntriples(version: Path) -> bytes:
    """Each file as base64 in parts of :data:`FILE_PART` characters (``urn:processkg:file:NAME#000001``):
    Virtuoso's Graph Store Protocol refused PUTs with lines of 43 KB and more ("unsupported type
    text/plain"; 30 KB passed), and its SPARQL Update took 43 s to insert one 3 MB literal."""
    names = ["build.json"] + sorted(p.relative_to(version).as_posix() for p in (version / "metadata").glob("*"))
    triples = []
    for name in names:
        if not (version / name).is_file():
            continue
        text = base64.b64encode((version / name).read_bytes()).decode()
        for n, at in enumerate(range(0, max(len(text), 1), FILE_PART)):
            subject = NamedNode(f"{FILE}{quote(name, safe='/')}#{n:06d}")
            triples.append(Triple(subject, NamedNode(CONTENT), Literal(text[at : at + FILE_PART], datatype=_BASE64)))
    return serialize(triples, format=RdfFormat.N_TRIPLES) or b""


def _joined(rows: list[list[str]]) -> dict[str, str]:
    """File name -> its base64 text, from the files graph's ``(subject, part)`` rows in any order."""
    parts: dict[str, list[tuple[str, str]]] = {}
    for subject, content in rows:
        name, _hash, number = unquote(subject.removeprefix(FILE)).rpartition("#")
        parts.setdefault(name if _hash else number, []).append((number if _hash else "", content))
    return {name: "".join(c for _n, c in sorted(found)) for name, found in sorted(parts.items())}


_BASE64 = NamedNode("http://www.w3.org/2001/XMLSchema#base64Binary")


# ---------------------------------------------------------------- reading


def cache_root(url: str) -> Path:
    """``$PROCESSKG_CACHE`` or ``$XDG_CACHE_HOME/processkg`` (``~/.cache``), then remote/HOST_PORT_PATH."""
    base = (
        os.environ.get("PROCESSKG_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "processkg"
    )
    return Path(base) / "remote" / re.sub(r"[^\w.-]+", "_", url.split("://", 1)[1])


def resolve(url: str) -> Path:
    """The cache directory of the build the server at ``url`` points to now (the pointer is looked up
    on every call: a :class:`processkg.graph.handle.StoreHandle` calls it once and keeps the answer)."""
    endpoint = Endpoint(url)
    build = pointer(endpoint)
    if build is None:
        raise StoreNotFoundError(f"{url}: no processkg build on this SPARQL server (run {fix(url)} first)")
    return _materialize(endpoint, build, None)


def _materialize(endpoint: Endpoint, build: str, index: Path | None) -> Path:
    """The cache directory of ``build``: filled once from its files graph, then renamed into place."""
    if not BUILD_ID.fullmatch(build):
        raise StoreDamagedError(
            f"{endpoint.url}: the store is damaged (a build id {build[:120]!r}); rebuild it with {fix(endpoint.url)}"
        )
    target = cache_root(endpoint.url) / build
    if (target / REMOTE).is_file():
        return target
    files = endpoint.rows(control_query("files", files=files_graph(build)))
    graphs = [g for g in endpoint.graphs() if _build_of(g) == build]
    tmp = target.parent / f".{build}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, content in _joined(files).items():
        _write_file(tmp, name, content, endpoint.url)
    if index is not None:
        shutil.copytree(index, tmp / "index")
    named = [unquote(g.split(":g:", 1)[1]) for g in graphs if ":g:" in g]
    meta: JSONObject = {"url": endpoint.url, "build": build, "named_graphs": sorted(named)}
    (tmp / REMOTE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    try:
        os.rename(tmp, target)
    except OSError:  # another process filled it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _write_file(root: Path, name: str, content: str, url: str) -> None:
    if not _SAFE_FILE.match(name) or ".." in name.split("/"):
        raise StoreDamagedError(f"{url}: the store is damaged (a file named {name!r}); rebuild it with {fix(url)}")
    try:
        data = base64.b64decode(content, validate=True)
    except ValueError:
        raise StoreDamagedError(
            f"{url}: the store is damaged (the file {name!r} is not base64); rebuild it with {fix(url)}"
        ) from None
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def remote_meta(path: Path) -> JSONObject | None:
    """``remote.json`` of a cache directory; None for any other directory."""
    try:
        data = json.loads((Path(path) / REMOTE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StoreDamagedError(f"{path}/{REMOTE} cannot be read ({exc}); remove {path}") from None
    return data if isinstance(data, dict) else None


class RemoteStore:
    """The build ``build`` on the server at ``url``, read like a pyoxigraph ``Store``."""

    def __init__(self, url: str, build: str, named: list[str]) -> None:
        self.endpoint = Endpoint(url)
        self.build = build
        self.named = {name: named_graph(build, name) for name in named}

    def query(
        self,
        query: str,
        prefixes: Mapping[str, str] | None = None,
        substitutions: Mapping[Variable, Term] | None = None,
    ) -> QuerySolutions | QueryBoolean | QueryTriples:
        """Evaluate ``query`` on the server, with the build's data as the default graph.

        It is checked and parsed here first (an empty local store gives pyoxigraph's own syntax
        and binding errors), so nothing the embedded store would refuse is ever sent.
        """
        check(query)
        form = Store().query(query, prefixes=dict(prefixes or {}), substitutions=dict(substitutions or {}) or None)
        text = "".join(f"PREFIX {p}: <{ns}>\n" for p, ns in (prefixes or {}).items()) + query
        text = _bind(text, substitutions or {})
        triples = isinstance(form, QueryTriples)
        response = self.endpoint.select(text, [data_graph(self.build)], list(self.named.values()), triples)
        if triples:
            return _triples(response.content)
        if _NO_ROWS.search(response.content):
            self._alive()  # no rows: from this build, or because two newer builds dropped it?
        return results(response, self.endpoint.layout.query)

    def _alive(self) -> None:
        if not self.endpoint.rows(control_query("alive", build=data_graph(self.build))):
            raise StoreNotFoundError(
                f"{self.endpoint.url}: the build {self.build} this process reads was replaced by two newer "
                f"builds and dropped; run the command again (it reads the newest build)"
            )

    def quads_for_pattern(
        self,
        subject: NamedNode | BlankNode | Triple | None,
        predicate: NamedNode | None,
        object: NamedNode | BlankNode | Literal | Triple | None,
        graph_name: NamedNode | BlankNode | DefaultGraph | None = None,
    ) -> Iterator[Quad]:
        """Every quad of one graph (the only pattern the stages use), with the embedded store's graph name."""
        if subject is not None or predicate is not None or object is not None or graph_name is None:
            raise NotImplementedError("a remote store reads whole graphs: quads_for_pattern(None, None, None, graph)")
        if isinstance(graph_name, DefaultGraph):
            source = data_graph(self.build)
        elif isinstance(graph_name, NamedNode) and graph_name.value in self.named:
            source = self.named[graph_name.value]
        else:
            return iter(())
        triples = parse(self.endpoint.get(source), format=RdfFormat.N_TRIPLES)
        return (Quad(t.subject, t.predicate, t.object, graph_name) for t in triples)


_NO_ROWS = re.compile(rb'"bindings"\s*:\s*\[\s*\]')


def _triples(ntriples: bytes) -> QueryTriples:
    store = Store()
    store.load(ntriples, format=RdfFormat.N_TRIPLES)
    result = store.query(control_query("triples"))
    assert isinstance(result, QueryTriples)
    return result


def _bind(query: str, substitutions: Mapping[Variable, Term]) -> str:
    """``query`` with each bound variable as a BIND at the start of the outer group, which binds it as
    the embedded store's substitution does. Not a VALUES row there: Virtuoso 7.2 then planned the
    bound queries with an EXISTS over a ``*`` path (entity-set-properties) so that they never
    answered, using no CPU, even as the only request on a fresh server: how two test runs stalled."""
    if not substitutions:
        return query
    binds = " ".join(f"BIND({t} AS {v})" for v, t in substitutions.items())
    at = group_start(query)
    return f"{query[: at + 1]} {binds} {query[at + 1 :]}"


def open_remote(path: Path) -> RemoteStore | None:
    """A :class:`RemoteStore` for a cache directory; None for a local store."""
    meta = remote_meta(path)
    if meta is None:
        return None
    named = meta.get("named_graphs")
    return RemoteStore(str(meta["url"]), str(meta["build"]), [str(n) for n in named] if isinstance(named, list) else [])
