"""kg serve under concurrent clients: no 5xx, and every answered call is in the recording exactly once.

The load driver is benchmarks/bench_load.py's (there: 50 clients for 30 s); here 20 clients x 12 requests.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_load.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_load", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_twenty_clients_lose_no_recorded_call(demo_store: Path, tmp_path: Path) -> None:
    bench = _bench()
    recording = tmp_path / "recording.jsonl"
    with LocalServer(StoreHandle.open(demo_store), record=recording, csrf=False) as server:
        tally = bench.run_load(server.url.rstrip("/"), clients=20, per_client=12)
    counts = bench.check(tally, recording)
    assert counts == {
        "answered_non_5xx_calls": 20 * 12 + 20 * 2,  # each client sends two $batch of two parts
        "recorded_calls": 20 * 12 + 20 * 2,
        "lost": 0,
        "duplicated": 0,
        "status_5xx": 0,
        "transport_errors": 0,
    }
    assert set(tally.statuses) == {200, 201, 400}
