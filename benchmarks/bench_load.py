"""Load test of ``kg serve``: many concurrent clients for a bounded time, then the recording is checked.

Usage: ``python benchmarks/bench_load.py [--store DIR] [--remote] [--clients 50] [--seconds 30] [--out FILE]``

``--remote`` builds the demo onto an ``oxigraph serve`` on loopback (``kg build --store URL``) and
serves that (``benchmarks/results/load-remote.json``).

Starts ``kg serve --no-csrf --record FILE`` on a free loopback port in its own process (the demo
store from ``data/demo`` unless ``--store`` names a store built from it) and runs ``--clients``
threads, each with its own connection, for ``--seconds``. Each client cycles through a realistic
mix on the demo's services: a collection read with ``$top``, a read by key, a filtered read, a valid
POST (201), an invalid POST (400 with violations) and a V4 JSON ``$batch`` of two reads. Every
request carries a unique custom query option ``load=C-N`` (a ``$batch`` part ``C-N.P``), so that
afterwards each call the clients got a non-5xx answer for can be found in the recording: it must be
there exactly once ("lost" counts the missing ones, "duplicated" the repeated). Reports the count
of 5xx answers (must be 0), p50/p95/max latency per kind and overall, and requests per second.
The clients share the 2 cores with the server, so the throughput is a lower bound.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from processkg.tools.local_server import free_port

HERE = Path(__file__).resolve().parent
DEMO = HERE.parent / "data" / "demo"
V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
V4 = "/sap/opu/odata4/sap/demo_procurement/"
GOOD = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1000",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000001",
}
Request = Callable[[httpx.Client, str], tuple[httpx.Response, list[str]]]


def _get(url: str) -> Request:
    def send(client: httpx.Client, tag: str) -> tuple[httpx.Response, list[str]]:
        joiner = "&" if "?" in url else "?"
        return client.get(f"{url}{joiner}load={tag}"), [tag]

    return send


def _post(payload: dict[str, str]) -> Request:
    def send(client: httpx.Client, tag: str) -> tuple[httpx.Response, list[str]]:
        return client.post(f"{V2}A_SalesOrder?load={tag}", json=payload), [tag]

    return send


def _batch(client: httpx.Client, tag: str) -> tuple[httpx.Response, list[str]]:
    parts = [f"{tag}.1", f"{tag}.2"]
    requests = [
        {"id": "1", "method": "GET", "url": f"PurchaseOrder?$top=1&load={parts[0]}"},
        {"id": "2", "method": "GET", "url": f"PurchaseOrder?$top=2&load={parts[1]}"},
    ]
    return client.post(f"{V4}$batch", json={"requests": requests}), parts


MIX: list[tuple[str, Request]] = [
    ("get-collection", _get(f"{V2}A_SalesOrder?$top=5")),
    ("get-key", _get(f"{V2}A_SalesOrder('0000000003')")),
    ("get-filter", _get(f"{V2}A_SalesOrder?$filter=SalesOrderType eq 'OR'&$top=3")),
    ("post-valid", _post(GOOD)),
    ("post-invalid", _post({**GOOD, "SalesOrderType": "XX"})),
    ("batch", _batch),
]


class Tally:
    """What the clients saw: per kind the latencies, statuses, and the tags that must be recorded."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = {kind: [] for kind, _ in MIX}
        self.statuses: Counter[int] = Counter()
        self.expected: list[str] = []
        self.transport_errors = 0

    def add(self, kind: str, seconds: float, status: int, tags: list[str]) -> None:
        with self.lock:
            self.latency[kind].append(seconds)
            self.statuses[status] += 1
            if status < 500:
                self.expected.extend(tags)


def client_loop(base: str, number: int, stop: Callable[[], bool], tally: Tally, limit: int | None = None) -> None:
    """One client: the mix over and over until ``stop()`` (or ``limit`` requests)."""
    with httpx.Client(base_url=base, timeout=60) as client:
        n = 0
        while not stop() and (limit is None or n < limit):
            kind, send = MIX[(number + n) % len(MIX)]
            start = time.perf_counter()
            try:
                response, tags = send(client, f"c{number}-{n}")
            except httpx.HTTPError:
                with tally.lock:
                    tally.transport_errors += 1
            else:
                tally.add(kind, time.perf_counter() - start, response.status_code, tags)
            n += 1


def run_load(base: str, clients: int, seconds: float | None = None, per_client: int | None = None) -> Tally:
    """``clients`` threads against ``base`` for ``seconds`` (or ``per_client`` requests each)."""
    tally = Tally()
    deadline = time.monotonic() + (seconds if seconds is not None else 3600)
    threads = [
        threading.Thread(target=client_loop, args=(base, c, lambda: time.monotonic() > deadline, tally, per_client))
        for c in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def recorded_tags(recording: Path) -> Counter[str]:
    """How often each ``load`` tag occurs in the recording's URLs."""
    tags: Counter[str] = Counter()
    for line in recording.read_text(encoding="utf-8").splitlines():
        for tag in parse_qs(urlsplit(json.loads(line)["url"]).query).get("load", []):
            tags[tag] += 1
    return tags


def check(tally: Tally, recording: Path) -> dict[str, int]:
    """Lost (answered, not recorded), duplicated (recorded twice) and 5xx counts."""
    recorded = recorded_tags(recording)
    return {
        "answered_non_5xx_calls": len(tally.expected),
        "recorded_calls": sum(recorded.values()),
        "lost": sum(1 for tag in tally.expected if recorded[tag] == 0),
        "duplicated": sum(1 for tag in tally.expected if recorded[tag] > 1),
        "status_5xx": sum(n for status, n in tally.statuses.items() if status >= 500),
        "transport_errors": tally.transport_errors,
    }


def percentiles(values: list[float]) -> dict[str, float | int]:
    if len(values) < 2:
        return {"n": len(values)}
    cuts = statistics.quantiles(values, n=100)
    return {"n": len(values), "p50_ms": cuts[49] * 1e3, "p95_ms": cuts[94] * 1e3, "max_ms": max(values) * 1e3}


def latency_report(tally: Tally) -> dict[str, dict[str, float | int]]:
    report = {kind: percentiles(values) for kind, values in tally.latency.items()}
    report["all"] = percentiles([v for values in tally.latency.values() for v in values])
    return report


def oxigraph(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """``oxigraph serve`` (the test extra's server) on loopback, once it answers."""
    binary = shutil.which("oxigraph", path=str(Path(sys.executable).parent)) or "oxigraph"
    command = [binary, "serve", "--location", str(folder / "oxigraph"), "--bind", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("oxigraph serve did not answer within 30 s")


def build_demo(folder: Path, url: str | None = None) -> str:
    """The demo built into ``folder/store`` or, given ``url``, onto that SPARQL server."""
    kg = Path(sys.executable).with_name("kg")
    store = url or str(folder / "store")
    args = ["--odata", str(DEMO / "odata"), "--bpmn", str(DEMO / "bpmn"), "--codes", str(DEMO / "codes")]
    subprocess.run(
        [str(kg), "build", "--store", str(store), *args, "--mapping", str(DEMO / "mapping.yaml"), "--no-index"],
        check=True,
    )
    return store


def start_server(store: str, port: int, recording: Path) -> subprocess.Popen[bytes]:
    kg = Path(sys.executable).with_name("kg")
    command = [str(kg), "serve", "--store", str(store), "--port", str(port), "--no-csrf", "--record", str(recording)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{V2}", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("kg serve did not answer within 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a store built from data/demo (default: built here)")
    parser.add_argument("--remote", action="store_true", help="build the demo onto an oxigraph server (--store URL)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "load.json")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))

    with tempfile.TemporaryDirectory() as tmp:
        url = f"http://127.0.0.1:{free_port()}" if args.remote else None
        sparql = oxigraph(Path(tmp), int(url.rsplit(":", 1)[1])) if url else None
        store = args.store or build_demo(Path(tmp), url)
        recording, port = Path(tmp) / "recording.jsonl", free_port()
        server = start_server(store, port, recording)
        try:
            start = time.perf_counter()
            tally = run_load(f"http://127.0.0.1:{port}", args.clients, seconds=args.seconds)
            elapsed = time.perf_counter() - start
        finally:
            server.terminate()
            server.wait(timeout=30)
            if sparql is not None:
                sparql.kill()
        result = {
            "store": args.store or ("demo on an oxigraph server" if args.remote else "demo"),
            "clients": args.clients,
            "seconds": round(elapsed, 1),
            "load_average": os.getloadavg(),
            "requests": sum(tally.statuses.values()),
            "requests_per_second": round(sum(tally.statuses.values()) / elapsed, 1),
            "statuses": {str(k): v for k, v in sorted(tally.statuses.items())},
            "recording": check(tally, recording),
            "latency": latency_report(tally),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
