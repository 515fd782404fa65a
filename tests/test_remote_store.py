"""``--store http://...``: the graph on a real ``oxigraph serve`` on loopback gives the answers of the
embedded store (build, query, stats, validate, retrieve, serve, the agent tools), switches atomically,
and never lets a user query make the server fetch anything (docs/deployment.md)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pyoxigraph import BlankNode, DefaultGraph, NamedNode
from starlette.testclient import TestClient

from conftest import DEMO, demo_options
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.errors import QueryRefusedError, RemoteStoreError, StoreNotFoundError
from processkg.graph import remote
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.graph.store import canonical_ntriples, load_query, records, select, version_dir
from processkg.serve.app import create_app, open_server
from processkg.tools.local_server import free_port
from processkg.tools.toolbox import Toolbox

SHAPES = NamedNode("https://w3id.org/processkg/shapes")
QUERIES = sorted(p.stem for p in (Path(__file__).parents[1] / "src/processkg/assets/queries").glob("*.rq"))


def oxigraph_binary() -> str:
    found = shutil.which("oxigraph", path=str(Path(sys.executable).parent)) or shutil.which("oxigraph")
    if not found:
        pytest.fail("the oxigraph server (PyPI package oxigraph, in the test extra) is not installed")
    return found


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``oxigraph serve`` on a free loopback port, once it answers."""
    port = free_port()
    process = subprocess.Popen(
        [oxigraph_binary(), "serve", "--location", str(folder), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/query", params={"query": "ASK {}"}, timeout=2, trust_env=False)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    pytest.fail("oxigraph serve did not answer within 30 s")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every remote cache of this module under its own folder."""
    folder = tmp_path_factory.mktemp("remote-cache")
    before = os.environ.get("PROCESSKG_CACHE")
    os.environ["PROCESSKG_CACHE"] = str(folder)
    yield folder
    if before is None:
        del os.environ["PROCESSKG_CACHE"]
    else:
        os.environ["PROCESSKG_CACHE"] = before


#: A test marked BOTH runs on ``oxigraph serve`` and on Virtuoso; the others on Oxigraph only: they
#: start their own Oxigraph server, or take minutes on Virtuoso (the table in docs/deployment.md).
BOTH = pytest.mark.parametrize("server", ["oxigraph", "virtuoso"], indirect=True)


@pytest.fixture(scope="module", autouse=True)
def virtuoso_starts_first(request: pytest.FixtureRequest) -> None:
    """When a test of the run needs Virtuoso, it starts in the background as the module starts
    (conftest.virtuoso_starting): its start, seconds of waiting, overlaps the Oxigraph tests, which run first."""
    if any(
        item.path == request.path
        and getattr(item, "callspec", None)
        and item.callspec.params.get("server") == "virtuoso"
        for item in request.session.items
    ):
        request.getfixturevalue("virtuoso_starting")


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Iterator[str]:
    """The store URL of a SPARQL server: ``oxigraph serve`` (its own layout, a bare ``http://HOST:PORT``)
    or, for tests marked BOTH, also Virtuoso (``conftest.virtuoso``: a query endpoint and a GSP service)."""
    if getattr(request, "param", "oxigraph") == "virtuoso":
        yield request.getfixturevalue("virtuoso")
        return
    process, url = start_server(tmp_path_factory.mktemp("oxigraph"))
    yield url
    process.kill()
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with its index in an embedded store: the answers every server must give."""
    local = tmp_path_factory.mktemp("embedded") / "store"
    build_store(BuildOptions(store=StoreLocation.parse(local), index=True, **demo_options()))
    return local


@pytest.fixture(scope="module")
def stores(embedded: Path, server: str) -> tuple[Path, str]:
    """The demo with its index, built into an embedded store and onto the server."""
    build_store(
        BuildOptions(store=StoreLocation.parse(Path(server)), index=True, **demo_options())
    )  # a Path folds '//': still a URL
    return embedded, server


def kg(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


@BOTH
def test_the_same_triples_in_the_default_graph_and_the_shapes(stores):
    local, url = stores
    for graph in (DefaultGraph(), SHAPES):
        mine = canonical_ntriples(q.triple for q in open_store(local).quads_for_pattern(None, None, None, graph))
        theirs = canonical_ntriples(q.triple for q in open_store(url).quads_for_pattern(None, None, None, graph))
        assert mine == theirs and mine.count(b"\n") > 100


def test_a_build_sent_in_small_chunks_arrives_whole(stores, tmp_path, monkeypatch):
    """Each graph is serialized in full before its PUT starts (a server stops waiting for a body that
    stalls: 100x A2X got HTTP 500, os error 11), then sent in SEND_PART-byte chunks."""
    local, _url = stores
    monkeypatch.setattr(remote, "SEND_PART", 4096)
    serialized, sent = [], []
    real_serialize, real_put = remote.serialize, remote.Endpoint.put

    def serialize(*args, **kwargs):
        serialized.append(real_serialize(*args, **kwargs))

    def put(endpoint, graph, body, size=None):
        done = len(serialized)  # graphs serialized when this PUT starts
        parts = [body] if isinstance(body, bytes) else list(body)
        assert size is None or size == sum(map(len, parts))  # sent as Content-Length, never chunked
        sent.append((done, parts))
        real_put(endpoint, graph, b"".join(parts))

    monkeypatch.setattr(remote, "serialize", serialize)
    monkeypatch.setattr(remote.Endpoint, "put", put)
    process, url = start_server(tmp_path / "db")
    try:
        build_store(BuildOptions(store=StoreLocation.parse(Path(url)), **demo_options()))
        mine = canonical_ntriples(
            q.triple for q in open_store(local).quads_for_pattern(None, None, None, DefaultGraph())
        )
        theirs = canonical_ntriples(
            q.triple for q in open_store(url).quads_for_pattern(None, None, None, DefaultGraph())
        )
        assert mine == theirs
    finally:
        process.kill()
        process.wait(timeout=10)
    data_parts = sent[0][1]
    assert sent[0][0] == 1, "the data graph was sent before it was serialized in full"
    assert len(data_parts) > 10 and {len(p) for p in data_parts[:-1]} == {4096}
    assert b"".join(sorted(b"".join(data_parts).splitlines(keepends=True))) == mine


@BOTH
def test_kg_stats_prints_the_same(stores):
    local, url = stores
    assert kg("stats", "--store", local) == kg("stats", "--store", url)
    assert "kg:EntitySet" in kg("stats", "--store", url)[1]


@BOTH
def test_every_library_query_gives_the_same_rows(stores):
    local, url = stores
    for name in QUERIES:
        mine, theirs = (select(open_store(store), load_query(name)) for store in (local, url))
        assert mine == theirs, name


@BOTH
def test_kg_query_prints_the_same_for_a_library_query_and_a_file(stores, tmp_path):
    local, url = stores
    query = tmp_path / "count.rq"
    query.write_text("SELECT ?class (COUNT(?s) AS ?n) WHERE { ?s a ?class } GROUP BY ?class ORDER BY ?class")
    for what in ("process-entity-sets", query):
        mine = kg("query", "--store", local, what, "--format", "json")
        assert mine == kg("query", "--store", url, what, "--format", "json")
        assert mine[0] == 0 and json.loads(mine[1])


@BOTH
@pytest.mark.parametrize(
    "name, param",
    [
        ("entity-set-properties", "entitySet=A_SalesOrder"),
        (
            "entity-set-properties",
            "entitySet=https://w3id.org/processkg/id/odata/DEMO_SALES_ORDER_SRV/set/A_SalesOrder",
        ),
        ("process-chain-after", "entitySet=A_SalesOrder"),
        ("find-entity-sets", "text=order"),
        ("navigation-paths", "from=A_SalesOrder"),
    ],
)
def test_bound_library_queries_give_the_same_rows(stores, name, param):
    local, url = stores
    key, value = param.split("=", 1)
    mine, theirs = (records(open_store(store), name, **{key: value}) for store in (local, url))
    assert mine == theirs and mine


@BOTH
def test_kg_validate_gives_the_same_results(stores):
    local, url = stores
    calls = DEMO / "calls.jsonl"
    mine = kg("validate", "--store", local, calls, "--format", "json")
    assert mine == kg("validate", "--store", url, calls, "--format", "json")
    assert mine[0] == 1 and '"valid": false' in mine[1] and '"valid": true' in mine[1]


@BOTH
@pytest.mark.parametrize(
    "request_text", ["create a sales order for a customer", "bill the delivery", "approve a purchase order"]
)
def test_kg_retrieve_ranks_the_same(stores, request_text):
    local, url = stores
    mine = kg("retrieve", "--store", local, request_text, "--json", "--context")
    assert mine == kg("retrieve", "--store", url, request_text, "--json", "--context")
    assert mine[0] == 0 and json.loads(mine[1].splitlines()[0])


@BOTH
def test_another_machine_builds_the_index_from_the_server_and_ranks_the_same(stores, tmp_path, monkeypatch):
    local, url = stores
    monkeypatch.setenv("PROCESSKG_CACHE", str(tmp_path))  # a reader that has no cache of this build yet
    code, output = kg("retrieve", "--store", url, "bill the delivery")
    assert code == 2 and output == f"error: {url}: no retrieval index (run `kg index --store {url}`)\n"
    assert kg("index", "--store", url)[0] == 0
    mine = kg("retrieve", "--store", local, "bill the delivery", "--json")
    assert mine == kg("retrieve", "--store", url, "bill the delivery", "--json")


@BOTH
def test_kg_shapes_and_kg_audit_answer_the_same(stores, tmp_path):
    local, url = stores
    for n, store in enumerate((local, url)):
        assert kg("shapes", "--store", store, "--out", tmp_path / f"{n}.ttl")[0] == 0
    assert (tmp_path / "0.ttl").read_bytes() == (tmp_path / "1.ttl").read_bytes()
    audit = ("--odata", DEMO / "odata", "--bpmn", DEMO / "bpmn", "--format", "json")
    assert kg("audit", "--store", local, *audit) == kg("audit", "--store", url, *audit)


@BOTH
def test_the_cache_is_keyed_by_the_build_the_pointer_names(stores):
    _local, url = stores
    folder = StoreHandle.open(url).version
    assert folder.name == remote.pointer(remote.Endpoint(url))
    assert {p.name for p in folder.iterdir()} >= {"build.json", "metadata", "index", remote.REMOTE}


@BOTH
def test_kg_serve_answers_the_same_metadata_and_records(stores):
    local, url = stores
    root = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
    answers = []
    for store in (local, url):
        with TestClient(create_app(open_server(StoreHandle.open(Path(store)), csrf=False))) as client:
            answers.append([client.get(root + path).content for path in ("$metadata", "A_SalesOrder?$top=2")])
    assert answers[0] == answers[1]
    assert answers[1][0] == (DEMO / "odata" / "DEMO_SALES_ORDER_SRV.edmx").read_bytes()


@BOTH
def test_the_agent_tools_of_kg_mcp_answer_the_same(stores):
    local, url = stores
    answers = []
    for store in (local, url):
        box = Toolbox(StoreHandle.open(Path(store)))
        answers.append(
            [
                box.run("find_entity_sets", {"task": "create a sales order", "k": 3}),
                box.run("describe", {"service": "DEMO_SALES_ORDER_SRV", "entity_set": "A_SalesOrder"}),
            ]
        )
        box.close()
    assert answers[0] == answers[1]


# Oxigraph only: 14.7 s on Virtuoso, too slow for make test (docs/deployment.md)
def test_kg_mcp_over_stdio_serves_the_tools_on_the_server(stores):
    local, url = stores
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    kg_bin = str(Path(sys.executable).parent / "kg")
    params = StdioServerParameters(command=kg_bin, args=["mcp", "--store", url], env=env)
    task = {"task": "create a sales order", "k": 3}
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(params)) as client:
        names = [t.name for t in portal.call(client.list_tools).tools]
        found = portal.call(client.call_tool, "find_entity_sets", task)
    box = Toolbox(StoreHandle.open(local))
    expected, _failed = box.run("find_entity_sets", task)
    box.close()
    assert names == ["find_entity_sets", "describe", "next_steps", "validate_call", "call"]
    assert not found.is_error and found.structured_content == json.loads(json.dumps(expected))


# ---------------------------------------------------------------- the switch


def count(url: str) -> int:
    """Triples of the build the pointer names now (a new handle looks the pointer up each time)."""
    with StoreHandle.open(url) as handle:
        _names, rows = select(handle.graph, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    return int(rows[0][0].value)


def test_a_reader_sees_the_old_or_the_new_build_never_a_mix(stores):
    _local, url = stores
    full = count(url)
    without_mapping = {k: v for k, v in demo_options().items() if k != "mapping"}
    seen: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.append(count(url))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        build_store(BuildOptions(store=StoreLocation.parse(Path(url)), **without_mapping))
        smaller = count(url)
        build_store(BuildOptions(store=StoreLocation.parse(Path(url)), **demo_options()))
    finally:
        done.set()
        reader.join()
    assert smaller < full and count(url) == full
    assert seen and set(seen) <= {full, smaller}, sorted(set(seen))
    assert len(remote.builds(remote.Endpoint(url))) == 2  # the one before stays for readers; older are dropped


def test_a_build_whose_pointer_changed_meanwhile_is_refused(stores, tmp_path):
    _local, url = stores
    started_from = remote.start(url)
    build_store(BuildOptions(store=StoreLocation.parse(Path(url)), **demo_options()))  # another build wins meanwhile
    build_store(BuildOptions(store=StoreLocation.parse(tmp_path / "store"), **demo_options()))
    version = version_dir(tmp_path / "store")
    with pytest.raises(RemoteStoreError, match="another kg build switched the store meanwhile"):
        remote.publish(url, started_from, version, version / "oxigraph")
    assert len(remote.builds(remote.Endpoint(url))) == 2  # the refused build left nothing behind


def test_a_reader_of_a_dropped_build_is_told_not_given_empty_answers(stores):
    _local, url = stores
    pinned = StoreHandle.open(url).graph
    assert select(pinned, "SELECT ?s WHERE { ?s a <urn:nothing> }")[1] == []  # empty, and the build is there
    for _ in range(2):
        build_store(BuildOptions(store=StoreLocation.parse(Path(url)), **demo_options()))
    with pytest.raises(StoreNotFoundError, match="replaced by two newer builds and dropped; run the command again"):
        select(pinned, "SELECT ?s WHERE { ?s a <urn:nothing> }")


# ---------------------------------------------------------------- refusals


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_response(404)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    Recorder.seen = []
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=web.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{web.server_address[1]}/sparql", Recorder.seen
    web.shutdown()


@BOTH
def test_a_service_query_is_refused_before_it_reaches_the_server(stores, recorder, tmp_path):
    _local, url = stores
    target, seen = recorder
    hostile = tmp_path / "hostile.rq"
    hostile.write_text(f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}")
    code, output = kg("query", "--store", url, hostile)
    assert code == 2 and "SERVICE" in output
    with pytest.raises(QueryRefusedError, match="SERVICE"):
        open_store(url).query(hostile.read_text())
    assert seen == []
    if not remote.Layout(url).oxigraph:
        return  # Virtuoso refuses SERVICE to its anonymous SPARQL user (docs/deployment.md)
    # the danger is real: sent as is, the oxigraph server itself fetches the SERVICE
    httpx.post(f"{url}/query", data={"query": hostile.read_text()}, timeout=30, trust_env=False)
    assert seen


def test_an_unreachable_server_is_one_line_naming_it():
    url = f"http://127.0.0.1:{free_port()}"
    code, output = kg("stats", "--store", url)
    assert code == 2 and output.count("\n") == 1
    assert output.startswith(f"error: {url}: the SPARQL server does not answer")


def test_a_server_without_a_build_names_the_command_that_makes_one(tmp_path, cache):
    process, url = start_server(tmp_path / "empty")
    try:
        code, output = kg("retrieve", "--store", url, "sales order")
    finally:
        process.kill()
        process.wait(timeout=10)
    assert code == 2 and output.count("\n") == 1
    assert f"{url}: no processkg build on this SPARQL server (run `kg build ... --store {url}` first)" in output


def _switch(url: str, expected: str | None, build_id: str, barrier: threading.Barrier, outcomes: list[str]) -> None:
    mine = remote.Endpoint(url)
    barrier.wait()
    try:
        remote.switch(mine, expected, build_id)
        outcomes.append("won")
    except RemoteStoreError as exc:
        assert "another kg build switched the store meanwhile" in str(exc)
        outcomes.append("lost")


def test_two_builds_switching_at_the_same_moment_leave_one_pointer_and_one_winner(stores):
    """Oxigraph applies two simultaneous compare-and-swap updates both (two pointers were left in
    the tenth try here before switch() handled it): the older build wins, the other withdraws."""
    _local, url = stores
    endpoint = remote.Endpoint(url)
    for _trial in range(10):
        expected = remote.pointer(endpoint)
        ids = [remote.new_build_id() for _ in range(2)]
        for build_id in ids:
            endpoint.put(remote.data_graph(build_id), b"<urn:a> <urn:b> <urn:c> .\n")
        outcomes: list[str] = []
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=_switch, args=(url, expected, b, barrier, outcomes)) for b in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["lost", "won"]
        assert len(remote.pointers(endpoint)) == 1 and remote.pointer(endpoint) in ids


# ---------------------------------------------------------------- hostile servers and killed builds


def _update(url: str, text: str) -> None:
    httpx.post(f"{url}/update", content=text, headers={"Content-Type": "application/sparql-update"}, trust_env=False)


@pytest.mark.parametrize("hostile", ["../../../escaped", "20261203T103133Z-9061d490/../../../../escaped", "/tmp/x"])
def test_a_pointer_that_is_not_a_build_id_is_refused_not_used_as_a_path(tmp_path, monkeypatch, hostile):
    """A pointer written into the server by hand named a cache folder outside the cache
    (``kg stats`` wrote ``.../escaped.tmp-PID`` there): only the exact form of new_build_id() is read."""
    monkeypatch.setenv("PROCESSKG_CACHE", str(tmp_path / "home" / "cache"))
    process, url = start_server(tmp_path / "db")
    try:
        _update(
            url,
            f"INSERT DATA {{ GRAPH <{remote.CONTROL}> {{ <{remote.POINTER}> <{remote.CURRENT}> <{remote.BUILD}{hostile}> }} }}",
        )
        _update(url, f"INSERT DATA {{ GRAPH <{remote.BUILD}{hostile}:files> {{ <urn:a> <urn:b> <urn:c> }} }}")
        for command in ("stats", "retrieve"):
            code, output = kg(command, "--store", url, *(["sales order"] if command == "retrieve" else []))
            assert code == 2 and output.count("\n") == 1, output
            assert output.startswith(f"error: {url}: the store is damaged (its pointer names '{remote.BUILD}{hostile}'")
        code, output = kg("build", "--odata", DEMO / "odata", "--store", url, "--no-index")
        assert code == 2 and "the store is damaged" in output and output.count("\n") == 1
    finally:
        process.kill()
        process.wait(timeout=10)
    assert not list(tmp_path.rglob("*escaped*")) and not (tmp_path / "home").exists()


class NotSparql(http.server.BaseHTTPRequestHandler):
    """A web server that is not a SPARQL server: an HTML page for every request, with ``status``."""

    status: ClassVar[int] = 200

    def do_GET(self) -> None:
        body = b"<!DOCTYPE html><html><body><h1>Welcome</h1></body></html>"
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_DELETE = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("status", [200, 404])
@pytest.mark.parametrize("command", ["stats", "build", "retrieve"])
def test_a_url_that_is_not_a_sparql_server_is_one_line_naming_it(status, command, tmp_path, monkeypatch):
    """An HTML page with 200 was an internal error (exit 3, a SPARQL results parser's SyntaxError)."""
    monkeypatch.setattr(NotSparql, "status", status)
    monkeypatch.setenv("PROCESSKG_CACHE", str(tmp_path))
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotSparql)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{web.server_address[1]}"
    args = {"stats": [], "build": ["--odata", DEMO / "odata", "--no-index"], "retrieve": ["sales order"]}[command]
    try:
        code, output = kg(command, "--store", url, *args) if command != "build" else kg(command, *args, "--store", url)
    finally:
        web.shutdown()
    assert code == 2 and output.count("\n") == 1, output
    assert output.startswith(f"error: {url}/query: ")
    cause = "answered text/html, not SPARQL results" if status == 200 else "HTTP 404: Welcome"
    assert cause in output and "is the URL that of a SPARQL server" in output
    assert list(tmp_path.iterdir()) == []


_SLOW_UPLOAD = """
import sys, time
from processkg.cli import main
from processkg.graph import remote

real = remote.Endpoint.put


def put(endpoint, graph, body, size=None):  # the real upload, then a pause: the test kills the build here
    real(endpoint, graph, body, size)
    print(graph, flush=True)
    time.sleep(600)


remote.Endpoint.put = put
main(sys.argv[1:])
"""


def _kg_process(args: list[str], env: dict[str, str], script: str | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", script, *args] if script else [str(Path(sys.executable).parent / "kg"), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_a_killed_remote_build_leaves_nothing_once_the_next_build_ran(tmp_path):
    """SIGKILLed while it uploaded, a build left its temporary store (149 MB at A2X) in TMPDIR and a
    graph nobody points to on the server, and the next build removed neither. Now the next build
    removes both, and keeps the published build and the one before it."""
    private = tmp_path / "tmpdir"
    private.mkdir()
    env = os.environ | {"TMPDIR": str(private), "PROCESSKG_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    args = ["build", "--odata", str(DEMO / "odata"), "--bpmn", str(DEMO / "bpmn"), "--no-index"]
    process, url = start_server(tmp_path / "db")
    endpoint = remote.Endpoint(url)
    try:
        first = _kg_process([*args, "--store", url], env)
        assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
        published = remote.pointer(endpoint)
        killed = _kg_process([*args, "--store", url], env, _SLOW_UPLOAD)
        assert killed.stdout is not None
        uploaded = killed.stdout.readline()  # the server holds a graph of the killed build now
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        partial = remote.builds(endpoint)
        assert uploaded.startswith(remote.BUILD) and len(partial) == 2 and published in partial, (uploaded, partial)
        assert [p.name[:16] for p in private.iterdir()] == ["processkg-build-"]  # the leftover
        again = _kg_process([*args, "--store", url], env)
        assert again.wait(timeout=300) == 0, again.stderr.read() if again.stderr else ""
        current = remote.pointer(endpoint)
        assert sorted(remote.builds(endpoint)) == sorted([published, current])
        assert sorted(remote.origins(endpoint)) == sorted([published, current])
        assert list(private.iterdir()) == []
    finally:
        process.kill()
        process.wait(timeout=10)


def test_the_sweep_keeps_a_build_that_may_still_win_and_drops_the_doomed(tmp_path):
    """After a switch, a build that started from the new pointer may still switch: it stays. A
    build that started from another pointer can never switch: dropped, as is a graph with no record."""
    process, url = start_server(tmp_path / "db")
    endpoint = remote.Endpoint(url)
    try:
        previous, current, live, doomed, orphan = (remote.new_build_id() for _ in range(5))
        for build_id, started in ((previous, None), (current, previous), (live, current), (doomed, previous)):
            origin = remote.data_graph(started) if started else remote.NOTHING
            _update(
                url,
                f"INSERT DATA {{ GRAPH <{remote.CONTROL}> {{ <{remote.data_graph(build_id)}> <{remote.REPLACES}> <{origin}> }} }}",
            )
        for build_id in (previous, current, live, doomed, orphan):
            endpoint.put(remote.data_graph(build_id), b"<urn:a> <urn:b> <urn:c> .\n")
        remote.switch(endpoint, None, previous)
        remote.switch(endpoint, previous, current)
        remote.sweep(endpoint, current, previous)
        assert remote.builds(endpoint) == sorted([previous, current, live])
        assert sorted(remote.origins(endpoint)) == sorted([previous, current, live])
        assert remote.pointer(endpoint) == current
    finally:
        process.kill()
        process.wait(timeout=10)


# ---------------------------------------------------------------- the SPARQL 1.1 Protocol on any server


def test_the_store_url_names_the_endpoints():
    """A bare URL is Oxigraph's layout; a path names the query endpoint, with update= and store= beside it."""
    oxigraph = remote.Layout("http://h:1")
    assert (oxigraph.query, oxigraph.update, oxigraph.store, oxigraph.oxigraph) == (
        "http://h:1/query",
        "http://h:1/update",
        "http://h:1/store",
        True,
    )
    virtuoso = remote.Layout("http://h:8890/sparql?store=/sparql-graph-crud&timeout=5000")
    assert (virtuoso.query, virtuoso.update, virtuoso.store, virtuoso.timeout, virtuoso.oxigraph) == (
        "http://h:8890/sparql",
        "http://h:8890/sparql",
        "http://h:8890/sparql-graph-crud",
        "5000",
        False,
    )
    fuseki = remote.Layout("http://h:3030/ds")
    assert fuseki.query == fuseki.update == fuseki.store == "http://h:3030/ds"


def test_a_store_url_with_an_unknown_parameter_is_one_line():
    code, output = kg("stats", "--store", "http://127.0.0.1:1/sparql?graph=x")
    assert code == 2 and output.count("\n") == 1
    assert "the store URL takes only update=, store=, timeout= once each in its query string, not graph=" in output


@BOTH
def test_ask_and_blank_nodes_answer_as_on_the_embedded_store(stores):
    """Virtuoso answers an ASK as a SELECT of ``__ASK_RETVAL`` and names blank nodes ``nodeID://b1``,
    which pyoxigraph's results parser refused (an internal error): both are read as the standard says."""
    local, url = stores
    for store in (local, url):
        assert open_store(store).query("ASK { ?s ?p ?o }")
        assert not open_store(store).query("ASK { ?s a <urn:nothing> }")
    query = "SELECT (COUNT(?b) AS ?n) WHERE { GRAPH ?g { ?s ?p ?b FILTER(isBlank(?b)) } }"
    mine, theirs = (select(open_store(store), query)[1] for store in (local, url))
    assert mine == theirs and int(mine[0][0].value) > 10
    _names, rows = select(open_store(url), "SELECT ?b WHERE { GRAPH ?g { ?s ?p ?b FILTER(isBlank(?b)) } } LIMIT 1")
    assert rows and isinstance(rows[0][0], BlankNode)


@pytest.mark.parametrize("server", ["virtuoso"], indirect=True)
def test_a_query_virtuoso_stops_at_the_timeout_is_one_line_not_part_of_the_rows(stores, tmp_path):
    """``timeout=`` in the store URL is sent with every query; Virtuoso then answers HTTP 200 with the
    rows it had (X-SQL-State S1TAT), which were printed as if complete."""
    _local, url = stores
    heavy = tmp_path / "heavy.rq"
    heavy.write_text("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
    code, output = kg("query", "--store", f"{url}&timeout=100", heavy)
    assert code == 2 and output.count("\n") == 1, output
    assert "the server stopped the query and answered part of it (RC...: Returning incomplete results" in output
