"""CPU time of ``kg serve``'s requests in-process: the side-by-side benchmark's requests through the ASGI app.

Usage: ``python benchmarks/bench_serve_asgi.py --store DIR [--rounds N]`` (an A2X store built with
``--codes data/sap/codes``, as ``bench_sap_clients.py`` takes). Calls the ASGI application of
``kg serve`` directly (no socket, no uvicorn) with the GET by key and the validated deep insert of
``bench_sap_clients.py``, and ``Validator.validate_call`` with that deep insert alone, and prints the
process CPU milliseconds per call of each after a warm-up. What the HTTP server adds is left out, so
two versions compare by their own work even on a loaded machine (run them one after the other,
``PYTHONPATH`` naming each one's ``src``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_sap_clients as sap

from processkg.graph.handle import StoreHandle
from processkg.serve.app import create_app, open_server


def scope(method: str, path: str, token: str, body: bytes) -> dict:
    headers = [(b"host", b"127.0.0.1:8080"), (b"accept", b"application/json"), (b"x-csrf-token", token.encode())]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }


async def call(app, method: str, path: str, token: str, body: bytes = b"") -> int:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope(method, path, token, body), receive, send)
    return sent[0]["status"]


async def run(store: Path, rounds: int, warmup: int) -> dict[str, float]:
    server = open_server(StoreHandle.open(store), csrf=True, allow_reset=True)
    app, token = create_app(server), server.csrf_token
    body = json.dumps(sap.DEEP_ORDER).encode()
    kinds = {
        "get_by_key": ("GET", sap.SERVICE + sap.BY_KEY, b"", 200),
        "deep_insert": ("POST", sap.SERVICE + "A_SalesOrder", body, 201),
    }
    out = {}
    for kind, (method, path, data, expected) in kinds.items():
        for _ in range(warmup):
            assert await call(app, method, path, token, data) == expected
        start = time.process_time()
        for _ in range(rounds):
            await call(app, method, path, token, data)
        out[f"{kind}_cpu_ms"] = round((time.process_time() - start) / rounds * 1000, 3)
    validator, payload = server.validator, {"method": "POST", "url": sap.SERVICE + "A_SalesOrder"}
    payload["payload"] = sap.DEEP_ORDER
    for _ in range(warmup):
        assert validator.validate_call(payload).valid
    start = time.process_time()
    for _ in range(rounds):
        validator.validate_call(payload)
    out["validate_deep_insert_cpu_ms"] = round((time.process_time() - start) / rounds * 1000, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True, help="an A2X store built with data/sap/codes")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=50)
    args = ap.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.store, args.rounds, args.warmup)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
