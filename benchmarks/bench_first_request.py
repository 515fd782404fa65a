"""The first routed retrieval request of a fresh process and the warm p50 (issue 24: < 10 s and < 50 ms
at 100x A2X), at two revisions side by side, in one run.

Usage: ``python benchmarks/bench_first_request.py --store 100x=DIR [--store 10x=DIR] --before REV
[--queries 20] [--out FILE]``

For each store, the revision ``--before`` (its ``src``, taken with ``git archive`` into a temporary
folder) and then the working tree each start a new process, one after the other: open the store
and its index, load the embedding model and answer the first dev query
(``retrieve-dev-queries.jsonl``, ``hybrid``, k = 5, one query per ``retrieve_many`` as ``kg
serve``'s resident retriever answers it): that is the first request, split into its three parts.
Then both processes stay resident and answer ``--queries`` more dev queries in turn, the same query
in each before the next (which one goes first alternates), so that both meet the same load from
other work on the machine; each times its own queries, and the median is its warm p50 (with the
median of the paired differences). Both revisions read the same store: tables that ``kg index``
keeps (``processkg.retrieve.tables``) are used by a revision that knows them and ignored by one that
does not. Writes ``benchmarks/results/first_request.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUERIES = HERE / "retrieve-dev-queries.jsonl"

CHILD = """
import json, sys, time
from processkg.graph.handle import StoreHandle
from processkg.retrieve.index import load_encoder_model
from processkg.retrieve.retriever import Retriever

store, path = sys.argv[1], sys.argv[2]
texts = [json.loads(line)["query"] for line in open(path, encoding="utf-8") if line.strip()]
t0 = time.perf_counter()
retriever = Retriever(StoreHandle.open(store))
t1 = time.perf_counter()
load_encoder_model(retriever.index.model)
t2 = time.perf_counter()
first = retriever.retrieve_many([texts[0]], 5)[0]
t3 = time.perf_counter()
print(json.dumps({
    "open_seconds": round(t1 - t0, 2),
    "model_seconds": round(t2 - t1, 2),
    "first_query_seconds": round(t3 - t2, 2),
    "first_request_seconds": round(t3 - t0, 2),
    "first_results": [[r.service, r.entity_set] for r in first],
}), flush=True)
for line in sys.stdin:  # the number of a warm query; its wall time in seconds back
    i = int(line)
    start = time.perf_counter()
    retriever.retrieve_many([texts[i % len(texts)]], 5)
    print(time.perf_counter() - start, flush=True)
"""


def source_of(revision: str, folder: Path) -> Path:
    """The ``src`` folder of ``revision``, unpacked into ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"], capture_output=True, check=True)
    tar = folder / "src.tar"
    tar.write_bytes(archive.stdout)
    with tarfile.open(tar) as files:
        files.extractall(folder, filter="data")
    return folder / "src"


class Child:
    """One revision's resident retriever in a process of its own: its first request, then warm queries."""

    def __init__(self, src: Path, store: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(src), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(store), str(QUERIES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.first = dict(json.loads(self.answer()), load_average=_load())
        self.warm: list[float] = []

    def answer(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the retriever process ended with {self.process.wait()}")
        return line

    def query(self, i: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{i}\n")
        self.process.stdin.flush()
        self.warm.append(float(self.answer()))

    def close(self) -> dict[str, object]:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()
        return dict(
            self.first,
            warm_p50_ms=round(statistics.median(self.warm) * 1e3, 1),
            warm_queries=len(self.warm),
            warm_load_average=_load(),
        )


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def side_by_side(old: Path, store: Path, queries: int) -> dict[str, object]:
    """The first request of each revision, then ``queries`` warm queries answered by both in turn."""
    before = Child(old, store)
    after = Child(ROOT / "src", store)
    for i in range(1, queries + 1):
        for child in (before, after) if i % 2 else (after, before):
            child.query(i)
    paired = [a - b for a, b in zip(after.warm, before.warm)]
    return {
        "before": before.close(),
        "after": after.close(),
        "warm_p50_paired_difference_ms": round(statistics.median(paired) * 1e3, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", required=True, help="NAME=DIR, an indexed store (repeatable)")
    parser.add_argument("--before", required=True, help="the git revision to compare with (e.g. a commit)")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "first_request.json")
    args = parser.parse_args()
    before = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.before], capture_output=True, text=True, check=True
    ).stdout.strip()
    after = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True, text=True, check=True
    ).stdout.strip()
    after += "-dirty" if changed else ""  # the working tree is what runs, not HEAD
    result: dict[str, object] = {"cpus": os.cpu_count(), "measured": time.strftime("%Y-%m-%d"), "before": before}
    result["after"] = after
    sizes: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        old = source_of(args.before, Path(tmp))
        for spec in args.store:
            name, _, store = spec.partition("=")
            sizes[name] = side_by_side(old, Path(store), args.queries)
            print(name, json.dumps(sizes[name]), flush=True)
    result["sizes"] = sizes
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
