"""Do two revisions rank alike? Every retrieval method, in batch and one query at a time, on the SAP
benchmark and blind queries, at ``--before`` and at this checkout.

Usage: ``python benchmarks/rankings_before_after.py --before REV --store sap=DIR [--store a2x=DIR] [--out FILE]``

Each revision runs in a process of its own (``--before``'s ``src`` taken with ``git archive``, as
``bench_first_request.py`` does): ``retrieve_many`` over all queries for every method the store's
index serves (k = 10), and ``dense`` and ``hybrid`` one query at a time as ``kg serve`` asks them.
Compares (service, entity set, source, via, alternatives, score to 4 places) per query, names each
query whose results differ and where, and gives the largest difference between the two revisions'
query vectors. Writes ``benchmarks/results/retrieve_rankings_before_after.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_first_request import source_of  # noqa: E402

QUERY_FILES = (ROOT / "data" / "sap" / "benchmark" / "queries.jsonl", ROOT / "data" / "sap" / "blind" / "queries.jsonl")

CHILD = """
import json, sys
import numpy as np
from processkg.graph.handle import StoreHandle
from processkg.retrieve.retriever import METHODS, RetrievalSettings, Retriever

store, queries, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
r = Retriever(StoreHandle.open(store))

def rows(results):
    return [[x.service, x.entity_set, x.source, list(x.via), [list(a) for a in x.alternatives], round(x.score, 4)]
            for x in results]

answers = {}
for method in METHODS:
    if not METHODS[method].chunks or r.index.items["chunk"]:
        answers["batch " + method] = [rows(x) for x in r.retrieve_many(queries, 10, RetrievalSettings(method))]
for method in ("dense", "hybrid"):
    answers["single " + method] = [rows(r.retrieve_many([q], 10, RetrievalSettings(method))[0]) for q in queries]
np.save(out + ".npy", r.embed(queries))
with open(out, "w", encoding="utf-8") as f:
    json.dump(answers, f)
"""


def run(src: Path, store: Path, queries: list[str], out: Path) -> tuple[dict, np.ndarray]:
    env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", CHILD, str(store), json.dumps(queries), str(out)], env=env, check=True)
    return json.loads(out.read_text(encoding="utf-8")), np.load(f"{out}.npy")


def compare(before: dict, after: dict, ids: list[str]) -> dict:
    out = {}
    for key in before:
        changed = {}
        for qid, old, new in zip(ids, before[key], after[key], strict=True):
            if old != new:
                changed[qid] = [
                    {"rank": i + 1, "before": o, "after": n} for i, (o, n) in enumerate(zip(old, new)) if o != n
                ]
        out[key] = {"queries": len(ids), "differing": len(changed), "changes": changed}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument("--store", action="append", required=True, metavar="NAME=DIR", help="an indexed store")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "retrieve_rankings_before_after.json")
    args = parser.parse_args()
    items = [json.loads(line) for path in QUERY_FILES for line in path.read_text(encoding="utf-8").splitlines() if line]
    queries, ids = [q["query"] for q in items], [q["id"] for q in items]
    revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.before], capture_output=True, text=True, check=True
    ).stdout.strip()
    result: dict[str, object] = {"measured": time.strftime("%Y-%m-%d"), "before": revision, "k": 10}
    with tempfile.TemporaryDirectory() as tmp:
        old_src = source_of(args.before, Path(tmp))
        for item in args.store:
            name, _, folder = item.partition("=")
            before, old_vectors = run(old_src, Path(folder), queries, Path(tmp) / f"{name}-before.json")
            after, new_vectors = run(ROOT / "src", Path(folder), queries, Path(tmp) / f"{name}-after.json")
            result[name] = {
                "query_vectors_max_abs_difference": float(np.abs(old_vectors - new_vectors).max()),
                "query_vectors_identical_rows": int((old_vectors == new_vectors).all(axis=1).sum()),
                "results": compare(before, after, ids),
            }
            summary = {key: value["differing"] for key, value in result[name]["results"].items()}  # type: ignore[index]
            print(name, summary, flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
