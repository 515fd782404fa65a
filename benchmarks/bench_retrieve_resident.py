"""The resident retriever: cold ``kg retrieve`` processes against warm requests to ``kg serve``.

Usage: ``python benchmarks/bench_retrieve_resident.py [--store DIR] [--cold 5] [--warm 100] [--out FILE]``
and ``python benchmarks/bench_retrieve_resident.py --in-process a2x=DIR --in-process sap=DIR --in-process-only``

``--store`` is an indexed store (default: the demo from ``data/demo``, built here with its index).
Measures, on the queries of ``benchmarks/retrieve-dev-queries.jsonl``:

* cold: wall time of ``kg retrieve --store DIR --json QUERY`` as a new process (Python start-up,
  store and index opening, the embedding model's loading, one query), ``--cold`` times;
* server: ``kg serve`` start-up until it answers, then the first ``GET /$processkg/retrieve``
  (which loads the index and model) and ``--warm`` more requests from one client (model kept);
* the same warm requests through ``kg retrieve --server URL`` are not measured: that is a process
  start-up again, minus the model (see the cold figure's breakdown in docs/performance.md).

* in process (``--in-process NAME=DIR``, any number of stores): a ``Retriever`` opened once, then each
  query of ``--queries`` (default: the 330 of ``data/sap/benchmark/queries.jsonl``) asked alone as
  ``kg serve``'s resident retriever asks it (``retrieve_many([query], 5, ...)``, embedding included),
  ``dense`` and ``hybrid`` in turn so that both meet the same load; also the query's embedding alone
  and with its parts (:meth:`Retriever.embed_with_steps`). ``--in-process-only`` keeps the other
  figures of the JSON as they are.

Writes p50/p95 of each and the ratio cold p50 / warm p50 to ``benchmarks/results/retrieve_resident.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))  # this checkout's processkg, as bench_retrieve.py does

from processkg.tools.local_server import free_port  # noqa: E402

DEMO = HERE.parent / "data" / "demo"
QUERIES = HERE / "retrieve-dev-queries.jsonl"
BENCHMARK_QUERIES = HERE.parent / "data" / "sap" / "benchmark" / "queries.jsonl"


def queries(path: Path = QUERIES) -> list[str]:
    return [json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stats(values: list[float]) -> dict[str, float | int]:
    cuts = statistics.quantiles(values, n=20) if len(values) > 1 else [values[0]] * 19
    return {"n": len(values), "p50_ms": statistics.median(values) * 1e3, "p95_ms": cuts[18] * 1e3}


def kg() -> str:
    return str(Path(sys.executable).with_name("kg"))


def build_demo(folder: Path) -> Path:
    store = folder / "store"
    sources = ["--odata", str(DEMO / "odata"), "--bpmn", str(DEMO / "bpmn"), "--codes", str(DEMO / "codes")]
    subprocess.run(
        [kg(), "build", "--store", str(store), *sources, "--mapping", str(DEMO / "mapping.yaml")], check=True
    )
    return store


def cold(store: Path, texts: list[str], times: int) -> list[float]:
    seconds = []
    for n in range(times):
        start = time.perf_counter()
        subprocess.run(
            [kg(), "retrieve", "--store", str(store), "--json", texts[n % len(texts)]],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        seconds.append(time.perf_counter() - start)
    return seconds


def serve(store: Path, port: int) -> tuple[subprocess.Popen[bytes], float]:
    start = time.perf_counter()
    proc = subprocess.Popen([kg(), "serve", "--store", str(store), "--port", str(port)], stderr=subprocess.DEVNULL)
    while time.perf_counter() - start < 120:
        try:
            httpx.get(f"http://127.0.0.1:{port}/$processkg/retrieve", params={"q": " "}, timeout=1)
            return proc, time.perf_counter() - start
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("kg serve did not answer within 120 s")


def warm(port: int, texts: list[str], times: int) -> tuple[float, list[float]]:
    """The first request's seconds (it loads the model) and the next ``times`` requests' seconds."""
    url = f"http://127.0.0.1:{port}/$processkg/retrieve"
    seconds = []
    with httpx.Client(timeout=300) as client:
        for n in range(times + 1):
            start = time.perf_counter()
            response = client.get(url, params={"q": texts[n % len(texts)], "k": "5"})
            response.raise_for_status()
            seconds.append(time.perf_counter() - start)
    return seconds[0], seconds[1:]


def in_process(store: Path, texts: list[str]) -> dict[str, object]:
    """A resident ``Retriever`` on ``store``: each query alone, dense and hybrid in turn (embedding included)."""
    from processkg.graph.handle import StoreHandle
    from processkg.retrieve.retriever import RetrievalSettings, Retriever

    retriever = Retriever(StoreHandle.open(store))
    settings = {m: RetrievalSettings(m) for m in ("dense", "hybrid")}
    for method in settings:  # warm-up: the model, the matrices, BM25
        retriever.retrieve_many(texts[:1], 5, settings[method])
    load_before = os.getloadavg()
    seconds: dict[str, list[float]] = {"dense": [], "hybrid": [], "embed_query": [], "embed_query_and_parts": []}
    for text in texts:
        for method in settings:
            start = time.perf_counter()
            retriever.retrieve_many([text], 5, settings[method])
            seconds[method].append(time.perf_counter() - start)
        start = time.perf_counter()
        retriever.embed([text])
        seconds["embed_query"].append(time.perf_counter() - start)
        start = time.perf_counter()
        retriever.embed_with_steps([text])
        seconds["embed_query_and_parts"].append(time.perf_counter() - start)
    paired = [h - d for h, d in zip(seconds["hybrid"], seconds["dense"])]
    return {
        "store": store.name,
        "process_layer": retriever.matrices.has_process,
        "queries": len(texts),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        **{name: stats(values) for name, values in seconds.items()},
        "hybrid_minus_dense_median_of_paired_ms": statistics.median(paired) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="an indexed store (default: the demo, built here)")
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--warm", type=int, default=100)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "retrieve_resident.json")
    parser.add_argument(
        "--in-process", action="append", default=[], metavar="NAME=DIR", help="also time a resident Retriever on DIR"
    )
    parser.add_argument("--queries", type=Path, default=BENCHMARK_QUERIES, help="JSONL queries for --in-process")
    parser.add_argument("--in-process-only", action="store_true", help="only the --in-process figures")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))

    resident = {}
    for item in args.in_process:
        name, _, folder = item.partition("=")
        resident[name] = in_process(Path(folder), queries(args.queries))
        print(json.dumps({name: resident[name]}, indent=2))
    if args.in_process_only:
        kept = json.loads(args.out.read_text()) if args.out.exists() else {}
        kept["in_process"] = resident
        args.out.write_text(json.dumps(kept, indent=2) + "\n")
        return

    texts = queries()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or build_demo(Path(tmp))
        cold_seconds = cold(store, texts, args.cold)
        port = free_port()
        proc, startup = serve(store, port)
        try:
            first, warm_seconds = warm(port, texts, args.warm)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    cold_stats, warm_stats = stats(cold_seconds), stats(warm_seconds)
    result = {
        "store": "demo" if args.store is None else args.store.name,
        "load_average": os.getloadavg(),
        "cold_process": cold_stats,
        "serve_startup_ms": startup * 1e3,
        "first_request_ms": first * 1e3,
        "warm_request": warm_stats,
        "cold_over_warm_p50": cold_stats["p50_ms"] / warm_stats["p50_ms"],
        **({"in_process": resident} if resident else {}),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
