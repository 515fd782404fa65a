"""Benchmark ``kg serve``: latency and throughput of a real uvicorn server on loopback, A2X corpus.

Usage: ``python benchmarks/bench_serve.py [--store DIR] [--requests N] [--out FILE]``

Builds a store from ``../shared/data/odata/s4-a2x`` (unless ``--store`` names one), starts
``kg serve`` in its own process on a free loopback port (CSRF off, ETags on), and measures with
httpx clients in this process:

* p50/p95 latency of a validated single-entity POST (``A_SalesOrder`` of API_SALES_ORDER_SRV,
  six fields) and of a GET by key, one request at a time, and the server process's CPU time per
  request over the same requests (less sensitive than latency to other jobs on the machine);
* requests per second of each with 1, 10 and 50 concurrent clients (threads, one connection each);
* where one POST's time goes: the same POST answered in this process without HTTP (median of 200),
  and ``cProfile`` of it, top functions by cumulative time.

Target: p50 of a validated POST under 10 ms on the 2-core reference machine. The clients share the
machine with the server, so the throughput figures are a lower bound of what the server does alone.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil

from processkg.tools.local_server import free_port

HERE = Path(__file__).resolve().parent
A2X = HERE.parent.parent / "shared" / "data" / "odata" / "s4-a2x"
SERVICE = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
POST_URL = SERVICE + "A_SalesOrder"
GET_URL = SERVICE + "A_SalesOrder('0000000003')"
ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "0001",
    "DistributionChannel": "01",
    "OrganizationDivision": "01",
    "SoldToParty": "0000000001",
    "PurchaseOrderByCustomer": "PO 4711",
}
CLIENTS = (1, 10, 50)
TARGET_POST_P50_MS = 10.0


def start_server(store: Path, port: int) -> subprocess.Popen:
    kg = Path(sys.executable).with_name("kg")
    command = [str(kg), "serve", "--store", str(store), "--port", str(port), "--no-csrf", "--allow-reset"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{SERVICE}", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"kg serve did not answer within 120 s: {proc.stderr.read().decode() if proc.stderr else ''}")


def post(client: httpx.Client) -> int:
    return client.post(POST_URL, json=ORDER).status_code


def get(client: httpx.Client) -> int:
    return client.get(GET_URL).status_code


def latencies(base: str, call, n: int, server: psutil.Process) -> tuple[list[float], float]:
    """Milliseconds of ``n`` requests, one at a time, on one connection (after a warm-up), and the
    server's CPU milliseconds per request."""
    out = []
    with httpx.Client(base_url=base, timeout=60) as client:
        for _ in range(20):
            call(client)
        cpu = sum(server.cpu_times()[:2])
        for _ in range(n):
            start = time.perf_counter()
            status = call(client)
            out.append((time.perf_counter() - start) * 1000)
            assert status in (200, 201), status
        cpu = sum(server.cpu_times()[:2]) - cpu
    return out, cpu / n * 1000


def throughput(base: str, call, clients: int, per_client: int) -> float:
    """Requests per second with ``clients`` threads, each on its own connection."""

    def work(_i: int) -> list[int]:
        with httpx.Client(base_url=base, timeout=120) as client:
            return [call(client) for _ in range(per_client)]

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        statuses = [s for batch in pool.map(work, range(clients)) for s in batch]
    seconds = time.perf_counter() - start
    bad = [s for s in statuses if s not in (200, 201)]
    assert not bad, f"{len(bad)} failed requests: {sorted(set(bad))}"
    return len(statuses) / seconds


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def profile_post(store: Path, n: int = 200) -> tuple[float, list[dict]]:
    """The median milliseconds of a POST answered in-process (no HTTP), and the top functions by
    cumulative time of ``n`` more under cProfile."""
    from processkg.graph.handle import StoreHandle
    from processkg.serve.app import answer, open_server

    server = open_server(StoreHandle.open(store), csrf=False)
    body = json.dumps(ORDER).encode()
    headers = {"content-type": "application/json"}
    for _ in range(20):
        answer(server, "POST", POST_URL, headers, body)
    plain = []
    for _ in range(n):
        start = time.perf_counter()
        answer(server, "POST", POST_URL, headers, body)
        plain.append((time.perf_counter() - start) * 1000)
    print(f"in-process POST: p50 {statistics.median(plain):.2f} ms")
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(n):
        answer(server, "POST", POST_URL, headers, body)
    profiler.disable()
    per_post = (time.perf_counter() - start) / n * 1000
    stats = pstats.Stats(profiler)
    rows = []
    for (file, line, name), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({name})", "ms_per_post": cumulative / n * 1000})
    rows.sort(key=lambda r: -r["ms_per_post"])
    print(f"in-process POST under cProfile: {per_post:.2f} ms")
    return statistics.median(plain), [{**r, "ms_per_post": round(r["ms_per_post"], 3)} for r in rows[:25]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path)
    ap.add_argument("--requests", type=int, default=300, help="sequential requests per latency measurement")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "serve.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if store is None:
            from processkg.build.pipeline import BuildOptions, build_store
            from processkg.graph.handle import StoreLocation

            store = Path(tmp) / "a2x"
            build_store(BuildOptions(odata=[A2X], store=StoreLocation.parse(store)))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start_server(store, port)
        try:
            result = measure(base, args.requests, psutil.Process(proc.pid))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        in_process, top = profile_post(store)
        result["in_process_post_p50_ms"], result["profile_post"] = round(in_process, 2), top
    result.update(cpus=os.cpu_count(), load_average=round(os.getloadavg()[0], 2), target_post_p50_ms=TARGET_POST_P50_MS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def measure(base: str, n: int, server: psutil.Process) -> dict:
    result: dict = {"requests": n}
    for name, call in (("post", post), ("get_by_key", get)):
        httpx.post(base + "/$reset")
        ms, cpu = latencies(base, call, n, server)
        result[f"{name}_p50_ms"] = round(statistics.median(ms), 2)
        result[f"{name}_p95_ms"] = round(percentile(ms, 0.95), 2)
        result[f"{name}_server_cpu_ms"] = round(cpu, 2)
        print(
            f"{name}: p50 {result[f'{name}_p50_ms']} ms, p95 {result[f'{name}_p95_ms']} ms, "
            f"server CPU {cpu:.2f} ms per request ({n} requests)"
        )
        for clients in CLIENTS:
            httpx.post(base + "/$reset")
            rate = throughput(base, call, clients, max(20, 600 // clients))
            result[f"{name}_rps_{clients}_clients"] = round(rate, 1)
            print(f"{name}: {rate:,.0f} requests/s with {clients} client(s)")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return result


if __name__ == "__main__":
    raise SystemExit(main())
