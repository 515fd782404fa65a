"""SPARQL never reaches a network, never changes data, and ``kg query`` stays within bounds.

Every refusal is checked against a real HTTP server on 127.0.0.1 that must see no request,
through the library (``select``), through ``kg query`` and through a bound parameter. A control
test shows that pyoxigraph on its own does send these requests, so the server would notice.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest
from click.testing import CliRunner
from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, Store

from processkg.assets import queries_dir
from processkg.cli import main
from processkg.errors import QueryError, QueryLimitError, QueryRefusedError
from processkg.graph.bounded import run_bounded
from processkg.graph.handle import StoreHandle, open_store
from processkg.graph.sparql import check
from processkg.graph.store import load_query, plain, select

CARTESIAN = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


@pytest.fixture(scope="module")
def server(recording_server):
    """A SPARQL 'endpoint' on loopback that must see no request."""
    return recording_server


def endpoint(server) -> str:
    return f"http://127.0.0.1:{server.server_port}/sparql"


def bypasses(url: str) -> dict[str, str]:
    base = url.rsplit("/", 1)[0] + "/"
    return {
        "plain": f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}",
        "lower case": f"select * where {{ service <{url}> {{ ?s ?p ?o }} }}",
        "comment between": f"SELECT * WHERE {{ SERVICE # the endpoint:\n <{url}> {{ ?s ?p ?o }} }}",
        "newline between": f"SELECT * WHERE {{ SERVICE\n\n<{url}> {{ ?s ?p ?o }} }}",
        "no space": f"SELECT * WHERE {{ SERVICE<{url}>{{ ?s ?p ?o }} }}",
        "prefixed name": f"PREFIX ep: <{base}>\nSELECT * WHERE {{ SERVICE ep:sparql {{ ?s ?p ?o }} }}",
        "empty local name": f"PREFIX ep: <{url}>\nSELECT * WHERE {{ SERVICE ep: {{ ?s ?p ?o }} }}",
        "silent prefixed": f"PREFIX ep: <{base}>\nSELECT * WHERE {{ SERVICE SILENT ep:sparql {{ ?s ?p ?o }} }}",
        "silent comment": f"SELECT * WHERE {{ SERVICE #x\n SILENT #y\n <{url}> {{ ?s ?p ?o }} }}",
        "variable": f"SELECT * WHERE {{ VALUES ?e {{ <{url}> }} SERVICE ?e {{ ?s ?p ?o }} }}",
        "nested": f"SELECT * WHERE {{ ?x ?y ?z OPTIONAL {{ SELECT ?s WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }} }} }}",
        "unicode escape": f"SELECT * WHERE {{ \\u0053ERVICE <{url}> {{ ?s ?p ?o }} }}",
        "from": f"SELECT * FROM <{url}> WHERE {{ ?s ?p ?o }}",
        "from named": f"SELECT * FROM NAMED <{url}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
        "from comment": f"SELECT * FROM #x\n<{url}> WHERE {{ ?s ?p ?o }}",
    }


BYPASSES = list(bypasses("http://x/sparql"))
REFUSED = r"federated SERVICE queries are not supported|FROM and FROM NAMED are not supported"


def one_line_error(result, pattern: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


def kg(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


# ---------------------------------------------------------------- never a network


def test_control_pyoxigraph_alone_does_reach_the_server(server):
    """Without processkg's check, the same queries do send requests: the server would see a bypass."""
    store = Store()
    store.add(Quad(NamedNode("http://a"), NamedNode("http://b"), Literal("c")))
    before = len(server.requests)
    for name in ("comment between", "prefixed name", "silent prefixed"):
        with contextlib.suppress(OSError):
            list(store.query(bypasses(endpoint(server))[name]))
    assert len(server.requests) == before + 3


@pytest.mark.parametrize("name", BYPASSES)
def test_select_refuses_every_way_to_a_network(server, demo_store, name):
    before = len(server.requests)
    with pytest.raises(QueryRefusedError, match=REFUSED):
        select(open_store(demo_store), bypasses(endpoint(server))[name])
    assert len(server.requests) == before


@pytest.mark.parametrize("name", BYPASSES)
def test_kg_query_refuses_every_way_to_a_network(server, demo_store, name):
    before = len(server.requests)
    one_line_error(kg("query", "--store", demo_store, "-", input=bypasses(endpoint(server))[name]), REFUSED)
    assert len(server.requests) == before


def test_endpoint_bound_by_a_parameter_is_refused(server, demo_store):
    query = "SELECT ?e ?s WHERE { SERVICE ?e { ?s ?p ?o } }"
    before = len(server.requests)
    with pytest.raises(QueryRefusedError, match="federated SERVICE"):
        select(open_store(demo_store), query, {"e": endpoint(server)})
    one_line_error(
        kg("query", "--store", demo_store, "-", "--param", f"e={endpoint(server)}", input=query), "federated SERVICE"
    )
    assert len(server.requests) == before


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?service WHERE { ?s kg:serviceName ?service }",
        'SELECT ?x WHERE { VALUES ?x { "SERVICE <http://127.0.0.1:9/>" "FROM" } }',
        "SELECT ?s # SERVICE <http://127.0.0.1:9/> FROM <http://127.0.0.1:9/>\nWHERE { ?s a kg:Service }",
        "PREFIX service: <http://example.org/#SERVICE>\nSELECT ?s WHERE { ?s service:FROM ?o }",
        "SELECT ?from WHERE { ?from a kg:Service }",
    ],
)
def test_words_that_only_look_like_service_or_from_run(demo_store, query):
    check(query)
    names, _ = select(open_store(demo_store), query)
    assert names


def test_library_query_with_a_parameter_named_from_runs(demo_store):
    result = kg(
        "query",
        "--store",
        demo_store,
        "navigation-paths",
        "--param",
        "from=A_SalesOrder",
        "--param",
        "to=A_Customer",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert [r["path"] for r in json.loads(result.stdout)] == ["to_SoldToParty"]


# ---------------------------------------------------------------- never an update


@pytest.mark.parametrize(
    "update",
    [
        "INSERT DATA { <http://x/s> <http://x/p> <http://x/o> }",
        "DELETE WHERE { ?s ?p ?o }",
        "PREFIX ex: <http://x/>\nDELETE { ?s ?p ?o } INSERT { ?s ex:p 1 } WHERE { ?s ?p ?o }",
        "CLEAR DEFAULT",
        "LOAD <{url}>",
    ],
)
def test_updates_are_refused_and_never_run(server, demo_store, update):
    update = update.replace("{url}", endpoint(server))
    store = open_store(demo_store)
    size, before = len(store), len(server.requests)
    with pytest.raises(QueryRefusedError, match="SPARQL Update is not allowed"):
        select(store, update)
    one_line_error(kg("query", "--store", demo_store, "-", input=update), r"^error: SPARQL Update is not allowed")
    assert len(open_store(demo_store)) == size and len(server.requests) == before


# ---------------------------------------------------------------- bounded time, rows and memory


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


@pytest.mark.parametrize(
    "query", [CARTESIAN, CARTESIAN + " ORDER BY ?a", "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"]
)
def test_cartesian_product_stops_at_the_timeout(demo_store, query):
    children = _children()
    start = time.monotonic()
    result = kg("query", "--store", demo_store, "-", "--timeout", "2", "--limit", "0", input=query)
    elapsed = time.monotonic() - start
    one_line_error(result, r"query did not finish within 2 s and was stopped.*--timeout")
    assert elapsed < 2 + 5, elapsed
    assert _children() == children, "the query's process was left running"


def test_row_limit_is_a_clear_error(demo_store):
    one_line_error(
        kg("query", "--store", demo_store, "-", "--limit", "10", input="SELECT * WHERE { ?s ?p ?o }"),
        r"query returned more than 10 rows.*--limit N",
    )
    result = kg(
        "query", "--store", demo_store, "-", "--limit", "0", "--format", "json", input="SELECT * WHERE { ?s ?p ?o }"
    )
    default_graph = list(open_store(demo_store).quads_for_pattern(None, None, None, DefaultGraph()))
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == len(default_graph) > 1000


def test_memory_is_capped(demo_store):
    with pytest.raises(QueryLimitError, match=r"needed more than 1 GiB of memory"):
        run_bounded(StoreHandle.open(demo_store), CARTESIAN + " ORDER BY ?a", {}, timeout=60, limit=10, memory=1024**3)


def test_bounded_run_gives_what_select_gives(demo_store):
    query = load_query("process-entity-sets")
    names, rows = select(open_store(demo_store), query, {"process": "Order to Cash"})
    assert run_bounded(StoreHandle.open(demo_store), query, {"process": "Order to Cash"}, timeout=30, limit=100) == (
        names,
        [[plain(v) for v in row] for row in rows],
    )


def _forever(demo_store, tmp_path, query: str = CARTESIAN) -> tuple[subprocess.Popen, psutil.Process]:
    """``kg query`` of a never-ending query, and its query child once the query runs."""
    (tmp_path / "forever.rq").write_text(query, encoding="utf-8")
    kg_cmd = [sys.executable, "-c", "from processkg.cli import main; main()"]
    proc = subprocess.Popen(
        [*kg_cmd, "query", "--store", str(demo_store), str(tmp_path / "forever.rq"), "--timeout", "0", "--limit", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a pytest-xdist worker ignores SIGINT, and a child that inherits that
        # ignores Ctrl-C too (Python installs KeyboardInterrupt only over the default handler)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while not psutil.Process(proc.pid).children() and time.monotonic() < deadline:
        time.sleep(0.1)
    worker = psutil.Process(proc.pid).children()[0]
    time.sleep(0.5)
    return proc, worker


def _gone(worker: psutil.Process, within: float) -> bool:
    """Whether ``worker`` ended within ``within`` seconds (an orphan's zombie counts as ended)."""
    deadline = time.monotonic() + within
    while not _ended(worker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _ended(worker: psutil.Process) -> bool:
    try:
        return worker.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_ctrl_c_exits_130_and_stops_the_query(demo_store, tmp_path):
    proc, worker = _forever(demo_store, tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip() == "interrupted" and out == ""
    assert _gone(worker, 0)


@pytest.mark.parametrize(
    "sig, query",
    [
        (signal.SIGKILL, CARTESIAN),
        (signal.SIGTERM, CARTESIAN),
        (signal.SIGKILL, CARTESIAN + " ORDER BY ?a"),
        (signal.SIGTERM, "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"),
    ],
    ids=["kill", "term", "kill-order-by", "term-count"],
)
def test_query_child_dies_with_kg_query(demo_store, tmp_path, sig, query):
    """kg query killed (no handler runs: SIGKILL, or SIGTERM's default action) leaves no query
    running, even while pyoxigraph's native code sorts or counts."""
    proc, worker = _forever(demo_store, tmp_path, query)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    assert proc.returncode == -sig
    try:
        assert _gone(worker, 5), "the query child outlived kg query"
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            worker.kill()


# ---------------------------------------------------------------- kg query is helpful


def test_misspelt_library_query_suggests_the_name(demo_store):
    one_line_error(
        kg("query", "--store", demo_store, "proces-entity-sets"),
        r"no query named 'proces-entity-sets'.*did you mean 'process-entity-sets'\?",
    )


def test_help_lists_every_library_query():
    result = kg("query", "--help")
    assert result.exit_code == 0
    for path in queries_dir().glob("*.rq"):
        assert re.search(rf"^ +{re.escape(path.stem)} +\w", result.stdout, re.MULTILINE), path.stem
    assert "stats-services" not in result.stdout


def test_undeclared_prefix_is_one_short_line(demo_store):
    line = one_line_error(
        kg("query", "--store", demo_store, "-", input="SELECT * WHERE {\n ?s foo:bar ?o }"),
        r"undeclared prefix foo: at line 2, column \d+",
    )
    assert len(line) < 200 and "\\u" not in line
    with pytest.raises(QueryError, match="undeclared prefix foo:"):
        select(open_store(demo_store), "SELECT * WHERE { ?s foo:bar ?o }")


def test_syntax_error_is_one_short_line(demo_store):
    line = one_line_error(
        kg("query", "--store", demo_store, "-", input="SELECT ?s WHERE { ?s ?p }"),
        r"^error: SPARQL syntax error at line 1, column \d+",
    )
    assert len(line) < 200


def test_library_query_does_not_repeat_its_parameters(demo_store):
    result = kg(
        "query", "--store", demo_store, "process-entity-sets", "--param", "process=Order to Cash", "--format", "json"
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and "process" not in rows[0] and rows[0]["processName"] == "Order to Cash"
    names, _ = select(open_store(demo_store), load_query("process-entity-sets"), {"process": "Order to Cash"})
    assert "process" in names, "the library API keeps the parameter column"


# ---------------------------------------------------------------- kg stats in seconds


def test_stats_of_the_miwg_processes_take_seconds_and_count_right(miwg):
    store = open_store(miwg.store_dir)
    start = time.process_time()
    names, rows = select(store, load_query("stats-processes"))
    assert time.process_time() - start < 5, "stats-processes multiplies its OPTIONALs again"
    assert len(rows) == miwg.report.classes["Process"] > 250
    count = {}
    for kind, column in (
        ("Activity", "activities"),
        ("Gateway", "gateways"),
        ("Event", "events"),
        ("SequenceFlow", "sequenceFlows"),
    ):
        for p, n in select(
            store, f"SELECT ?p (COUNT(?x) AS ?n) WHERE {{ ?x a bpmn:{kind} ; bpmn:process ?p }} GROUP BY ?p"
        )[1]:
            count[(p.value, column)] = int(n.value)
    iri = {
        (plain(f), plain(e)): p.value
        for p, e, f in select(
            store, "SELECT ?p ?e ?f WHERE { ?p a bpmn:Process ; bpmn:elementId ?e ; kg:sourceFile ?f }"
        )[1]
    }
    for row in rows:
        r = dict(zip(names, (plain(v) for v in row)))
        for column in ("activities", "gateways", "events", "sequenceFlows"):
            assert r[column] == count.get((iri[(r["file"], r["process"])], column), 0), (r, column)


def test_stats_of_the_a2x_services_take_seconds(a2x_store):
    store = open_store(a2x_store)
    start = time.process_time()
    names, rows = select(store, load_query("stats-services"))
    assert time.process_time() - start < 0.8, "stats-services multiplies its OPTIONALs again"
    assert len(rows) == 45
    props = dict(
        select(
            store,
            "SELECT ?n (COUNT(DISTINCT ?p) AS ?c) WHERE { ?s kg:serviceName ?n ; "
            "kg:schema/kg:entityType/kg:property ?p } GROUP BY ?n",
        )[1]
    )
    for row in rows:
        r = dict(zip(names, row))
        assert plain(r["properties"]) == plain(props[r["service"]])


def test_kg_stats_on_many_processes_takes_seconds(miwg):
    start = time.monotonic()
    result = kg("stats", "--store", miwg.store_dir)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - start < 15
    assert f"processes ({miwg.report.classes['Process']})" in result.stdout
