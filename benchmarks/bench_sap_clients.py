"""SAP's own clients against ``kg serve``, and ``kg serve`` side by side with SAP's Fiori mock server.

Usage: ``python benchmarks/bench_sap_clients.py [--store DIR] [--rounds N] [--only sdk|mock|catalog]``
(run by hand; Node and the npm packages come from ``benchmarks/sap-clients``, see its README.md).

Builds the A2X store from ``../shared/data/odata/s4-a2x`` with SAP's code lists (``data/sap/codes``)
unless ``--store`` names one, starts ``kg serve`` on it in its own process on a free loopback port
(CSRF, ETags and validation on, as a user starts it), and then:

1. **Cloud SDK** (``benchmarks/results/sap_clients.json``): runs ``sap-clients/cloud-sdk.js``, the SAP
   Cloud SDK for JavaScript with a typed client generated from SAP's ``API_SALES_ORDER_SRV.edmx``,
   against the server; one entry per step, ok or failed with the error the SDK reported, and the
   calls the server recorded (method, URL, status) so that a failure can be replayed.
2. **Side by side** (``benchmarks/results/sap_mockserver.json``): exports the server's records of
   API_SALES_ORDER_SRV (a read of each entity set, as the server answers it) as the JSON mock data
   of SAP's Fiori elements mock server (``@sap-ux/fe-mockserver-core``, ``sap-clients/mockserver.js``),
   which serves the same EDMX on another loopback port, and sends to both, from one client in this
   process: (a) the invalid writes of ``INVALID_WRITES``, each with its kind: which server rejects
   which (a 4xx answer); (b) ``--rounds`` rounds of a GET by key, a filtered GET and a deep insert
   of an order with two items (validated by ``kg serve``), interleaved one request at a time and
   alternating which server goes first: the median milliseconds of each and the ratio kg serve / mock,
   once with the ``kg serve`` that records every call (``latency``) and once with one started without
   ``--record`` (``latency_without_recording``), each against a freshly started mock server.
3. **Catalogs** (``benchmarks/results/sap_catalog.json``): runs ``sap-clients/catalog.js``, the catalog
   client of SAP's Fiori tools (``@sap-ux/axios-extension``), which lists the server's services through
   SAP Gateway's V2 and V4 catalog services; each with the services it found, checked against ``GET /``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from processkg.tools.local_server import free_port

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENTS = HERE / "sap-clients"
NODE = CLIENTS / "node_modules" / ".bin" / "node"
A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
EDMX = A2X / "API_SALES_ORDER_SRV.edmx"
CODES = ROOT / "data" / "sap" / "codes"
SERVICE = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
RESULTS = HERE / "results"

ITEM = {"Material": "0000000001", "RequestedQuantity": "2", "RequestedQuantityUnit": "PC"}
ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1010",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000001",
    "PurchaseOrderByCustomer": "SIDE-BY-SIDE",
}
DEEP_ORDER = {**ORDER, "to_Item": [ITEM, {**ITEM, "Material": "0000000002", "RequestedQuantity": "1"}]}
BY_KEY = "A_SalesOrder('0000000003')"
FILTERED = "A_SalesOrder?$filter=SalesOrganization eq '1010' and SalesOrder le '0000000020'&$top=10"


def _order(**changes: object) -> dict[str, object]:
    return {**ORDER, **changes}


#: (kind, method, path under the service, JSON body or raw text): each is invalid by the EDMX, by
#: SAP's code lists and org units (``data/sap/codes``) or by the records both servers hold.
INVALID_WRITES: list[tuple[str, str, str, object]] = [
    ("unknown property", "POST", "A_SalesOrder", _order(NoSuchProperty="x")),
    ("unknown navigation property", "POST", "A_SalesOrder", _order(to_NoSuchThing=[ITEM])),
    ("wrong type: Edm.Boolean", "POST", "A_SalesOrder", _order(CompleteDeliveryIsDefined="yes")),
    ("wrong type: Edm.DateTime", "POST", "A_SalesOrder", _order(SalesOrderDate="next Tuesday")),
    (
        "wrong type: Edm.Decimal in an item",
        "POST",
        "A_SalesOrder",
        _order(to_Item=[{**ITEM, "RequestedQuantity": "two"}]),
    ),
    (
        "decimal beyond its scale (Scale=3)",
        "POST",
        "A_SalesOrder",
        _order(to_Item=[{**ITEM, "RequestedQuantity": "1.23456"}]),
    ),
    ("too long (MaxLength=35)", "POST", "A_SalesOrder", _order(PurchaseOrderByCustomer="P" * 36)),
    ("too long (MaxLength=4)", "POST", "A_SalesOrder", _order(SalesOrderType="TOOLONG")),
    ("invalid code: SalesOrderType", "POST", "A_SalesOrder", _order(SalesOrderType="ZZZ")),
    ("invalid org unit: SalesOrganization", "POST", "A_SalesOrder", _order(SalesOrganization="9999")),
    ("unknown reference: SoldToParty", "POST", "A_SalesOrder", _order(SoldToParty="NOSUCHCUST")),
    ("unknown reference: item Material", "POST", "A_SalesOrder", _order(to_Item=[{**ITEM, "Material": "NO-SUCH-MAT"}])),
    ("read-only property on create", "POST", "A_SalesOrder", _order(CreatedByUser="SOMEONE")),
    ("item without its order (missing parent key)", "POST", "A_SalesOrderItem", ITEM),
    ("item of an order that does not exist", "POST", "A_SalesOrder('0000009999')/to_Item", ITEM),
    ("create in a set that is not creatable", "POST", "A_SalesOrderScheduleLine", {"SalesOrder": "0000000001"}),
    ("read-only property on update", "PATCH", BY_KEY, {"CreatedByUser": "SOMEONE"}),
    ("key change on update", "PATCH", BY_KEY, {"SalesOrder": "0000000099"}),
    ("deep update", "PATCH", BY_KEY, {"to_Item": [ITEM]}),
    (
        "update of a set that is not updatable",
        "PATCH",
        "A_SalesOrderScheduleLine(SalesOrder='0000000001',SalesOrderItem='000001',ScheduleLine='0001')",
        {"ScheduleLineOrderQuantity": "5"},
    ),
    ("body that is not JSON", "POST", "A_SalesOrder", "{SalesOrderType: OR"),
]


def node() -> Path:
    if not NODE.exists():
        raise SystemExit(f"no Node in {NODE.parent}: run `npm ci` in benchmarks/sap-clients first (see its README.md)")
    return NODE


def git_tree() -> str:
    """HEAD's short hash, with ``-dirty`` when src has uncommitted changes (the working tree is what runs)."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if changed.stdout.strip() else "")


def uvicorn_parts() -> dict[str, str]:
    """The HTTP parser and event loop uvicorn picks for ``kg serve`` here (it runs with this environment)."""
    found = {name: importlib.util.find_spec(name) is not None for name in ("httptools", "uvloop")}
    return {
        "uvicorn_http": "httptools" if found["httptools"] else "h11",
        "uvicorn_loop": "uvloop" if found["uvloop"] else "asyncio",
    }


def build(tmp: Path) -> Path:
    from processkg.build.pipeline import BuildOptions, build_store
    from processkg.graph.handle import StoreLocation

    store = tmp / "a2x"
    print(f"building {store} from {A2X} with {CODES} ...", flush=True)
    build_store(BuildOptions(odata=[A2X], codes=[CODES], store=StoreLocation.parse(store)))
    return store


def wait_for(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} ended with exit {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{what} did not answer {url} within 180 s")


def start_kg(store: Path, port: int, record: Path, recording: bool = True) -> subprocess.Popen:
    """``kg serve`` on ``port``, recording every call to ``record`` unless ``recording`` is False (then
    ``record`` only names the folder of its log)."""
    command = [sys.executable, "-c", "from processkg.cli import main; main()", "serve", "--store", str(store)]
    command += ["--port", str(port), "--allow-reset"] + (["--record", str(record)] if recording else [])
    with (record.parent / f"kg-serve-{port}.log").open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    wait_for(f"http://127.0.0.1:{port}{SERVICE}", proc, "kg serve")
    return proc


def start_mock(port: int, mockdata: Path) -> subprocess.Popen:
    command = [str(node()), "mockserver.js", str(port), SERVICE.rstrip("/"), str(EDMX), str(mockdata)]
    with (mockdata.parent / "mock.log").open("wb") as log:
        proc = subprocess.Popen(command, cwd=CLIENTS, stdout=log, stderr=subprocess.STDOUT)
    wait_for(f"http://127.0.0.1:{port}{SERVICE}", proc, "the mock server")
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


# ------------------------------------------------------------------ 1. the Cloud SDK


def cloud_sdk(base: str, record: Path) -> dict[str, Any]:
    """The steps of ``cloud-sdk.js`` against the server at ``base``, and the calls it recorded."""
    if not (CLIENTS / "generated" / "API_SALES_ORDER_SRV" / "index.js").exists():
        raise SystemExit("no generated client: run `npm run generate` in benchmarks/sap-clients (see its README.md)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "steps.json"
        done = subprocess.run(
            [str(node()), "cloud-sdk.js", base, str(out)], cwd=CLIENTS, capture_output=True, text=True
        )
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"cloud-sdk.js ended with exit {done.returncode}: {done.stderr.strip()[-2000:]}")
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    calls = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]
    result["calls"] = [{k: c[k] for k in ("method", "url", "status", "error") if k in c} for c in calls]
    return result


def catalogs(base: str) -> dict[str, Any]:
    """The services ``catalog.js`` listed through each catalog, and whether they are the V2 and the V4
    services of ``GET /``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "catalog.json"
        done = subprocess.run([str(node()), "catalog.js", base, str(out)], cwd=CLIENTS, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"catalog.js ended with exit {done.returncode}: {done.stderr.strip()[-2000:]}")
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    listed = httpx.get(base + "/").json()["services"]
    for name, prefix in (("v2", "2"), ("v4", "4")):
        expected = sorted(urlsplit(s["url"]).path for s in listed if s["version"].startswith(prefix))
        found = sorted(s["path"] for s in result[name].get("services", []))
        result[name]["matches_root_page"] = found == expected
    return result


# ------------------------------------------------------------------ 2. side by side with the mock server


def export_records(kg: httpx.Client) -> dict[str, list[dict[str, object]]]:
    """Every record of every entity set of the service, as ``kg serve`` answers a read (V2 JSON),
    without ``__metadata`` and navigation links: the mock server's JSON mock data."""
    sets = kg.get(SERVICE).json()["d"]["EntitySets"]
    out = {}
    for name in sets:
        rows = kg.get(f"{SERVICE}{name}").json()["d"]["results"]
        out[name] = [{k: v for k, v in row.items() if not isinstance(v, dict)} for row in rows]
    return out


def csrf_token(client: httpx.Client) -> str:
    return client.get(SERVICE, headers={"x-csrf-token": "Fetch"}).headers.get("x-csrf-token", "")


def send(client: httpx.Client, token: str, method: str, path: str, body: object) -> httpx.Response:
    """One write as a client sends it: with the CSRF token, and for a change the entity's ETag as read."""
    headers = {"x-csrf-token": token, "accept": "application/json"}
    if method in ("PATCH", "PUT", "MERGE", "DELETE"):
        read = client.get(SERVICE + path)
        headers["If-Match"] = read.headers.get("etag") or "*"
    if isinstance(body, str):
        return client.request(
            method, SERVICE + path, content=body, headers={**headers, "content-type": "application/json"}
        )
    return client.request(method, SERVICE + path, json=body, headers=headers)


def error_of(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return response.text[:200]
    details = (error.get("innererror") or {}).get("errordetails") or []
    codes = sorted({d["code"] for d in details if isinstance(d, dict) and "code" in d})
    message = error.get("message")
    text = message.get("value") if isinstance(message, dict) else message
    return f"{error.get('code')}{' [' + ', '.join(codes) + ']' if codes else ''}: {str(text)[:200]}"


def invalid_writes(servers: dict[str, httpx.Client]) -> list[dict[str, Any]]:
    tokens = {name: csrf_token(client) for name, client in servers.items()}
    rows = []
    for kind, method, path, body in INVALID_WRITES:
        row: dict[str, Any] = {"kind": kind, "method": method, "path": path}
        for name, client in servers.items():
            try:
                response = send(client, tokens[name], method, path, body)
            except httpx.TransportError as exc:
                row[name] = {"status": None, "rejected": False, "error": f"no answer: {exc}"}
                continue
            rejected = 400 <= response.status_code < 500
            row[name] = {"status": response.status_code, "rejected": rejected}
            if rejected or response.status_code >= 500:
                row[name]["error"] = error_of(response)
        rows.append(row)
        print(f"{kind}: " + ", ".join(f"{n} {row[n]['status']}" for n in servers), flush=True)
    return rows


Call = Callable[[httpx.Client, str], httpx.Response]
KINDS: dict[str, tuple[Call, int]] = {
    "get_by_key": (lambda c, _t: c.get(SERVICE + BY_KEY), 200),
    "filtered_get": (lambda c, _t: c.get(SERVICE + FILTERED), 200),
    "deep_insert": (lambda c, t: c.post(SERVICE + "A_SalesOrder", json=DEEP_ORDER, headers={"x-csrf-token": t}), 201),
}


def latency(
    servers: dict[str, httpx.Client], pids: dict[str, int], rounds: int, warmup: int = 20
) -> dict[str, dict[str, float]]:
    """Median milliseconds of each kind on each server, interleaved one request at a time, and the
    server process's CPU milliseconds per request of that kind (the kernel's tick accounting, read
    around each request outside the timed part: summed over the rounds it estimates the CPU a
    request costs, which other jobs on the machine change much less than the latency). The ratio is
    also given over the rounds in which each server went first: a request right after the other
    server's (the mock's filtered GET is 10 ms of Node) runs on caches the other process filled.

    The process CPU counts every thread: Node's garbage collector and compiler threads, which run beside
    and after an answer, are in the mock's. The CPU of each server's main thread alone (the thread that
    reads a request and writes its answer: the event loop of both) is given too, in nanoseconds from the
    scheduler (``/proc/PID/task/PID/schedstat``, where the kernel has it), and the client's own thread's."""
    import psutil

    tokens = {name: csrf_token(client) for name, client in servers.items()}
    procs = {name: psutil.Process(pid) for name, pid in pids.items()}
    names = list(servers)
    ms: dict[tuple[str, str], list[float]] = {(k, n): [] for k in KINDS for n in names}
    first: dict[tuple[str, str, str], list[float]] = {(k, n, f): [] for k in KINDS for n in names for f in names}
    cpu: dict[tuple[str, str], float] = {(k, n): 0.0 for k in KINDS for n in names}
    main: dict[tuple[str, str], float] = {(k, n): 0.0 for k in KINDS for n in names}
    client: dict[tuple[str, str], float] = {(k, n): 0.0 for k in KINDS for n in names}
    for i in range(warmup + rounds):
        for kind, (call, expected) in KINDS.items():
            for name in names if i % 2 == 0 else names[::-1]:
                before, main_before = sum(procs[name].cpu_times()[:2]), main_thread_ns(pids[name])
                own_before = time.thread_time_ns()
                start = time.perf_counter()
                response = call(servers[name], tokens[name])
                elapsed = (time.perf_counter() - start) * 1000
                own = time.thread_time_ns() - own_before
                used, main_used = sum(procs[name].cpu_times()[:2]) - before, main_thread_ns(pids[name]) - main_before
                if response.status_code != expected:
                    raise SystemExit(f"{kind} on {name}: {response.status_code} {response.text[:300]}")
                if i >= warmup:
                    ms[(kind, name)].append(elapsed)
                    first[(kind, name, names[i % 2])].append(elapsed)
                    cpu[(kind, name)] += used * 1000
                    main[(kind, name)] += main_used / 1e6
                    client[(kind, name)] += own / 1e6
    out: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        row = {f"{name}_p50_ms": round(statistics.median(ms[(kind, name)]), 2) for name in names}
        row["ratio_kg_to_mock"] = round(row["kg_serve_p50_ms"] / row["mock_p50_ms"], 2)
        row.update({f"{name}_cpu_ms": round(cpu[(kind, name)] / rounds, 2) for name in names})
        row["cpu_ratio_kg_to_mock"] = round(row["kg_serve_cpu_ms"] / max(row["mock_cpu_ms"], 0.01), 2)
        if all(main_thread_ns(pids[name]) for name in names):  # the kernel keeps schedstat
            row.update({f"{name}_main_thread_cpu_ms": round(main[(kind, name)] / rounds, 3) for name in names})
            row["main_thread_cpu_ratio_kg_to_mock"] = round(
                row["kg_serve_main_thread_cpu_ms"] / max(row["mock_main_thread_cpu_ms"], 0.001), 2
            )
        row.update({f"client_cpu_ms_with_{name}": round(client[(kind, name)] / rounds, 3) for name in names})
        for f in names:  # the rounds in which server f went first: the order is alternated, its effect shown
            by_first = {n: statistics.median(first[(kind, n, f)]) for n in names}
            row[f"ratio_kg_to_mock_{f}_first"] = round(by_first["kg_serve"] / by_first["mock"], 2)
        out[kind] = row
        print(f"{kind}: {row}", flush=True)
    return out


def main_thread_ns(pid: int) -> int:
    """The CPU nanoseconds the main thread of ``pid`` has run (0 where the kernel keeps no schedstat)."""
    try:
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def ended_by(proc: subprocess.Popen, client: httpx.Client) -> int | None:
    """The exit status of ``proc`` if it no longer answers (None while it does)."""
    try:
        client.get(SERVICE)
        return None
    except httpx.TransportError:
        return proc.wait(timeout=30)


def side_by_side(kg_base: str, kg_pid: int, rounds: int, tmp: Path, store: Path) -> dict[str, Any]:
    """The invalid writes, then the latency twice: with ``kg serve`` recording every call (the process at
    ``kg_base``, as the earlier runs measured it), and with a second ``kg serve`` started as a user starts
    it, without ``--record`` (the mock writes no line per request either), against a freshly started mock
    server each time (its records as at the start)."""
    with httpx.Client(base_url=kg_base, timeout=60) as kg:
        kg.post("/$reset", headers={"x-csrf-token": csrf_token(kg)})
        records = export_records(kg)
        mockdata = tmp / "mockdata"
        mockdata.mkdir()
        for name, set_records in records.items():
            (mockdata / f"{name}.json").write_text(json.dumps(set_records, indent=1), encoding="utf-8")
        port = free_port()
        mock_proc = start_mock(port, mockdata)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as mock:
                servers = {"kg_serve": kg, "mock": mock}
                rows = invalid_writes(servers)
                ended = ended_by(mock_proc, mock)
                if ended is not None:  # the last write ended the mock server's process: start it again
                    rows[-1]["mock"]["process_exit"] = ended
                mock_proc = restart_mock(mock_proc, port, mockdata)
                kg.post("/$reset", headers={"x-csrf-token": csrf_token(kg)})
                load_before = os.getloadavg()
                timing = latency(servers, {"kg_serve": kg_pid, "mock": mock_proc.pid}, rounds)
                load_after = os.getloadavg()
            mock_proc = restart_mock(mock_proc, port, mockdata)
            plain_port = free_port()
            plain = start_kg(store, plain_port, tmp / "plain", recording=False)
            try:
                with (
                    httpx.Client(base_url=f"http://127.0.0.1:{plain_port}", timeout=60) as kg_plain,
                    httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as mock,
                ):
                    plain_load_before = os.getloadavg()
                    plain_timing = latency(
                        {"kg_serve": kg_plain, "mock": mock}, {"kg_serve": plain.pid, "mock": mock_proc.pid}, rounds
                    )
                    plain_load_after = os.getloadavg()
            finally:
                stop(plain)
        finally:
            stop(mock_proc)
    version = json.loads((CLIENTS / "node_modules/@sap-ux/fe-mockserver-core/package.json").read_text())["version"]
    return {
        "mock": f"@sap-ux/fe-mockserver-core {version}",
        "records": {name: len(r) for name, r in records.items()},
        "invalid_writes": rows,
        "rejected": {name: sum(1 for r in rows if r[name]["rejected"]) for name in ("kg_serve", "mock")},
        "invalid_write_count": len(rows),
        "latency": timing,
        "latency_without_recording": plain_timing,
        "rounds": rounds,
        "requests": {"get_by_key": BY_KEY, "filtered_get": FILTERED, "deep_insert": "POST A_SalesOrder with 2 items"},
        "load_average_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "load_average_1min_without_recording": [round(plain_load_before[0], 2), round(plain_load_after[0], 2)],
    }


def restart_mock(proc: subprocess.Popen, port: int, mockdata: Path) -> subprocess.Popen:
    """A fresh mock server on ``port`` with the records of ``mockdata`` (the writes sent so far dropped)."""
    if proc.poll() is None:
        stop(proc)
    return start_mock(port, mockdata)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="an A2X store built with data/sap/codes (else one is built)")
    ap.add_argument("--rounds", type=int, default=300, help="measured rounds of the latency comparison")
    ap.add_argument("--only", choices=("sdk", "mock", "catalog"), help="run one of the three parts")
    ap.add_argument("--out", type=Path, default=RESULTS / "sap_mockserver.json", help="the side-by-side's JSON")
    ap.add_argument(
        "--source",
        help="what kg serve runs when processkg is imported from outside this repository's src "
        "(an export of an older commit on PYTHONPATH, say); recorded instead of the commit",
    )
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    node()
    import processkg

    ours = Path(processkg.__file__).resolve().is_relative_to(ROOT / "src")
    if not ours and not args.source:
        raise SystemExit(f"processkg comes from {processkg.__file__}: say what that is with --source")
    common = {
        "commit": git_tree() if ours else args.source,
        "measured": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        **uvicorn_parts(),
    }
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        store = args.store or build(tmp)
        record = tmp / "calls.jsonl"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        kg_proc = start_kg(store, port, record)
        try:
            if args.only in (None, "sdk"):
                result = {**common, **cloud_sdk(base, record)}
                failed = [s["step"] for s in result["steps"] if not s["ok"]]
                print(
                    f"Cloud SDK: {len(result['steps']) - len(failed)} of {len(result['steps'])} steps ok; failed: {failed}"
                )
                write(RESULTS / "sap_clients.json", result)
            if args.only in (None, "catalog"):
                listed = catalogs(base)
                print(
                    "catalogs: "
                    + "; ".join(f"{v}: {len(r.get('services', []))} services, ok={r['ok']}" for v, r in listed.items())
                )
                write(RESULTS / "sap_catalog.json", {**common, **listed})
            if args.only in (None, "mock"):
                write(args.out, {**common, **side_by_side(base, kg_proc.pid, args.rounds, tmp, store)})
        finally:
            stop(kg_proc)
    return 0


def write(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
