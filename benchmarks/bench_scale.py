"""Growth benchmark: build, index, retrieval, validation and ``kg stats`` on A2X-shaped corpora at 1x, 10x, 100x.

Usage: ``python benchmarks/bench_scale.py [--sizes 1,10] [--queries 20] [--calls 2000] [--out FILE] [--plot FILE]``

Each size's corpus comes from ``scale_corpus.py`` (copies of A2X + data/sap, renamed per copy).
Every step runs as its own ``kg`` process, and ``os.wait4`` gives that process's own wall time,
CPU time and peak RSS (so one step's memory is not another's):

* ``kg build --no-index`` (OData, BPMN, mapping, SHACL shapes) and the store's size on disk;
* ``kg index`` (every entity-set and activity text embedded, no cache shared between sizes);
* retrieval: ``kg serve`` with the resident retriever, the first request (loads index and model)
  and ``--queries`` warm requests (the dev queries, ``hybrid``), p50/p95;
* validation: ``kg validate`` of 1 call (a POST, so the SHACL engine of every payload shape is
  built), and the engine's throughput validating ``--calls`` calls one at a time as ``kg serve``
  does (a GET/POST mix on API_SALES_ORDER_SRV, half of the POSTs invalid);
* ``kg stats``;
* start-up (issue 24; CPU s and peak RSS of the ``kg`` process, read from ``/proc`` while it runs, or
  from ``os.wait4`` when it has ended): ``kg serve`` until it answers its first GET (the service
  document of API_SALES_ORDER_SRV), ``kg validate`` of one POST, and ``kg mcp`` until it answers
  ``initialize`` over stdio (the first retrieval request and the warm p50 are the retrieval step's);
* remote: ``kg build --no-index``, ``kg stats`` and ``kg validate`` of the one POST with ``--store URL``
  of an ``oxigraph serve`` on loopback (its own empty database per size), the server's database
  size on disk and the server's own CPU time and peak RSS over all three (read when it is stopped);
* virtuoso: the same three against OpenLink Virtuoso on loopback (started as the tests start it,
  with a larger buffer, ``VIRTUOSO_BUFFERS``).

Writes ``benchmarks/results/scale.json`` (after each size, so a long run keeps what it measured)
and ``benchmarks/results/scale.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "tests"))  # tests/virtuoso_server.py: Virtuoso started as the tests start it

from bench_retrieve_resident import queries  # noqa: E402
from scale_corpus import generate  # noqa: E402

import virtuoso_server  # noqa: E402
from processkg.tools.local_server import free_port  # noqa: E402

SERVICE = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
VIRTUOSO_BUFFERS = 170_000  # 1.3 GB of 8 KB pages (Virtuoso's ini for 2 GB of memory)
ORDER = {"SalesOrderType": "OR", "SalesOrganization": "0001", "DistributionChannel": "01", "SoldToParty": "1"}


def kg(*args: str | Path) -> list[str]:
    return [str(Path(sys.executable).with_name("kg")), *map(str, args)]


def measure(command: list[str], ok: tuple[int, ...] = (0,)) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process, which must exit with ``ok``."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def sources(corpus: Path) -> list[str | Path]:
    """``kg build``'s input options for a corpus that ``scale_corpus.py`` wrote."""
    return ["--odata", corpus / "odata", "--bpmn", corpus / "bpmn", "--mapping", corpus / "mapping.yaml"]


def size_mb(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)


def calls_file(path: Path, n: int) -> Path:
    """``n`` calls in kg validate's input format: reads, valid and invalid creates."""
    lines = []
    for i in range(n):
        kind = (i + 2) % 4  # the first call is a valid POST: the one-call run includes the SHACL engine's start
        if kind == 0:
            call = {"method": "GET", "url": f"{SERVICE}A_SalesOrder?$top={i % 50 + 1}"}
        elif kind == 1:
            call = {"method": "GET", "url": f"{SERVICE}A_SalesOrder('{i:010d}')"}
        else:
            order = ORDER if kind == 2 else {**ORDER, "SalesOrderType": 7}
            call = {"method": "POST", "url": f"{SERVICE}A_SalesOrder", "payload": order}
        lines.append(json.dumps({"id": f"c{i}", **call}))
    path.write_text("\n".join(lines) + "\n")
    return path


def running_usage(pid: int) -> dict[str, float]:
    """CPU seconds and peak RSS (MB) so far of the running process ``pid`` (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    return {"cpu_seconds": round(cpu, 2), "peak_rss_mb": round(hwm / 1024)}


def serve_first_get(store: Path) -> dict[str, float]:
    """``kg serve`` from its start until it answers a first GET (a service document)."""
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(kg("serve", "--store", store, "--port", port), stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}{SERVICE}", timeout=600).raise_for_status()
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.perf_counter() - start > 1800:
                    raise SystemExit("kg serve did not start") from None
                time.sleep(0.1)
        return {"seconds": round(time.perf_counter() - start, 2), **running_usage(proc.pid)}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def mcp_initialize(store: Path) -> dict[str, float]:
    """``kg mcp`` from its start until it answers ``initialize`` (one JSON-RPC line over stdio)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    start = time.perf_counter()
    proc = subprocess.Popen(
        kg("mcp", "--store", store), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        took = {"seconds": round(time.perf_counter() - start, 2), **running_usage(proc.pid)}
        if "result" not in answer:
            raise SystemExit(f"kg mcp did not initialize: {answer}")
        return took
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def startup(store: Path, folder: Path) -> dict[str, dict[str, float]]:
    """The start-up steps of issue 24's table that the retrieval step does not measure."""
    one = calls_file(folder / "one.jsonl", 1)
    return {
        "serve_first_get": serve_first_get(store),
        "validate_one_post": measure(kg("validate", "--store", store, "--format", "json", one), (0, 1)),
        "mcp_initialize": mcp_initialize(store),
    }


# One call at a time through the kg validate engine, as kg serve validates, after the engine is built.
ONE_BY_ONE = """
import json, sys, time
from processkg.validate.calls import Validator
from processkg.graph.handle import StoreHandle
validator = Validator(StoreHandle.open(sys.argv[1]))
calls = [json.loads(line) for line in open(sys.argv[2])]
validator.validate_call(calls[0])
start = time.perf_counter()
for call in calls:
    validator.validate_call(call)
print(len(calls) / (time.perf_counter() - start))
"""


def validation(store: Path, folder: Path, n: int) -> dict[str, float]:
    """``kg validate``'s start-up (one POST: the SHACL engine is built) and the engine's calls/s one by one."""
    one = measure(kg("validate", "--store", store, "--format", "json", calls_file(folder / "one.jsonl", 1)), (0, 1))
    many = calls_file(folder / "many.jsonl", n)
    rate = subprocess.run([sys.executable, "-c", ONE_BY_ONE, str(store), str(many)], capture_output=True, check=True)
    return {
        "one_call_seconds": one["seconds"],
        "one_call_peak_rss_mb": one["peak_rss_mb"],
        "calls": n,
        "calls_per_s": round(float(rate.stdout), 1),
    }


def retrieval(store: Path, n: int) -> dict[str, float]:
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(kg("serve", "--store", store, "--port", port), stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/$processkg/retrieve"
    try:
        while True:
            try:
                httpx.get(url, params={"q": " "}, timeout=5)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.perf_counter() - start > 1800:
                    raise SystemExit("kg serve did not start") from None
                time.sleep(0.2)
        startup = time.perf_counter() - start
        texts = queries()
        seconds = []
        with httpx.Client(timeout=1800) as client:
            for i in range(n + 1):
                t0 = time.perf_counter()
                client.get(url, params={"q": texts[i % len(texts)]}).raise_for_status()
                seconds.append(time.perf_counter() - t0)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    warm = seconds[1:]
    p95 = statistics.quantiles(warm, n=20)[18]
    return {
        "serve_startup_seconds": round(startup, 2),
        "first_request_seconds": round(seconds[0], 2),
        "p50_ms": round(statistics.median(warm) * 1e3, 1),
        "p95_ms": round(p95 * 1e3, 1),
    }


def remote(folder: Path) -> dict[str, object]:
    """Build, stats and one validation against a fresh ``oxigraph serve``; the kg processes' and the server's costs."""
    db = folder / "remote-db"
    shutil.rmtree(db, ignore_errors=True)
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("oxigraph")),
            "serve",
            "--location",
            str(db),
            "--bind",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/query", params={"query": "ASK {}"}, timeout=5).raise_for_status()
            break
        except httpx.HTTPError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise SystemExit("oxigraph serve did not start") from None
            time.sleep(0.2)
    return on_server(folder, url, server, db)


def virtuoso(folder: Path) -> dict[str, object]:
    """As :func:`remote`, against OpenLink Virtuoso (tests/virtuoso_server.py) with a fresh database
    and ``VIRTUOSO_BUFFERS`` pages of 8 KB of buffer (Virtuoso's own sizing advice: about 2/3 of the
    memory it may use; the tests use 10,000)."""
    db = folder / "virtuoso-db"
    shutil.rmtree(db, ignore_errors=True)
    db.mkdir(parents=True)
    try:
        server, url = virtuoso_server.start(db, buffers=VIRTUOSO_BUFFERS)
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None
    return {**on_server(folder, url, server, db), "server_buffers": VIRTUOSO_BUFFERS}


def on_server(folder: Path, url: str, server: subprocess.Popen[bytes], db: Path) -> dict[str, object]:
    """``kg build --no-index``, ``kg stats`` and ``kg validate`` of one POST with ``--store URL``; then
    the server is stopped, and its own CPU time and peak RSS read."""
    cache = folder / "remote-cache"
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["PROCESSKG_CACHE"] = str(cache)
    try:
        build = measure(kg("build", "--store", url, *sources(folder / "corpus"), "--no-index"))
        stats = measure(kg("stats", "--store", url))
        one = calls_file(folder / "one.jsonl", 1)
        validate = measure(kg("validate", "--store", url, "--format", "json", one), (0, 1))
    finally:
        server.terminate()
        _pid, _status, usage = os.wait4(server.pid, 0)
        del os.environ["PROCESSKG_CACHE"]
    cpu = round(usage.ru_utime + usage.ru_stime, 2)
    return {
        "build": {**build, "server_db_mb": size_mb(db)},
        "stats": stats,
        "validation_one_post": validate,
        "server": {"cpu_seconds": cpu, "peak_rss_mb": round(usage.ru_maxrss / 1024)},
    }


STEPS = (
    "build",
    "stats",
    "index",
    "retrieval",
    "validation",
    "remote",
    "virtuoso",
    "startup",
)  # in this order: each needs the ones before


def steps(value: str) -> list[str]:
    """``--steps``: known step names, in STEPS order; a misspelt one is an error, not a skipped step."""
    unknown = set(value.split(",")) - set(STEPS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown step(s) {', '.join(sorted(unknown))}; known: {','.join(STEPS)}")
    return [s for s in STEPS if s in value.split(",")]


def build_step(folder: Path) -> dict[str, float]:
    store, corpus = folder / "store", folder / "corpus"
    build = measure(kg("build", "--store", store, *sources(corpus), "--no-index"))
    build["store_mb"] = size_mb(store)
    return build


def index_step(folder: Path) -> dict[str, float]:
    index = measure(kg("index", "--store", folder / "store"))
    index["index_mb"] = size_mb(folder / "store" / "index")
    return index


def one_size(factor: int, folder: Path, args: argparse.Namespace) -> dict[str, object]:
    """The steps ``args.steps`` at ``factor``; a step left out keeps what an earlier run measured."""
    result: dict[str, object] = {"factor": factor}
    if "build" in args.steps or not (folder / "corpus" / "mapping.yaml").exists():
        result["corpus"] = generate(folder / "corpus", factor)  # else the corpus there is the store's: keep it
    run = {
        "build": lambda: build_step(folder),
        "stats": lambda: measure(kg("stats", "--store", folder / "store")),
        "index": lambda: index_step(folder),
        "retrieval": lambda: retrieval(folder / "store", args.queries),
        "validation": lambda: validation(folder / "store", folder, args.calls),
        "remote": lambda: remote(folder),
        "virtuoso": lambda: virtuoso(folder),
        "startup": lambda: startup(folder / "store", folder),
    }
    for step in args.steps:
        result[step] = run[step]()
        result[f"{step}_measured"] = time.strftime("%Y-%m-%d")
    result["load_average"] = os.getloadavg()
    return result


def _dig(result: object, keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if not isinstance(result, dict) or key not in result:
            return None
        result = result[key]
    return float(result) if isinstance(result, (int, float)) else None


def plot(results: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {  # panel: [(label, path to the value in a size's result, divisor)]
        "build CPU s (kg process)": [
            ("embedded", ("build", "cpu_seconds"), 1),
            ("remote", ("remote", "build", "cpu_seconds"), 1),
        ],
        "build peak RSS GB (kg process)": [
            ("embedded", ("build", "peak_rss_mb"), 1024),
            ("remote", ("remote", "build", "peak_rss_mb"), 1024),
        ],
        "store GB": [("embedded", ("build", "store_mb"), 1024), ("remote", ("remote", "build", "server_db_mb"), 1024)],
        "index CPU s": [("", ("index", "cpu_seconds"), 1)],
        "retrieval ms": [("p50", ("retrieval", "p50_ms"), 1), ("p95", ("retrieval", "p95_ms"), 1)],
        "validate calls/s": [("", ("validation", "calls_per_s"), 1)],
        "validate one POST s": [
            ("embedded", ("validation", "one_call_seconds"), 1),
            ("remote", ("remote", "validation_one_post", "seconds"), 1),
        ],
        "kg stats s": [("embedded", ("stats", "seconds"), 1), ("remote", ("remote", "stats", "seconds"), 1)],
    }
    fig, axes = plt.subplots(2, 4, figsize=(14, 6))
    for ax, (name, lines) in zip(axes.flat, series.items()):
        for label, keys, scale in lines:
            points = [(r["factor"], value / scale) for r in results if (value := _dig(r, keys)) is not None]
            ax.loglog([f for f, _ in points], [v for _, v in points], "o-", label=label or None)
        if len(lines) > 1:
            ax.legend(fontsize=8)
        ax.set_title(name)
        ax.set_xlabel("size (x A2X)")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("processkg growth on A2X-shaped corpora")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10", help="comma-separated factors")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument(
        "--steps",
        type=steps,
        default=list(STEPS),
        help=f"comma-separated steps to measure (default: all of {','.join(STEPS)}); the others keep their earlier values",
    )
    parser.add_argument("--work", type=Path, help="keep corpora and stores here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scale.json")
    parser.add_argument("--plot", type=Path, default=HERE / "results" / "scale.png")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    previous = json.loads(args.out.read_text())["sizes"] if args.out.exists() else []
    results = {r["factor"]: r for r in previous}
    with tempfile.TemporaryDirectory() as tmp:
        for factor in [int(s) for s in args.sizes.split(",")]:
            folder = (args.work or Path(tmp)) / f"x{factor}"
            results[factor] = {**results.get(factor, {}), **one_size(factor, folder, args)}
            ordered = [results[f] for f in sorted(results)]
            args.out.write_text(json.dumps({"cpus": os.cpu_count(), "sizes": ordered}, indent=2) + "\n")
            plot(ordered, args.plot)
            print(json.dumps(results[factor]), flush=True)


if __name__ == "__main__":
    main()
