"""How long Virtuoso takes to list a store's graphs, and a demo build onto it (docs/deployment.md).

Virtuoso does not bind ``?g`` in ``GRAPH ?g {}``, so the remote store lists the graphs from their
triples. This starts Virtuoso as the tests start it (tests/virtuoso_server.py, a fresh database),
builds the demo onto it (``kg build --no-index --store URL``, the library call), then times each form
of the listing ``REPEAT`` times (``SELECT DISTINCT ?g`` and ``GROUP BY ?g``, the one the store sends)
and checks that both give the same graphs; then two more builds, the first with the store's listing
replaced by the DISTINCT form (what it sent before), the second as the store is (each build lists the
graphs three times). Writes ``benchmarks/results/virtuoso_graphs.json``.

    python benchmarks/bench_virtuoso_graphs.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # tests/virtuoso_server.py: Virtuoso started as the tests start it

import virtuoso_server  # noqa: E402
from processkg.build.pipeline import BuildOptions, build_store  # noqa: E402
from processkg.graph import remote  # noqa: E402
from processkg.graph.handle import StoreLocation  # noqa: E402

DEMO = HERE.parent / "data" / "demo"
OUT = HERE / "results" / "virtuoso_graphs.json"
REPEAT = 5
LISTINGS = {
    "distinct": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }",
    "group_by": "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
}


def build(url: str) -> float:
    options = BuildOptions(
        odata=[DEMO / "odata"], bpmn=[DEMO / "bpmn"], codes=[DEMO / "codes"], mapping=DEMO / "mapping.yaml"
    )
    options.store = StoreLocation.parse(url)
    start = time.perf_counter()
    build_store(options)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PROCESSKG_CACHE"] = str(Path(tmp) / "cache")
        (Path(tmp) / "db").mkdir()
        process, url = virtuoso_server.start(Path(tmp) / "db")
        try:
            first_build = build(url)
            endpoint = remote.Endpoint(url)
            seconds: dict[str, list[float]] = {}
            graphs: dict[str, list[str]] = {}
            for _ in range(REPEAT):
                for name, query in LISTINGS.items():
                    start = time.perf_counter()
                    graphs[name] = sorted(g for (g,) in endpoint.rows(query))
                    seconds.setdefault(name, []).append(time.perf_counter() - start)
            assert graphs["distinct"] == graphs["group_by"] == sorted(endpoint.graphs()), graphs
            grouped = remote.Endpoint.graphs
            remote.Endpoint.graphs = lambda self: [g for (g,) in self.rows(LISTINGS["distinct"])]  # type: ignore[method-assign]
            try:
                distinct_build = build(url)
            finally:
                remote.Endpoint.graphs = grouped  # type: ignore[method-assign]
            grouped_build = build(url)
        finally:
            virtuoso_server.stop(process)
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "load_average": os.getloadavg(),
        "buffers": virtuoso_server.BUFFERS,
        "graphs": len(graphs["group_by"]),
        "listing_seconds_median": {name: round(statistics.median(s), 4) for name, s in seconds.items()},
        "listing_seconds": {name: [round(x, 4) for x in s] for name, s in seconds.items()},
        "demo_build_seconds": {
            "first": round(first_build, 2),
            "listing_distinct": round(distinct_build, 2),
            "listing_group_by": round(grouped_build, 2),
        },
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
