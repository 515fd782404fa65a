"""Shared fixtures for the ``kg build`` tests.

Real third-party data lives beside the repository in ``../shared/data`` (see its
README.md); it is used in place, never copied, and a test that needs it fails with a clear
reason when it is absent (CI lays it beside the clone). Hand-made documents live in ``tests/data`` (valid
edge cases) and ``tests/invalid`` (each broken in one documented way).

Expensive builds are session-scoped: each real corpus is built once per test run,
into a temporary store plus Turtle file, and the tests query that graph. ``make test`` runs the
suite on two pytest-xdist workers; a session build is then made by the first worker that needs it,
under a file lock in the run's shared temporary folder, and the other worker reuses it (``once``).
"""

from __future__ import annotations

import hashlib
import http.server
import os
import pickle
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
import uvicorn
from filelock import FileLock
from pyoxigraph import RdfFormat, Store

import scripted_llm
import virtuoso_server
from processkg.build.pipeline import BuildOptions, BuildReport, build_store
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.graph.store import plain
from processkg.retrieve.index import IndexReport, build_index
from processkg.serve.app import Server, create_app, open_server
from processkg.serve.http_protocol import HeadWithBodyProtocol
from processkg.tools.local_server import free_port
from processkg.vocab import PREFIXES

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DATA = ROOT / "tests" / "data"
INVALID = ROOT / "tests" / "invalid"
DEMO = ROOT / "data" / "demo"


#: The slowest modules, slowest first (seconds per module, setup included, in a run of 2026-12-04 on
#: two workers). With ``--no-loadscope-reorder`` (the Makefile's ``make test``) pytest-xdist's
#: ``loadscope`` hands modules to the workers in collection order, so these go out first and the short
#: ones fill in at the end; its default order is by number of tests, which sent test_architecture's
#: 224 quick tests first and the slow test_remote_store (58 tests) after a dozen others. The second
#: worker starts with test_remote_store, which indexes nothing: test_tasks's store and test_queries's
#: ``sap_store`` both encode the A2X texts into the one embedding cache, under its lock, so started
#: side by side one would wait for the other's encoding.
SLOWEST_FIRST = (
    "test_tasks.py",
    "test_remote_store.py",
    "test_queries.py",
    "test_hostile.py",
    "test_audit.py",
    "test_propose.py",
    "test_serve_seed.py",
    "test_validate.py",
    "test_validate_compiled.py",
    "test_index.py",
    "test_routing.py",
    "test_environment_errors.py",
    "test_shapes.py",
    "test_mcp.py",
    "test_describe.py",
    "test_store_safety.py",
    "test_sap_annotations.py",
    "test_eval_agent.py",
    "test_properties.py",
    "test_store_handle.py",
)


#: A sales order with one item that kg serve of the tasks store accepts (SAP's reference organisation 1710,
#: a generated customer and product).
A2X_ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1710",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000002",
    "to_Item": [{"Material": "0000000001", "RequestedQuantity": "2", "RequestedQuantityUnit": "PC"}],
}

#: A sales order header that kg serve of the demo accepts (its sales organisation 1000, customer 1).
DEMO_ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1000",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000001",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of :data:`SLOWEST_FIRST` first, in its order; the rest after them, as collected."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def shared(*parts: str) -> Path:
    """A path below ``../shared/data``; a missing file fails the test (it is a regression, not a skip)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"real data {path} is absent: ../shared/data must lie beside the repository")
    return path


# ------------------------------------------------------------------ graph helpers


def graph_of(turtle: bytes) -> Store:
    """An in-memory store holding exactly the built triples (default graph)."""
    store = Store()
    store.bulk_load(turtle, format=RdfFormat.TURTLE)
    return store


def rows(store: Store, query: str) -> list[tuple]:
    """SELECT rows as tuples of plain Python values (IRIs as strings)."""
    result = store.query(query, prefixes=PREFIXES)
    names = [v.value for v in result.variables]
    return [tuple(plain(row[n]) for n in names) for row in result]


def values(store: Store, query: str) -> list:
    """The single column of a one-variable SELECT, sorted."""
    return sorted(r[0] for r in rows(store, query))


def ask(store: Store, query: str) -> bool:
    return bool(store.query(query, prefixes=PREFIXES))


def tree_digest(path: Path) -> dict:
    """{relative path: sha256} of every file below ``path`` (store directories)."""
    return {
        p.relative_to(path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@dataclass
class Built:
    """One finished build: its report, store directory, Turtle file and a queryable graph."""

    report: BuildReport
    store_dir: Path
    ttl: Path
    graph: Store

    def rows(self, query: str) -> list[tuple]:
        return rows(self.graph, query)

    def values(self, query: str) -> list:
        return values(self.graph, query)

    def ask(self, query: str) -> bool:
        return ask(self.graph, query)


def run_build(tmp: Path, **options) -> Built:
    store_dir, ttl = tmp / "store", tmp / "graph.ttl"
    report = build_store(BuildOptions(store=StoreLocation.parse(store_dir), out=ttl, **options))
    return Built(report, store_dir, ttl, graph_of(ttl.read_bytes()))


T = TypeVar("T")


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)`` once per test run, also across pytest-xdist workers: the first worker makes it
    under a lock in the run's shared temporary folder and pickles the result; the others load it.
    What ``make`` writes into ``folder`` (stores, Turtle) is then read by every worker."""
    root = run_folder(tmp_path_factory)
    folder, done = root / f"once-{name}", root / f"once-{name}.pickle"
    with FileLock(str(root / f"once-{name}.lock")):
        if done.exists():
            return pickle.loads(done.read_bytes())
        folder.mkdir(exist_ok=True)
        value = make(folder)
        done.write_bytes(pickle.dumps(value))
        return value


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, **options) -> Built:
    """A session build shared by the workers (``once``); each worker parses the Turtle itself."""

    def make(folder: Path) -> tuple[BuildReport, Path, Path]:
        built = run_build(folder, **options)
        return built.report, built.store_dir, built.ttl

    report, store_dir, ttl = once(tmp_path_factory, name, make)
    return Built(report, store_dir, ttl, graph_of(ttl.read_bytes()))


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder, shared by its pytest-xdist workers (each worker's own folder is below it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def embedding_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's one embedding cache, shared by the workers: write it only through :func:`index_store`."""
    return run_folder(tmp_path_factory) / "embedding-cache"


def index_store(tmp_path_factory: pytest.TempPathFactory, store: Path | StoreLocation, **options) -> IndexReport:
    """``build_index(store)`` through the run's embedding cache, under its lock: a text is encoded once
    per run, by whichever worker needs it first (a cold A2X index costs half a minute of CPU; warm, 2 s).
    Without the lock, two workers saving the cache at once would each drop what the other encoded."""
    cache = embedding_cache(tmp_path_factory)
    with FileLock(f"{cache}.lock"):
        location = store if isinstance(store, StoreLocation) else StoreLocation(path=store)
        return build_index(location, cache_dir=cache, **options)


# ------------------------------------------------------------------ kg serve on loopback


@pytest.fixture(scope="module")
def tasks_server(tasks_store: Path) -> Server:
    """``kg serve`` of the session's tasks store, one per module (no CSRF, ``/$reset`` allowed)."""
    return open_server(StoreHandle.open(tasks_store), csrf=False, allow_reset=True)


@pytest.fixture
def tasks_client(tasks_server: Server) -> Iterator[httpx.Client]:
    """An HTTP client of :func:`tasks_server` on loopback, its records reset before each test."""
    with running(tasks_server) as client:
        assert client.post("/$reset").status_code == 204
        yield client


@contextmanager
def running(server: Server, timeout: float = 60) -> Iterator[httpx.Client]:
    """``kg serve``'s application for ``server`` under uvicorn on a free loopback port, in a thread,
    with an HTTP client for it; stopped when the block ends."""
    with (
        uvicorn_on(create_app(server), HeadWithBodyProtocol) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as client,
    ):
        yield client


@contextmanager
def uvicorn_on(app: object, protocol: type) -> Iterator[int]:
    """The ASGI ``app`` under uvicorn with the HTTP ``protocol`` on a free loopback port, in a thread; the
    port. Stopped when the block ends."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http=protocol)  # type: ignore[arg-type]
    web = uvicorn.Server(config)
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert web.started, "the server did not start within 30 s"
    try:
        yield port
    finally:
        web.should_exit = True
        thread.join(timeout=10)


# ------------------------------------------------------------------ session builds


@pytest.fixture(scope="session")
def a2x_built(tmp_path_factory) -> Built:
    """The 45 SAP S/4HANA A2X services (39 V2, 6 V4), built once for the whole session."""
    return built_once(tmp_path_factory, "a2x", odata=[shared("odata", "s4-a2x")])


@pytest.fixture(scope="session")
def a2x(a2x_built) -> Built:
    return a2x_built


@pytest.fixture(scope="session")
def a2x_store(a2x_built) -> Path:
    """The A2X store directory, shared by every module that only reads it."""
    return a2x_built.store_dir


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> Built:
    """All of ``odata/samples``: Northwind V2/V3/V4, TripPin, OASIS examples, SAP SDK and pyodata."""
    return built_once(tmp_path_factory, "samples", odata=[shared("odata", "samples")])


#: A few Fiori service folders: V2 with separate annotation files, and both V4 services.
FIORI_SERVICES = (
    "BILLOFMATERIALV2_SRV",
    "MD_BUSINESSPARTNER_SRV",
    "SD_F1814_SO_FS_SRV",
    "C_SALESORDERMANAGE_SD_V4",
    "UI_PPS_PURCHASEORDER_MANAGE_2_V4",
)


@pytest.fixture(scope="session")
def fiori(tmp_path_factory) -> Built:
    folders = [shared("odata", "s4-fiori", name) for name in FIORI_SERVICES]
    return built_once(tmp_path_factory, "fiori", odata=folders)


@pytest.fixture(scope="session")
def fiori_all(tmp_path_factory) -> Path:
    """The store of the whole s4-fiori corpus (63 services, no index), for the audit tests and the
    service model of tests/test_sap_annotations.py. Built without payload shapes: neither reads them
    (half the build's CPU); that module makes the shapes of all 63 services from the model it reads."""

    def make(tmp: Path) -> Path:
        store = StoreLocation.parse(tmp / "store")
        build_store(BuildOptions(odata=[shared("odata", "s4-fiori")], store=store, on_error="warn", shapes=False))
        return tmp / "store"

    return once(tmp_path_factory, "fiori-all", make)


@pytest.fixture(scope="session")
def miwg(tmp_path_factory) -> Built:
    """All MIWG models of all tools; three Signavio exports are broken and skipped (warn)."""
    return built_once(tmp_path_factory, "miwg", bpmn=[shared("bpmn", "miwg")], on_error="warn")


#: SAP's standard sales-document rejection reasons (customizing table TVAG), as a code list for the
#: value help I_SalesDocumentRjcnReason of SD_F2187_CUST360_SRV's function import parameters.
REJECTION_REASONS = (
    "value_list,code,description\n"
    "I_SalesDocumentRjcnReason,00,Assigned by the System (Internal)\n"
    "I_SalesDocumentRjcnReason,01,Delivery date too late\n"
    "I_SalesDocumentRjcnReason,02,Poor quality\n"
    "I_SalesDocumentRjcnReason,03,Too expensive\n"
)


@pytest.fixture(scope="session")
def operations_store(tmp_path_factory) -> Path:
    """Services whose operations the A2X corpus lacks: SD_F2187_CUST360_SRV (V2 function imports, a
    parameter with a value help, whose codes come from REJECTION_REASONS), C_SALESORDERMANAGE_SD_V4
    (V4 bound actions and an action import) and OASIS's TripPin (V4 functions with parameters)."""
    odata = [
        shared("odata", "s4-fiori", "SD_F2187_CUST360_SRV"),
        shared("odata", "s4-fiori", "C_SALESORDERMANAGE_SD_V4"),
        shared("odata", "samples", "oasis-tcs__odata-openapi", "TripPin.xml"),
    ]

    def make(tmp: Path) -> Path:
        codes = tmp / "rejection-reasons.csv"
        codes.write_text(REJECTION_REASONS, encoding="utf-8")
        build_store(BuildOptions(odata=odata, codes=[codes], store=StoreLocation.parse(tmp / "store")))
        return tmp / "store"

    return once(tmp_path_factory, "operations", make)


def handmade_options() -> dict:
    return dict(
        odata=[DATA / "odata"],
        bpmn=[DATA / "bpmn"],
        mapping=DATA / "mapping.yaml",
        codes=[DATA / "codes"],
    )


@pytest.fixture(scope="session")
def handmade(tmp_path_factory) -> Built:
    """Everything in tests/data: hand-made OData, BPMN, mapping and code lists."""
    return built_once(tmp_path_factory, "handmade", **handmade_options())


def demo_options() -> dict:
    """The bundled demo, as `make demo` builds it."""
    return dict(odata=[DEMO / "odata"], bpmn=[DEMO / "bpmn"], codes=[DEMO / "codes"], mapping=DEMO / "mapping.yaml")


@pytest.fixture(scope="session")
def demo_built(tmp_path_factory) -> Built:
    """The bundled demo (data/demo), built once per session."""
    return built_once(tmp_path_factory, "demo", **demo_options())


@pytest.fixture(scope="session")
def demo_store(demo_built) -> Path:
    """The demo store directory, shared by every module that only reads it."""
    return demo_built.store_dir


@pytest.fixture(scope="session")
def sap_store(tmp_path_factory) -> Path:
    """The 45 A2X services with the SAP process layer (data/sap/processes, mapping.yaml), with its
    retrieval index: the store the routed ``hybrid`` was trained on. Built once per session; the
    embeddings go through the session's shared cache (``embedding-cache``)."""
    sap = ROOT / "data" / "sap"
    options = BuildOptions(odata=[shared("odata", "s4-a2x")], bpmn=[sap / "processes"], mapping=sap / "mapping.yaml")

    def make(tmp: Path) -> Path:
        options.store = StoreLocation(path=tmp / "store")
        build_store(options)
        index_store(tmp_path_factory, options.store)
        return tmp / "store"

    return once(tmp_path_factory, "sap", make)


@pytest.fixture(scope="session")
def tasks_built(tmp_path_factory) -> tuple[BuildReport, Path]:
    """The build report and store of the agent tasks (data/sap/tasks): the 45 A2X services with the SAP
    process layer, the SAP code lists bound to their properties (data/sap/codes, bindings.yaml), the curated
    required-on-create fields (data/sap/required), the curated document flow (data/sap/flow) and the
    retrieval index; what ``kg serve`` serves for the task checks and ``kg eval agent``, and what
    tests/test_sap_codes.py checks the bindings on. Built once per session."""
    sap = ROOT / "data" / "sap"
    options = BuildOptions(
        odata=[shared("odata", "s4-a2x")],
        bpmn=[sap / "processes"],
        mapping=sap / "mapping.yaml",
        codes=[sap / "codes"],
        code_bindings=sap / "codes" / "bindings.yaml",
        required=sap / "required",
        flow=sap / "flow",
    )

    def make(tmp: Path) -> tuple[BuildReport, Path]:
        options.store = StoreLocation(path=tmp / "store")
        report = build_store(options)
        index_store(tmp_path_factory, options.store)
        return report, tmp / "store"

    return once(tmp_path_factory, "tasks", make)


@pytest.fixture(scope="session")
def tasks_store(tasks_built) -> Path:
    """The store of :func:`tasks_built`."""
    return tasks_built[1]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 500 and remembers the path of every request it gets."""

    def do_GET(self):
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        self.send_response(500)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def recording_server():
    """A loopback HTTP server that records every request, for tests that must prove nothing reached
    a network: compare ``recording_server.requests`` before and after."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    srv.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="session")
def demo_indexed_store(tmp_path_factory) -> Path:
    """The demo built with its retrieval index and raw-metadata chunks (``kg build --index --chunks``),
    for the agent tools (tests/test_mcp.py, tests/test_agent.py) and, copied, tests/test_index.py; embeddings
    through the shared cache."""

    def make(tmp: Path) -> Path:
        build_store(BuildOptions(store=StoreLocation.parse(tmp / "store"), **demo_options()))
        index_store(tmp_path_factory, tmp / "store", odata=[DEMO / "odata"])
        return tmp / "store"

    return once(tmp_path_factory, "demo-indexed", make)


@pytest.fixture(scope="module")
def llm():
    """The scripted OpenAI-compatible chat server of tests/scripted_llm.py on loopback, one per module."""
    server = scripted_llm.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


# ------------------------------------------------------------------ a second SPARQL server


@pytest.fixture(scope="session")
def virtuoso_starting(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Future[tuple[subprocess.Popen[bytes], str]]]:
    """Virtuoso being started in a thread: its fresh database takes seconds, most of them waiting, so a
    module that needs it asks for this first and runs its other tests meanwhile (tests/test_remote_store.py
    runs its Oxigraph tests first). :func:`virtuoso` waits for it; stopped at the end of the session."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        starting = pool.submit(virtuoso_server.start, tmp_path_factory.mktemp("virtuoso"))
        yield starting
        if starting.exception() is None:
            virtuoso_server.stop(starting.result()[0])


@pytest.fixture(scope="session")
def virtuoso(virtuoso_starting: Future[tuple[subprocess.Popen[bytes], str]]) -> str:
    """OpenLink Virtuoso (tests/virtuoso_server.py) on loopback with a fresh database, as a ``--store``
    URL: its query endpoint and its Graph Store Protocol service. A missing server fails."""
    try:
        _process, url = virtuoso_starting.result()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return url
